/**
 * The JWT bearer authorization grant (RFC 7523 §2.1): the client trades a JWT someone else issued
 * (a workload identity token, or an enterprise identity provider's ID-JAG) for an access token.
 * There is no refresh token to keep: when the access token runs out the client asks for a new
 * assertion and presents that.
 */
import * as oauth from 'oauth4webapi';
import { ClientError } from './errors.js';
import type { TokenSet } from './grants.js';
import { tokenError, tokenRequest, type DpopTokenBinding } from './oauth-requests.js';

export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

/** What an assertion is for, so the callback can get one made for exactly this. */
export interface AssertionContext {
  /** The authorization server's issuer: the audience an assertion for it names. */
  issuer: string;
  tokenEndpoint: string;
  /** The context server's resource identifier (its protected resource metadata's, else its canonical URI). */
  resource: string;
  /** The scope about to be requested, if any. */
  scope?: string;
}

/** Gives the assertion to present: asked once per token request, never cached by the client. */
export type AssertionCallback = (context: AssertionContext) => string | Promise<string>;

/** The callback's assertion, its failures as ClientErrors that say where they came from. */
export async function askForAssertion(callback: AssertionCallback, context: AssertionContext): Promise<string> {
  let assertion: unknown;
  try {
    assertion = await callback(context);
  } catch (error) {
    if (error instanceof ClientError) throw error;
    throw new ClientError('assertion_unavailable', `the assertion for ${context.issuer} could not be had: ${(error as Error).message}`, { cause: error });
  }
  if (typeof assertion !== 'string' || assertion.trim() === '') {
    throw new ClientError('assertion_unavailable', `the assertion callback gave no assertion for ${context.issuer}`);
  }
  return assertion.trim();
}

/**
 * One jwt-bearer token request, authenticated by `auth` (a secret, a private key, or none: then
 * only client_id is sent). An error answer is the caller's to surface: retrying the same
 * assertion, or falling back to another grant, would only hide why the server refused.
 */
export async function jwtBearerGrant(
  as: oauth.AuthorizationServer,
  client: oauth.Client,
  auth: oauth.ClientAuth,
  parameters: { assertion: string; resource: string; scope?: string },
  fetchImpl: typeof fetch,
  dpop?: DpopTokenBinding,
): Promise<TokenSet> {
  const body: Record<string, string> = {
    assertion: parameters.assertion,
    resource: parameters.resource,
    ...(parameters.scope ? { scope: parameters.scope } : {}),
  };
  try {
    const response = await tokenRequest(fetchImpl, as.token_endpoint ?? as.issuer, dpop, undefined, (options) =>
      oauth.genericTokenEndpointRequest(as, client, auth, JWT_BEARER_GRANT, body, options),
    );
    return await oauth.processGenericTokenEndpointResponse(as, client, response);
  } catch (error) {
    throw tokenError(error, 'the jwt-bearer grant failed');
  }
}
