/**
 * The upstream side of third-party authorization, one step per function (oauth4webapi does the
 * protocol checks): send the person upstream with PKCE, `state` and `nonce`; take the callback
 * (state, `iss`, code exchange, ID token signature, audience, nonce and expiry); check or renew
 * the upstream tokens when our grant is refreshed; call user-info for a tool.
 *
 * Every failure becomes an OAuthError that can be shown to the person or sent to our client:
 * access_denied (refused upstream, or a response that does not belong to this sign-in),
 * temporarily_unavailable (upstream down or failing), server_error (upstream misconfigured).
 * Nothing here logs or returns an upstream response body or token in an error.
 */
import * as oauth from 'oauth4webapi';
import { OAuthError } from '../../core/errors.js';
import { describe, type ResolvedUpstream, type UpstreamIdentity } from './provider.js';

/** What must be kept between sending the person upstream and the callback (with the interaction). */
export interface PendingUpstream {
  providerId: string;
  state: string;
  /** OpenID providers only. */
  nonce: string | null;
  codeVerifier: string;
}

export interface UpstreamTokens {
  accessToken: string;
  refreshToken: string | null;
  /** Seconds since the epoch; null when the provider did not say (e.g. GitHub OAuth apps). */
  expiresAt: number | null;
  scope: string | null;
}

export interface UpstreamSignIn {
  identity: UpstreamIdentity;
  tokens: UpstreamTokens;
}

export type UpstreamCheck =
  | { status: 'valid' }
  | { status: 'renewed'; tokens: UpstreamTokens }
  /** The upstream no longer honours the session (revoked, expired, user removed): end our grant too. */
  | { status: 'refused'; reason: string };

/** The handle `beginUpstream` put in front of the state, or null. */
export function stateHandle(callback: URL): string | null {
  const state = callback.searchParams.get('state') ?? '';
  const dot = state.indexOf('.');
  return dot > 0 ? state.slice(0, dot) : null;
}

/** Renew this many seconds before the upstream access token expires. */
const EXPIRY_MARGIN = 30;

/**
 * Step 2: the URL to send the person to, and what to keep until the callback. `handle` (our
 * interaction id) leads the `state`, so the callback finds what it kept; the random rest is what
 * makes the state unguessable, and the whole is compared with what was kept.
 */
export async function beginUpstream(up: ResolvedUpstream, redirectUri: string, handle = ''): Promise<{ url: URL; pending: PendingUpstream }> {
  const codeVerifier = oauth.generateRandomCodeVerifier();
  const state = handle ? `${handle}.${oauth.generateRandomState()}` : oauth.generateRandomState();
  const nonce = up.kind === 'oidc' ? oauth.generateRandomNonce() : null;
  const url = new URL(up.as.authorization_endpoint!);
  const params = url.searchParams;
  params.set('response_type', 'code');
  params.set('client_id', up.client.client_id);
  params.set('redirect_uri', redirectUri);
  if (up.scope) params.set('scope', up.scope);
  params.set('state', state);
  if (nonce) params.set('nonce', nonce);
  params.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier));
  params.set('code_challenge_method', 'S256');
  return { url, pending: { providerId: up.id, state, nonce, codeVerifier } };
}

/** Steps 3–4: checks the callback, exchanges the code, and says who signed in. */
export async function finishUpstream(up: ResolvedUpstream, redirectUri: string, callback: URL, pending: PendingUpstream, now: number): Promise<UpstreamSignIn> {
  if (pending.providerId !== up.id) throw new OAuthError('access_denied', 'the sign-in response came from another provider than the one the sign-in started at');
  let params: URLSearchParams;
  try {
    params = oauth.validateAuthResponse(up.as, up.client, callback, pending.state);
  } catch (error) {
    throw fromAuthorizationResponse(up, error);
  }

  return refusalAs(new OAuthError('access_denied', `${up.name} did not accept the sign-in`), () => guarded(up, 'sign-in', async () => {
    const response = await oauth.authorizationCodeGrantRequest(up.as, up.client, up.clientAuth, params, redirectUri, pending.codeVerifier, up.http);
    if (up.kind === 'oidc') {
      const result = await oauth.processAuthorizationCodeResponse(up.as, up.client, response, { expectedNonce: pending.nonce!, requireIdToken: true });
      // The token came straight from the provider over TLS, yet we check its signature too:
      // the identity we create an account for rests on it.
      await oauth.validateApplicationLevelSignature(up.as, response, up.http);
      const claims = oauth.getValidatedIdTokenClaims(result)!;
      const identity = await oidcIdentity(up, claims, result.access_token);
      return { identity, tokens: tokensOf(result, now) };
    }
    const result = await oauth.processAuthorizationCodeResponse(up.as, up.client, response);
    const userinfo = await readUserinfo(up, result.access_token, oauth.skipSubjectCheck);
    let mapped: Omit<UpstreamIdentity, 'issuer'>;
    try {
      mapped = up.profile!(userinfo);
    } catch (error) {
      throw new OAuthError('server_error', `the user information from ${up.name} could not be read: ${describe(error)}`);
    }
    return { identity: { issuer: up.as.issuer, ...mapped }, tokens: tokensOf(result, now) };
  }));
}

/**
 * Before one of our grants is refreshed: is the upstream session behind it still honoured?
 * An access token near expiry is renewed with the refresh token; otherwise user-info is asked
 * (it answers 401 for a revoked token). Throws temporarily_unavailable when the upstream cannot
 * be reached, so our grant is kept and the client may retry.
 */
export async function checkUpstream(
  up: ResolvedUpstream,
  subject: string,
  tokens: UpstreamTokens,
  now: number,
  options: { probe?: boolean } = {},
): Promise<UpstreamCheck> {
  const expiring = tokens.expiresAt !== null && tokens.expiresAt - EXPIRY_MARGIN <= now;
  if (expiring) {
    if (!tokens.refreshToken) return { status: 'refused', reason: `the ${up.name} session expired and cannot be renewed` };
    return renewUpstream(up, subject, tokens.refreshToken, now);
  }
  // Without a probe (a caller about to use the token anyway learns of a refusal from that call).
  if (!up.as.userinfo_endpoint || options.probe === false) return { status: 'valid' };
  return refusedAsCheck(() =>
    guarded(up, 'session check', async () => {
      await readUserinfo(up, tokens.accessToken, up.kind === 'oidc' ? subject : oauth.skipSubjectCheck);
      return { status: 'valid' };
    }),
  );
}

function renewUpstream(up: ResolvedUpstream, subject: string, refreshToken: string, now: number): Promise<UpstreamCheck> {
  return refusedAsCheck(() =>
    guarded(up, 'session renewal', async () => {
      const response = await oauth.refreshTokenGrantRequest(up.as, up.client, up.clientAuth, refreshToken, up.http);
      const result = await oauth.processRefreshTokenResponse(up.as, up.client, response);
      const claims = oauth.getValidatedIdTokenClaims(result);
      if (claims && claims.sub !== subject) return { status: 'refused', reason: `${up.name} renewed the session for another person` };
      // A provider that does not rotate refresh tokens keeps accepting the one we have.
      const tokens = tokensOf(result, now);
      return { status: 'renewed', tokens: { ...tokens, refreshToken: tokens.refreshToken ?? refreshToken } };
    }),
  );
}

/** For a tool acting for the person: the provider's user-info with the upstream access token. */
export function upstreamUserinfo(up: ResolvedUpstream, accessToken: string): Promise<Record<string, unknown>> {
  return refusalAs(new OAuthError('invalid_token', `${up.name} no longer accepts the session`, 401), () =>
    guarded(up, 'user-info', () => readUserinfo(up, accessToken, oauth.skipSubjectCheck)),
  );
}

// ---------------------------------------------------------------------------------------------

async function oidcIdentity(up: ResolvedUpstream, claims: oauth.IDToken, accessToken: string): Promise<UpstreamIdentity> {
  let profile: Record<string, unknown> = claims;
  // Many providers put profile claims in user-info only (oidc-provider does by default).
  if ((claims.email === undefined || claims.name === undefined) && up.as.userinfo_endpoint) {
    profile = { ...(await readUserinfo(up, accessToken, claims.sub)), ...claims };
  }
  const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);
  return {
    issuer: claims.iss,
    subject: claims.sub,
    email: text(profile.email),
    emailVerified: profile.email_verified === true,
    name: text(profile.name),
    username: text(profile.preferred_username),
  };
}

async function readUserinfo(up: ResolvedUpstream, accessToken: string, subject: string | typeof oauth.skipSubjectCheck): Promise<Record<string, unknown>> {
  if (up.kind === 'oidc') {
    const response = await oauth.userInfoRequest(up.as, up.client, accessToken, up.http);
    return { ...(await oauth.processUserInfoResponse(up.as, up.client, subject, response)) };
  }
  // A plain OAuth 2.0 API (GitHub's /user) has no `sub`, so OpenID's user-info rules do not apply.
  const headers = new Headers({ accept: 'application/json' });
  // A GET without a body: the custom fetch (typed for any body) fits.
  const response = await oauth.protectedResourceRequest(accessToken, 'GET', new URL(up.as.userinfo_endpoint!), headers, null, up.http as oauth.ProtectedResourceRequestOptions);
  if (response.status === 401 || response.status === 403) throw new RefusedUpstream(`${up.name} no longer accepts the session`);
  if (response.status >= 500) throw unavailable(up, 'user-info');
  const body: unknown = response.ok ? await response.json().catch(() => null) : null;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new OAuthError('server_error', `the user information from ${up.name} could not be read (HTTP ${response.status})`);
  }
  return body as Record<string, unknown>;
}

function tokensOf(result: oauth.TokenEndpointResponse, now: number): UpstreamTokens {
  return {
    accessToken: result.access_token,
    refreshToken: result.refresh_token ?? null,
    expiresAt: typeof result.expires_in === 'number' ? now + result.expires_in : null,
    scope: result.scope ?? null,
  };
}

/** The upstream answered that the grant or token is no good (invalid_grant, a 401, …). */
class RefusedUpstream extends Error {}

async function refusedAsCheck(fn: () => Promise<UpstreamCheck>): Promise<UpstreamCheck> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof RefusedUpstream) return { status: 'refused', reason: error.message };
    throw error;
  }
}

async function refusalAs<T>(replacement: OAuthError, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw error instanceof RefusedUpstream ? replacement : error;
  }
}

/** Runs a step that talks to the provider, turning what can go wrong into our errors. */
async function guarded<T>(up: ResolvedUpstream, step: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof OAuthError) throw error;
    if (error instanceof oauth.ResponseBodyError) {
      if (error.status >= 500 || error.error === 'temporarily_unavailable' || error.error === 'server_error') throw unavailable(up, step);
      if (error.error === 'invalid_grant' || error.error === 'access_denied' || error.error === 'invalid_token') {
        throw new RefusedUpstream(`${up.name} refused the ${step} (${error.error})`);
      }
      throw new OAuthError('server_error', `${up.name} refused the ${step} (${error.error}); the provider's configuration needs attention`);
    }
    if (error instanceof oauth.WWWAuthenticateChallengeError) {
      if (error.status === 401) throw new RefusedUpstream(`${up.name} no longer accepts the session`);
      throw unavailable(up, step);
    }
    if (error instanceof oauth.OperationProcessingError) {
      const status = (error.cause as { status?: unknown } | undefined)?.status;
      if (typeof status === 'number' && status >= 500) throw unavailable(up, step);
      throw new OAuthError('access_denied', `the ${step} response from ${up.name} failed its checks (${error.code ?? error.message})`);
    }
    // fetch() itself failed: refused connection, DNS, TLS, timeout.
    throw unavailable(up, step);
  }
}

function unavailable(up: ResolvedUpstream, step: string): OAuthError {
  return new OAuthError('temporarily_unavailable', `${up.name} could not be reached for the ${step}; try again shortly`, 503, { 'Retry-After': '5' });
}

function fromAuthorizationResponse(up: ResolvedUpstream, error: unknown): OAuthError {
  if (error instanceof oauth.AuthorizationResponseError) {
    if (error.error === 'access_denied') return new OAuthError('access_denied', `the sign-in at ${up.name} was declined`);
    if (error.error === 'temporarily_unavailable' || error.error === 'server_error') return unavailable(up, 'sign-in');
    return new OAuthError('server_error', `${up.name} refused the sign-in request (${error.error}); the provider's configuration needs attention`);
  }
  // A state or iss that does not match: not the answer to the request we sent.
  return new OAuthError('access_denied', `the sign-in response from ${up.name} does not belong to this sign-in (${describe(error)})`);
}
