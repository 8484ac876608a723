/**
 * How we call oauth4webapi: our stored client as its client and authentication, the options every
 * request to the authorization server shares, and its failures as ClientErrors.
 */
import * as oauth from 'oauth4webapi';
import type { DpopKeyPair } from '../core/dpop.js';
import { isTokenNonceChallenge, type DpopProofs } from './dpop.js';
import { ClientError } from './errors.js';
import { isInsecureLoopback } from './http.js';
import type { StoredClient } from './types.js';
import { failureReason } from './network-errors.js';

/** application/x-www-form-urlencoded, as RFC 6749 §2.3.1 asks of Basic credentials. */
function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}

/**
 * client_secret_basic with the encoding RFC 6749 §2.3.1 gives (oauth4webapi also encodes
 * characters such as "-", which servers that do not decode then refuse).
 */
export function clientSecretBasic(clientId: string, secret: string): oauth.ClientAuth {
  return (_as, _client, _body, headers) => {
    headers.set('authorization', `Basic ${Buffer.from(`${formEncode(clientId)}:${formEncode(secret)}`).toString('base64')}`);
  };
}

/** oauth4webapi's view of our stored client, and how it authenticates. */
export function asOAuthClient(client: StoredClient): { client: oauth.Client; auth: oauth.ClientAuth } {
  const auth =
    client.tokenEndpointAuthMethod === 'client_secret_basic' && client.clientSecret
      ? clientSecretBasic(client.clientId, client.clientSecret)
      : client.tokenEndpointAuthMethod === 'client_secret_post' && client.clientSecret
        ? oauth.ClientSecretPost(client.clientSecret)
        : oauth.None();
  return { client: { client_id: client.clientId, token_endpoint_auth_method: client.tokenEndpointAuthMethod }, auth };
}

/**
 * The options of one request to `endpoint`: our fetch (tests and callers inject theirs), plain
 * http only to this machine (oauth4webapi refuses it unless told), and any extra body parameters.
 */
export function requestOptions(fetchImpl: typeof fetch, endpoint: string, additionalParameters?: Record<string, string>) {
  return {
    [oauth.customFetch]: fetchImpl,
    [oauth.allowInsecureRequests]: isInsecureLoopback(endpoint),
    ...(additionalParameters ? { additionalParameters } : {}),
  };
}

/** The key a token request proves (RFC 9449 §5), and where proofs and nonces come from. */
export interface DpopTokenBinding {
  key: DpopKeyPair;
  proofs: DpopProofs;
}

export type RequestOptions = ReturnType<typeof requestOptions>;

/**
 * Every token request goes through here: `send` makes it with oauth4webapi and the options given.
 * With DPoP each attempt carries a fresh proof for the token endpoint, every `DPoP-Nonce` answered
 * is kept, and a `use_dpop_nonce` refusal (RFC 9449 §8) is answered by sending the request once
 * more — made anew by `send`, so a client assertion in it is fresh too — with the nonce. Once:
 * a server that refuses its own nonce gets its refusal back, not a loop.
 */
export async function tokenRequest(
  fetchImpl: typeof fetch,
  endpoint: string,
  dpop: DpopTokenBinding | undefined,
  additionalParameters: Record<string, string> | undefined,
  send: (options: RequestOptions) => Promise<Response>,
): Promise<Response> {
  if (!dpop) return withBodyError(await send(requestOptions(fetchImpl, endpoint, additionalParameters)));
  const proving: typeof fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const headers = new Headers(init?.headers);
    headers.set('dpop', dpop.proofs.proof(dpop.key, { method: init?.method ?? 'POST', url }));
    const response = await fetchImpl(input, { ...init, headers });
    dpop.proofs.remember(url, response);
    return response;
  };
  const options = requestOptions(proving, endpoint, additionalParameters);
  const response = await send(options);
  if (!(await isTokenNonceChallenge(response))) return withBodyError(response);
  await response.body?.cancel();
  return withBodyError(await send(options));
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * An error answer that carries a WWW-Authenticate challenge as well as an OAuth error body (an
 * invalid_client 401 does, RFC 6749 §5.2) is reported by oauth4webapi as the challenge alone
 * ("server responded with a challenge in the WWW-Authenticate HTTP Header"), losing what the
 * server said. Such an answer is thrown here as oauth4webapi throws an error body, so that every
 * caller reads the server's `error` and `error_description`. Any other answer is returned as it is.
 */
export async function withBodyError(response: Response): Promise<Response> {
  if (response.ok || !response.headers.has('www-authenticate')) return response;
  const body = (await response
    .clone()
    .json()
    .catch(() => undefined)) as unknown;
  if (!isRecord(body) || typeof body.error !== 'string') return response;
  await response.body?.cancel();
  const error = { error: body.error, ...(typeof body.error_description === 'string' ? { error_description: body.error_description } : {}) };
  throw new oauth.ResponseBodyError('server responded with an error in the response body', { cause: error, response });
}

/** What the server said in an error answer: its OAuth error and description, else its challenge's, else its status. */
export function serverSaid(error: unknown): string | undefined {
  if (error instanceof oauth.ResponseBodyError) return `${error.error}${error.error_description ? ` (${error.error_description})` : ''}`;
  if (error instanceof oauth.WWWAuthenticateChallengeError) {
    const challenge = error.cause.find((c) => c.parameters.error) ?? error.cause[0];
    const code = challenge?.parameters.error;
    const description = challenge?.parameters.error_description;
    return code
      ? `${code}${description ? ` (${description})` : ''}`
      : `HTTP ${error.status} with a ${challenge?.scheme ?? 'WWW-Authenticate'} challenge and no OAuth error`;
  }
  if (error instanceof oauth.OperationProcessingError && error.cause instanceof Response) return `HTTP ${error.cause.status}, not an OAuth answer`;
  return undefined;
}

/** One wording for every token endpoint failure, keeping the OAuth error code visible. */
export function tokenError(error: unknown, what: string): ClientError {
  if (error instanceof ClientError) return error;
  return new ClientError('token_request_failed', `${what}: ${serverSaid(error) ?? failureReason(error)}`, { cause: error });
}

export function isInvalidGrant(error: unknown): boolean {
  return error instanceof ClientError && error.cause instanceof oauth.ResponseBodyError && error.cause.error === 'invalid_grant';
}

/**
 * The authorization server no longer knows or accepts our client: an invalid_client answer, or a
 * 401 from the token endpoint (RFC 6749 §5.2), which oauth4webapi reports as a challenge.
 */
export function isInvalidClient(error: unknown): boolean {
  if (!(error instanceof ClientError)) return false;
  const cause = error.cause;
  if (cause instanceof oauth.ResponseBodyError) return cause.error === 'invalid_client' || cause.error === 'unauthorized_client';
  if (cause instanceof oauth.WWWAuthenticateChallengeError) return cause.status === 401;
  return false;
}
