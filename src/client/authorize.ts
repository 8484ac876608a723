import * as oauth from 'oauth4webapi';
import { ClientError } from './errors.js';
import type { Discovery } from './discovery.js';
import { asOAuthClient, tokenError, tokenRequest, type DpopTokenBinding } from './oauth-requests.js';
import type { StoredClient } from './types.js';

export interface AuthorizationRequestPlan {
  url: URL;
  state: string;
  codeVerifier: string;
  redirectUri: string;
}

/**
 * The authorization request (OAuth 2.1 §4.1.1): PKCE S256 always, a fresh `state`, and in
 * Revision B the `resource` — sent whether or not the server advertises support (spec, "Client rules").
 */
export async function planAuthorization(
  discovery: Discovery,
  client: StoredClient,
  redirectUri: string,
  scope: string | undefined,
): Promise<AuthorizationRequestPlan> {
  const endpoint = discovery.authorizationServer.authorization_endpoint;
  if (!endpoint) throw new ClientError('discovery_failed', `${discovery.issuer} has no authorization endpoint`);
  const codeVerifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(endpoint);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', client.clientId);
  url.searchParams.set('redirect_uri', redirectUri);
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier));
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('state', state);
  if (scope) url.searchParams.set('scope', scope);
  if (discovery.resource) url.searchParams.set('resource', discovery.resource);
  return { url, state, codeVerifier, redirectUri };
}

const stateMismatch = (cause?: unknown): ClientError =>
  new ClientError('state_mismatch', 'the authorization response has a missing or wrong state; it was discarded', { cause });
const issuerMismatch = (cause: unknown): ClientError =>
  new ClientError('issuer_mismatch', 'the authorization response comes from another issuer; it was discarded', { cause });

/**
 * Tells oauth4webapi's refusals of an authorization response apart by what it says it expected
 * (its `cause`), not by its wording: `expected` is our state for a missing or wrong `state`, the
 * issuer for a foreign `iss`; a missing `iss` has no `expected`; a repeated parameter, no cause.
 */
function callbackError(error: unknown, as: oauth.AuthorizationServer, callback: URLSearchParams, expectedState: string): ClientError {
  if (error instanceof oauth.AuthorizationResponseError) {
    const detail = error.error_description ? ` (${error.error_description})` : '';
    // The usual refusal is the person's own "Deny": say so plainly.
    if (error.error === 'access_denied')
      return new ClientError('authorization_failed', `you denied access in the browser (access_denied${detail})`, { cause: error });
    return new ClientError('authorization_failed', `authorization refused: ${error.error}${detail}`, { cause: error });
  }
  if (error instanceof oauth.OperationProcessingError && error.code === oauth.INVALID_RESPONSE) {
    const cause = error.cause as { expected?: unknown } | undefined;
    if (cause === undefined) {
      // oauth4webapi reads `iss` before `state`, so a repeated `iss` is what it refused first.
      if (callback.getAll('iss').length > 1) return issuerMismatch(error);
      if (callback.getAll('state').length > 1) return stateMismatch(error);
    } else if ('expected' in cause) {
      if (cause.expected === expectedState) return stateMismatch(error);
      if (cause.expected === as.issuer) return issuerMismatch(error);
    } else if (as.authorization_response_iss_parameter_supported && !callback.get('iss')) {
      return issuerMismatch(error);
    }
  }
  return new ClientError('authorization_failed', `the authorization response is invalid: ${(error as Error).message}`, { cause: error });
}

/**
 * Checks the callback through oauth4webapi: `iss` must be the issuer when the server advertises
 * RFC 9207 (or sends one anyway), `state` must be ours, and an `error` is reported. Returns the
 * parameters the code exchange takes.
 */
export function validateCallback(
  as: oauth.AuthorizationServer,
  clientId: string,
  callback: URLSearchParams,
  expectedState: string | undefined,
): URLSearchParams {
  // oauth4webapi reads no expected state as "expect none" and would let a stateless response pass.
  if (expectedState === undefined) throw stateMismatch();
  try {
    return oauth.validateAuthResponse(as, { client_id: clientId }, callback, expectedState);
  } catch (error) {
    throw callbackError(error, as, callback, expectedState);
  }
}

/** Checks the callback (validateCallback) and redeems the code with the verifier and the same `resource` (and a DPoP proof, when binding). */
export async function redeemCallback(
  discovery: Discovery,
  client: StoredClient,
  plan: AuthorizationRequestPlan,
  callback: URLSearchParams,
  fetchImpl: typeof fetch,
  dpop?: DpopTokenBinding,
): Promise<oauth.TokenEndpointResponse> {
  const as = discovery.authorizationServer;
  const params = validateCallback(as, client.clientId, callback, plan.state);
  const { client: oauthClient, auth } = asOAuthClient(client);
  try {
    const response = await tokenRequest(
      fetchImpl,
      as.token_endpoint ?? discovery.issuer,
      dpop,
      discovery.resource ? { resource: discovery.resource } : undefined,
      (options) => oauth.authorizationCodeGrantRequest(as, oauthClient, auth, params, plan.redirectUri, plan.codeVerifier, options),
    );
    return await oauth.processAuthorizationCodeResponse(as, oauthClient, response);
  } catch (error) {
    throw tokenError(error, 'the code exchange failed');
  }
}
