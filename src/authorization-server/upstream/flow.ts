/**
 * The upstream side of third-party authorization, one step per function (oauth4webapi does the
 * protocol checks): send the person upstream with PKCE, `state` and `nonce`; take the callback
 * (state, `iss`, code exchange, ID token signature, audience, nonce and expiry); check or renew
 * the upstream tokens when our grant is refreshed; call user-info for a tool.
 *
 * Every failure becomes an OAuthError that can be shown to the person or sent to our client:
 * access_denied (refused upstream, or a response that does not belong to this sign-in),
 * temporarily_unavailable (upstream down or failing), server_error (upstream misconfigured).
 * Its cause (`failureOf`) says for the operator's log where upstream it failed: the step, the
 * provider's HTTP status and error code. Nothing here logs, and no error holds an upstream
 * response body or token.
 */
import * as oauth from 'oauth4webapi';
import { OAuthError } from '../../core/errors.js';
import { describe, failureOf, UpstreamFailure, withFailure, type ResolvedUpstream, type UpstreamIdentity } from './provider.js';

/** What must be kept between sending the person upstream and the callback (with the interaction). */
export interface PendingUpstream {
  providerId: string;
  state: string;
  /** OpenID providers only. */
  nonce: string | null;
  codeVerifier: string;
  /**
   * For a re-authentication: the provider was asked for a fresh login (OpenID `prompt=login` and
   * `max_age=0`), so the ID token must carry an `auth_time` no older than this (seconds since the epoch).
   */
  freshSince?: number;
}

export interface UpstreamTokens {
  accessToken: string;
  refreshToken: string | null;
  /** Seconds since the epoch; null when the provider did not say (e.g. GitHub OAuth apps). */
  expiresAt: number | null;
  scope: string | null;
  /**
   * Set when the provider's user-info refused the access token at sign-in (it is for another
   * API): the session is then checked by renewing it when it expires, not by asking user-info.
   */
  userinfoRefused?: true;
  /**
   * The email the provider verified at this sign-in (lowercase), if any: kept with the session,
   * sealed, as what the console checks against its administrators' emails.
   */
  verifiedEmail?: string;
  /**
   * When the provider says the person last signed in there (the validated ID token's `auth_time`,
   * seconds since the epoch), if it said: what the console takes for the time of the sign-in.
   * Only an OpenID provider can say it; without it the console asks for a re-authentication.
   */
  authTime?: number;
}

export interface UpstreamSignIn {
  identity: UpstreamIdentity;
  tokens: UpstreamTokens;
  /** What failed without stopping the sign-in (user-info refused the token, the emails could not be read), for the log. */
  warnings: UpstreamFailure[];
}

export type UpstreamCheck =
  | { status: 'valid' }
  | { status: 'renewed'; tokens: UpstreamTokens }
  /** The upstream no longer honours the session (revoked, expired, user removed): end our grant too. */
  | { status: 'refused'; reason: string; failure: UpstreamFailure | null };

/** The handle `beginUpstream` put in front of the state, or null. */
export function stateHandle(callback: URL): string | null {
  const state = callback.searchParams.get('state') ?? '';
  const dot = state.indexOf('.');
  return dot > 0 ? state.slice(0, dot) : null;
}

/** Renew this many seconds before the upstream access token expires. */
const EXPIRY_MARGIN = 30;

/** How far the provider's clock may be behind ours when its `auth_time` is compared. */
const CLOCK_TOLERANCE = 30;

/**
 * Step 2: the URL to send the person to, and what to keep until the callback. `handle` (our
 * interaction id) leads the `state`, so the callback finds what it kept; the random rest is what
 * makes the state unguessable, and the whole is compared with what was kept.
 */
export async function beginUpstream(
  up: ResolvedUpstream,
  redirectUri: string,
  handle = '',
  options: { freshSince?: number } = {},
): Promise<{ url: URL; pending: PendingUpstream }> {
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
  if (options.freshSince !== undefined) {
    // A plain OAuth 2.0 provider can neither be asked for a new login nor say when the last one
    // was: its flow would simply run again on the session it has.
    if (up.kind !== 'oidc') throw cannotConfirm(up);
    // max_age=0 (OpenID Connect Core §3.1.2.1) makes the provider put auth_time in the ID token,
    // so a provider that ignores prompt=login is found out rather than trusted.
    params.set('prompt', 'login');
    params.set('max_age', '0');
  }
  const fresh = options.freshSince !== undefined ? { freshSince: options.freshSince } : {};
  return { url, pending: { providerId: up.id, state, nonce, codeVerifier, ...fresh } };
}

/** Steps 3–4: checks the callback, exchanges the code, and says who signed in. */
export async function finishUpstream(up: ResolvedUpstream, redirectUri: string, callback: URL, pending: PendingUpstream, now: number): Promise<UpstreamSignIn> {
  if (pending.providerId !== up.id) {
    const failure = new UpstreamFailure('authorization response', null, null, `the sign-in started at ${pending.providerId}`);
    throw withFailure(new OAuthError('access_denied', 'the sign-in response came from another provider than the one the sign-in started at'), failure);
  }
  let params: URLSearchParams;
  try {
    params = oauth.validateAuthResponse(up.as, up.client, callback, pending.state);
  } catch (error) {
    throw fromAuthorizationResponse(up, error);
  }

  return refusalAs(new OAuthError('access_denied', `${up.name} did not accept the sign-in`), async () => {
    const response = await guarded(up, 'token exchange', () => oauth.authorizationCodeGrantRequest(up.as, up.client, up.clientAuth, params, redirectUri, pending.codeVerifier, up.http));
    if (up.kind === 'oidc') {
      // Its checks are the ID token's (issuer, audience, nonce, expiry), unless the response itself was an error.
      const result = await guarded(up, 'token exchange', () => oauth.processAuthorizationCodeResponse(up.as, up.client, response, { expectedNonce: pending.nonce!, requireIdToken: true }), 'id token validation');
      // The token came straight from the provider over TLS, yet we check its signature too:
      // the identity we create an account for rests on it.
      await guarded(up, 'id token validation', () => oauth.validateApplicationLevelSignature(up.as, response, up.http));
      const claims = oauth.getValidatedIdTokenClaims(result)!;
      checkFreshLogin(up, claims, pending);
      return oidcSignIn(up, claims, tokensOf(result, now));
    }
    const result = await guarded(up, 'token exchange', () => oauth.processAuthorizationCodeResponse(up.as, up.client, response));
    const userinfo = await guarded(up, 'userinfo', () => readUserinfo(up, result.access_token, oauth.skipSubjectCheck));
    let mapped: Omit<UpstreamIdentity, 'issuer' | 'claims'>;
    try {
      mapped = up.profile!(userinfo);
    } catch (error) {
      const failure = new UpstreamFailure('userinfo', 200, null, describe(error));
      throw withFailure(new OAuthError('server_error', `the user information from ${up.name} could not be read: ${describe(error)}`), failure);
    }
    const warnings: UpstreamFailure[] = [];
    if (up.emailsEndpoint) {
      const verified = await verifiedEmail(up, up.emailsEndpoint, result.access_token);
      if (verified instanceof UpstreamFailure) warnings.push(verified);
      else mapped = { ...mapped, email: verified, emailVerified: verified !== null };
    }
    return { identity: { issuer: up.as.issuer, ...mapped, claims: userinfo }, tokens: tokensOf(result, now), warnings };
  });
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
    if (!tokens.refreshToken) return { status: 'refused', reason: `the ${up.name} session expired and cannot be renewed`, failure: null };
    return renewUpstream(up, subject, { ...tokens, refreshToken: tokens.refreshToken }, now);
  }
  // Without a probe (a caller about to use the token anyway learns of a refusal from that call),
  // or when user-info refuses this session's tokens anyway (its expiry and renewal tell then).
  if (!up.as.userinfo_endpoint || options.probe === false || tokens.userinfoRefused) return { status: 'valid' };
  return refusedAsCheck(() =>
    guarded(up, 'session check', async () => {
      await readUserinfo(up, tokens.accessToken, up.kind === 'oidc' ? subject : oauth.skipSubjectCheck);
      return { status: 'valid' };
    }),
  );
}

function renewUpstream(up: ResolvedUpstream, subject: string, current: UpstreamTokens & { refreshToken: string }, now: number): Promise<UpstreamCheck> {
  return refusedAsCheck(() =>
    guarded(up, 'session renewal', async () => {
      const response = await oauth.refreshTokenGrantRequest(up.as, up.client, up.clientAuth, current.refreshToken, up.http);
      const result = await oauth.processRefreshTokenResponse(up.as, up.client, response);
      const claims = oauth.getValidatedIdTokenClaims(result);
      if (claims && claims.sub !== subject) return { status: 'refused', reason: `${up.name} renewed the session for another person`, failure: null };
      // A provider that does not rotate refresh tokens keeps accepting the one we have.
      const tokens = tokensOf(result, now);
      // What was learnt at sign-in stays with the session.
      const renewed: UpstreamTokens = {
        ...tokens,
        refreshToken: tokens.refreshToken ?? current.refreshToken,
        ...(current.userinfoRefused ? { userinfoRefused: true } : {}),
        ...(current.verifiedEmail ? { verifiedEmail: current.verifiedEmail } : {}),
        ...(current.authTime !== undefined ? { authTime: current.authTime } : {}),
      };
      return { status: 'renewed', tokens: renewed };
    }),
  );
}

/** For a tool acting for the person: the provider's user-info with the upstream access token. */
export function upstreamUserinfo(up: ResolvedUpstream, accessToken: string): Promise<Record<string, unknown>> {
  return refusalAs(new OAuthError('invalid_token', `${up.name} no longer accepts the session`, 401), () =>
    guarded(up, 'userinfo', () => readUserinfo(up, accessToken, oauth.skipSubjectCheck)),
  );
}

// ---------------------------------------------------------------------------------------------

/** Why a re-authentication through a plain OAuth 2.0 provider is not begun: it could not prove one. */
function cannotConfirm(up: ResolvedUpstream): OAuthError {
  return new OAuthError('invalid_request', `${up.name} cannot confirm a recent sign-in: it is not an OpenID provider`).withUserMessage(
    `${up.name} cannot confirm a recent sign-in (it is not an OpenID provider). Changes need a sign-in with a password, or through an OpenID provider.`,
  );
}

/**
 * A re-authentication must come back with proof of a login begun after it: `auth_time`, which
 * `max_age` makes REQUIRED (OpenID Connect Core §2). One without it, or with an older login (the
 * provider ignored `prompt=login`), is refused.
 */
function checkFreshLogin(up: ResolvedUpstream, claims: oauth.IDToken, pending: PendingUpstream): void {
  if (pending.freshSince === undefined) return;
  if (typeof claims.auth_time !== 'number') {
    const failure = new UpstreamFailure('id token validation', null, 'auth_time', 'the ID token has no auth_time, though max_age was sent');
    throw withFailure(new OAuthError('access_denied', `${up.name} did not say when you last signed in, so it cannot confirm a recent sign-in`), failure);
  }
  if (claims.auth_time + CLOCK_TOLERANCE >= pending.freshSince) return;
  const failure = new UpstreamFailure('id token validation', null, 'auth_time', `the login is from ${claims.auth_time}, before the re-authentication began`);
  throw withFailure(new OAuthError('access_denied', `${up.name} did not ask you to sign in again`), failure);
}

async function oidcSignIn(up: ResolvedUpstream, claims: oauth.IDToken, tokens: UpstreamTokens): Promise<UpstreamSignIn> {
  let profile: Record<string, unknown> = claims;
  const warnings: UpstreamFailure[] = [];
  // Many providers put profile claims in user-info only (oidc-provider does by default).
  if ((claims.email === undefined || claims.name === undefined) && up.as.userinfo_endpoint) {
    try {
      profile = { ...(await guarded(up, 'userinfo', () => readUserinfo(up, tokens.accessToken, claims.sub))), ...claims };
    } catch (error) {
      const failure = error instanceof RefusedUpstream ? error.failure : failureOf(error);
      if (failure?.status !== 401 && failure?.status !== 403) throw error;
      // A provider whose access tokens are for another API (one the operator named as the
      // resource) refuses them at its user-info. The ID token, validated, still says who signed
      // in; and later checks of the session cannot ask user-info either.
      warnings.push(new UpstreamFailure('userinfo', failure.status, failure.error, `user-info refused the access token (${failure.reason}); signed in from the ID token's claims`));
      tokens = { ...tokens, userinfoRefused: true };
    }
  }
  if (typeof claims.auth_time === 'number') tokens = { ...tokens, authTime: claims.auth_time };
  const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);
  const identity: UpstreamIdentity = {
    issuer: claims.iss,
    subject: claims.sub,
    email: text(profile.email),
    emailVerified: profile.email_verified === true,
    name: text(profile.name),
    username: text(profile.preferred_username),
    claims: { ...claims },
  };
  return { identity, tokens, warnings };
}

async function readUserinfo(up: ResolvedUpstream, accessToken: string, subject: string | typeof oauth.skipSubjectCheck): Promise<Record<string, unknown>> {
  if (up.kind === 'oidc') {
    const response = await oauth.userInfoRequest(up.as, up.client, accessToken, up.http);
    return { ...(await oauth.processUserInfoResponse(up.as, up.client, subject, response)) };
  }
  // A plain OAuth 2.0 API (GitHub's /user) has no `sub`, so OpenID's user-info rules do not apply.
  const response = await getJson(up, new URL(up.as.userinfo_endpoint!), accessToken);
  const failure = (reason: string) => new UpstreamFailure('userinfo', response.status, null, reason);
  if (response.status === 401 || response.status === 403) throw new RefusedUpstream(`${up.name} no longer accepts the session`, failure('the access token was refused'));
  if (response.status >= 500) throw unavailable(up, 'user-info', failure('the provider failed'));
  const body: unknown = response.ok ? await response.json().catch(() => null) : null;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw withFailure(new OAuthError('server_error', `the user information from ${up.name} could not be read (HTTP ${response.status})`), failure('not a JSON object'));
  }
  return body as Record<string, unknown>;
}

/**
 * The person's verified address from a GitHub-style list: the primary one when verified, else
 * another verified one, else null. A list that cannot be read (e.g. the scope to read it was not
 * granted) is a failure for the log: the email then stays unverified.
 */
async function verifiedEmail(up: ResolvedUpstream, endpoint: string, accessToken: string): Promise<string | null | UpstreamFailure> {
  const response = await guarded(up, 'emails', () => getJson(up, new URL(endpoint), accessToken));
  if (response.status >= 500) throw unavailable(up, 'emails', new UpstreamFailure('emails', response.status, null, 'the provider failed'));
  const body: unknown = response.ok ? await response.json().catch(() => null) : null;
  if (!Array.isArray(body)) return new UpstreamFailure('emails', response.status, null, 'no list of email addresses; the email is taken as unverified');
  const verified = body.filter(
    (entry): entry is { email: string; primary?: unknown } =>
      typeof entry === 'object' && entry !== null && (entry as { verified?: unknown }).verified === true && typeof (entry as { email?: unknown }).email === 'string' && (entry as { email: string }).email !== '',
  );
  return (verified.find((entry) => entry.primary === true) ?? verified[0])?.email ?? null;
}

function getJson(up: ResolvedUpstream, url: URL, accessToken: string): Promise<Response> {
  const headers = new Headers({ accept: 'application/json' });
  // A GET without a body: the custom fetch (typed for any body) fits.
  return oauth.protectedResourceRequest(accessToken, 'GET', url, headers, null, up.http as oauth.ProtectedResourceRequestOptions);
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
class RefusedUpstream extends Error {
  constructor(
    message: string,
    readonly failure: UpstreamFailure,
  ) {
    super(message);
  }
}

async function refusedAsCheck(fn: () => Promise<UpstreamCheck>): Promise<UpstreamCheck> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof RefusedUpstream) return { status: 'refused', reason: error.message, failure: error.failure };
    throw error;
  }
}

async function refusalAs<T>(replacement: OAuthError, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw error instanceof RefusedUpstream ? withFailure(replacement, error.failure) : error;
  }
}

/**
 * Runs a step that talks to the provider, turning what can go wrong into our errors, each with
 * its cause. `checkStep` names the step when the provider's answer was fine as HTTP but failed
 * our checks (the ID token's, for a token response).
 */
async function guarded<T>(up: ResolvedUpstream, step: UpstreamFailure['step'], fn: () => Promise<T>, checkStep: UpstreamFailure['step'] = step): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof OAuthError || error instanceof RefusedUpstream) throw error;
    const what = STEP_WORDS[step];
    if (error instanceof oauth.ResponseBodyError) {
      const failure = new UpstreamFailure(step, error.status, error.error, error.error_description ?? error.message);
      if (error.status >= 500 || error.error === 'temporarily_unavailable' || error.error === 'server_error') throw unavailable(up, what, failure);
      if (error.error === 'invalid_grant' || error.error === 'access_denied' || error.error === 'invalid_token') {
        throw new RefusedUpstream(`${up.name} refused the ${what} (${error.error})`, failure);
      }
      throw withFailure(new OAuthError('server_error', `${up.name} refused the ${what} (${error.error}); the provider's configuration needs attention`), failure);
    }
    if (error instanceof oauth.WWWAuthenticateChallengeError) {
      const challenge = error.cause[0]?.parameters;
      const failure = new UpstreamFailure(step, error.status, challenge?.error ?? null, challenge?.error_description ?? error.message);
      if (error.status === 401) throw new RefusedUpstream(`${up.name} no longer accepts the session`, failure);
      throw unavailable(up, what, failure);
    }
    if (error instanceof oauth.OperationProcessingError) {
      const answer = error.cause instanceof Response ? error.cause : null;
      const failure = new UpstreamFailure(answer ? step : checkStep, answer?.status ?? null, error.code ?? null, error.message);
      if (answer && answer.status >= 500) throw unavailable(up, what, failure);
      throw withFailure(new OAuthError('access_denied', `the ${what} response from ${up.name} failed its checks (${error.code ?? error.message})`), failure);
    }
    // fetch() itself failed: refused connection, DNS, TLS, timeout.
    throw unavailable(up, what, new UpstreamFailure(step, null, null, networkReason(error)));
  }
}

/** How a step is named to the person and the client (kept as they were named before). */
const STEP_WORDS: Record<UpstreamFailure['step'], string> = {
  discovery: 'discovery',
  'authorization response': 'sign-in',
  'token exchange': 'sign-in',
  'id token validation': 'sign-in',
  userinfo: 'user-info',
  emails: 'email addresses',
  'session check': 'session check',
  'session renewal': 'session renewal',
};

/** fetch() wraps the network's reason (ECONNREFUSED, ENOTFOUND, a TLS error) in its cause. */
function networkReason(error: unknown): string {
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  return typeof cause?.code === 'string' ? `${describe(error)} (${cause.code})` : describe(error);
}

function unavailable(up: ResolvedUpstream, what: string, failure: UpstreamFailure): OAuthError {
  return withFailure(new OAuthError('temporarily_unavailable', `${up.name} could not be reached for the ${what}; try again shortly`, 503, { 'Retry-After': '5' }), failure);
}

function fromAuthorizationResponse(up: ResolvedUpstream, error: unknown): OAuthError {
  if (error instanceof oauth.AuthorizationResponseError) {
    const failure = new UpstreamFailure('authorization response', null, error.error, error.error_description ?? error.message);
    if (error.error === 'access_denied') return withFailure(new OAuthError('access_denied', `the sign-in at ${up.name} was declined`), failure);
    if (error.error === 'temporarily_unavailable' || error.error === 'server_error') return unavailable(up, 'sign-in', failure);
    return withFailure(new OAuthError('server_error', `${up.name} refused the sign-in request (${error.error}); the provider's configuration needs attention`), failure);
  }
  // A state or iss that does not match: not the answer to the request we sent.
  const failure = new UpstreamFailure('authorization response', null, error instanceof oauth.OperationProcessingError ? (error.code ?? null) : null, describe(error));
  return withFailure(new OAuthError('access_denied', `the sign-in response from ${up.name} does not belong to this sign-in (${describe(error)})`), failure);
}
