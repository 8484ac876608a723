/**
 * Protocol shapes shared by the authorization server's endpoints and the store that keeps them.
 * They live here, below both, so the store needs nothing from the layers above it.
 */

export type TokenEndpointAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt';
/** RFC 7523 §2.1: a JWT as an authorization grant (an ID-JAG, a workload token). */
export const JWT_BEARER_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** RFC 8628 §3.4: a device's code, redeemed once the person approved it on the verification page. */
export const DEVICE_CODE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';
export type GrantType = 'authorization_code' | 'refresh_token' | 'client_credentials' | typeof JWT_BEARER_GRANT_TYPE | typeof DEVICE_CODE_GRANT_TYPE;

/** A validated authorization request (authorization-server/checks/authorization-request.ts). */
export interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  /** Whether redirect_uri was sent (then the token request must repeat it, OAuth 2.1 §4.1.3). */
  redirectUriProvided: boolean;
  state: string | null;
  scope: string[];
  resource: string;
  codeChallenge: string;
  codeChallengeMethod: 'S256';
  prompt: string[];
  /** RFC 9449 §10: the thumbprint of the DPoP key the code is bound to, when the client named one. */
  dpopJkt?: string;
  /** OpenID Connect Core §3.1.2.1: the client's nonce, echoed in the ID token (only with `openid` granted). */
  nonce?: string;
}
