import * as oauth from 'oauth4webapi';
import { ClientError } from './errors.js';
import type { Discovery } from './discovery.js';
import { asOAuthClient, requestOptions, tokenError } from './oauth-requests.js';
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
export async function planAuthorization(discovery: Discovery, client: StoredClient, redirectUri: string, scope: string | undefined): Promise<AuthorizationRequestPlan> {
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

/**
 * Checks the callback (state must match, `iss` must match when the server advertises RFC 9207,
 * an `error` is reported) and redeems the code with the verifier and the same `resource`.
 */
export async function redeemCallback(
  discovery: Discovery,
  client: StoredClient,
  plan: AuthorizationRequestPlan,
  callback: URLSearchParams,
  fetchImpl: typeof fetch,
): Promise<oauth.TokenEndpointResponse> {
  const as = discovery.authorizationServer;
  const { client: oauthClient, auth } = asOAuthClient(client);
  let params: URLSearchParams;
  try {
    params = oauth.validateAuthResponse(as, oauthClient, callback, plan.state);
  } catch (error) {
    if (error instanceof oauth.AuthorizationResponseError) {
      throw new ClientError('authorization_failed', `authorization refused: ${error.error}${error.error_description ? ` (${error.error_description})` : ''}`, { cause: error });
    }
    const message = (error as Error).message;
    if (/state/i.test(message)) throw new ClientError('state_mismatch', 'the authorization response has a missing or wrong state; it was discarded', { cause: error });
    if (/iss/i.test(message)) throw new ClientError('issuer_mismatch', 'the authorization response comes from another issuer; it was discarded', { cause: error });
    throw new ClientError('authorization_failed', `the authorization response is invalid: ${message}`, { cause: error });
  }
  const options = requestOptions(fetchImpl, as.token_endpoint ?? discovery.issuer, discovery.resource ? { resource: discovery.resource } : undefined);
  try {
    const response = await oauth.authorizationCodeGrantRequest(as, oauthClient, auth, params, plan.redirectUri, plan.codeVerifier, options);
    return await oauth.processAuthorizationCodeResponse(as, oauthClient, response);
  } catch (error) {
    throw tokenError(error, 'the code exchange failed');
  }
}
