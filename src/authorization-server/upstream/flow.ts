/**
 * The upstream side of third-party authorization, one step per function (oauth4webapi does the
 * protocol checks): send the person upstream with PKCE, `state` and `nonce`; take the callback
 * (state, `iss`, code exchange, ID token signature, audience, nonce and expiry); check or renew
 * the upstream tokens when our grant is refreshed; call user-info for a tool.
 *
 * Each step returns what it learnt or an UpstreamDefect (defects.ts): a stable code (declined,
 * failed_checks, refused, unavailable, misconfigured), a description that can be shown to the
 * person or sent to our client, and the failure behind it for the operator's log: the step, the
 * provider's HTTP status and error code. oauth4webapi's exceptions become defects here, in
 * `attempt`. Nothing here logs, and no defect holds an upstream response body or token.
 */
import * as oauth from 'oauth4webapi';
import { OAuthError } from '../../core/errors.js';
import { fail, ok, type Result } from '../../core/result.js';
import { upstreamFailure, type UpstreamDefect, type UpstreamDefectCode, type UpstreamFailure, type UpstreamStep } from './defects.js';
import { describe, type ResolvedUpstream, type UpstreamIdentity } from './provider.js';

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

/** What a step upstream gives, or the defect it found. */
export type UpstreamResult<T> = Result<T, UpstreamDefect>;

/**
 * The upstream session still stands, maybe with renewed tokens. A session the upstream no longer
 * honours (revoked, expired, user removed: end our grant too) is the defect `refused`.
 */
export type UpstreamCheck = { status: 'valid' } | { status: 'renewed'; tokens: UpstreamTokens };

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
export async function finishUpstream(
  up: ResolvedUpstream,
  redirectUri: string,
  callback: URL,
  pending: PendingUpstream,
  now: number,
): Promise<UpstreamResult<UpstreamSignIn>> {
  if (pending.providerId !== up.id) {
    return defect(
      'failed_checks',
      'the sign-in response came from another provider than the one the sign-in started at',
      upstreamFailure('authorization response', null, null, `the sign-in started at ${pending.providerId}`),
    );
  }
  let params: URLSearchParams;
  try {
    params = oauth.validateAuthResponse(up.as, up.client, callback, pending.state);
  } catch (error) {
    return fail(fromAuthorizationResponse(up, error));
  }
  const signedIn = await redeemCode(up, redirectUri, params, pending, now);
  // A refusal of the code (invalid_grant, a 401 at user-info) is the provider not accepting this sign-in.
  if (!signedIn.ok && signedIn.defect.code === 'refused') return fail({ ...signedIn.defect, description: `${up.name} did not accept the sign-in` });
  return signedIn;
}

/** Step 4: the code exchanged, the identity read from the ID token (OpenID) or user-info (plain OAuth 2.0). */
async function redeemCode(
  up: ResolvedUpstream,
  redirectUri: string,
  params: URLSearchParams,
  pending: PendingUpstream,
  now: number,
): Promise<UpstreamResult<UpstreamSignIn>> {
  const response = await attempt(up, 'token exchange', () =>
    oauth.authorizationCodeGrantRequest(up.as, up.client, up.clientAuth, params, redirectUri, pending.codeVerifier, up.http),
  );
  if (!response.ok) return response;
  if (up.kind === 'oidc') {
    // Its checks are the ID token's (issuer, audience, nonce, expiry), unless the response itself was an error.
    const result = await attempt(
      up,
      'token exchange',
      () => oauth.processAuthorizationCodeResponse(up.as, up.client, response.value, { expectedNonce: pending.nonce!, requireIdToken: true }),
      'id token validation',
    );
    if (!result.ok) return result;
    // The token came straight from the provider over TLS, yet we check its signature too:
    // the identity we create an account for rests on it.
    const signature = await attempt(up, 'id token validation', () => oauth.validateApplicationLevelSignature(up.as, response.value, up.http));
    if (!signature.ok) return signature;
    const claims = oauth.getValidatedIdTokenClaims(result.value)!;
    const stale = staleLogin(up, claims, pending);
    if (stale) return fail(stale);
    return oidcSignIn(up, claims, tokensOf(result.value, now));
  }
  const result = await attempt(up, 'token exchange', () => oauth.processAuthorizationCodeResponse(up.as, up.client, response.value));
  if (!result.ok) return result;
  const userinfo = await readUserinfo(up, 'userinfo', result.value.access_token, oauth.skipSubjectCheck);
  if (!userinfo.ok) return userinfo;
  let mapped: Omit<UpstreamIdentity, 'issuer' | 'claims'>;
  try {
    mapped = up.profile!(userinfo.value);
  } catch (error) {
    return defect(
      'misconfigured',
      `the user information from ${up.name} could not be read: ${describe(error)}`,
      upstreamFailure('userinfo', 200, null, describe(error)),
    );
  }
  const warnings: UpstreamFailure[] = [];
  if (up.emailsEndpoint) {
    const verified = await verifiedEmail(up, up.emailsEndpoint, result.value.access_token);
    if (!verified.ok) return verified;
    if ('warning' in verified.value) warnings.push(verified.value.warning);
    else mapped = { ...mapped, email: verified.value.email, emailVerified: verified.value.email !== null };
  }
  return ok({ identity: { issuer: up.as.issuer, ...mapped, claims: userinfo.value }, tokens: tokensOf(result.value, now), warnings });
}

/**
 * Before one of our grants is refreshed: is the upstream session behind it still honoured?
 * An access token near expiry is renewed with the refresh token; otherwise user-info is asked
 * (it answers 401 for a revoked token). `refused` when it is not; `unavailable` when the upstream
 * cannot be reached, so our grant is kept and the client may retry.
 */
export async function checkUpstream(
  up: ResolvedUpstream,
  subject: string,
  tokens: UpstreamTokens,
  now: number,
  options: { probe?: boolean } = {},
): Promise<UpstreamResult<UpstreamCheck>> {
  const expiring = tokens.expiresAt !== null && tokens.expiresAt - EXPIRY_MARGIN <= now;
  if (expiring) {
    if (!tokens.refreshToken) return defect('refused', `the ${up.name} session expired and cannot be renewed`, null);
    return renewUpstream(up, subject, { ...tokens, refreshToken: tokens.refreshToken }, now);
  }
  // Without a probe (a caller about to use the token anyway learns of a refusal from that call),
  // or when user-info refuses this session's tokens anyway (its expiry and renewal tell then).
  if (!up.as.userinfo_endpoint || options.probe === false || tokens.userinfoRefused) return ok({ status: 'valid' });
  const userinfo = await readUserinfo(up, 'session check', tokens.accessToken, up.kind === 'oidc' ? subject : oauth.skipSubjectCheck);
  return userinfo.ok ? ok({ status: 'valid' }) : userinfo;
}

async function renewUpstream(
  up: ResolvedUpstream,
  subject: string,
  current: UpstreamTokens & { refreshToken: string },
  now: number,
): Promise<UpstreamResult<UpstreamCheck>> {
  const response = await attempt(up, 'session renewal', () => oauth.refreshTokenGrantRequest(up.as, up.client, up.clientAuth, current.refreshToken, up.http));
  if (!response.ok) return response;
  const result = await attempt(up, 'session renewal', () => oauth.processRefreshTokenResponse(up.as, up.client, response.value));
  if (!result.ok) return result;
  const claims = oauth.getValidatedIdTokenClaims(result.value);
  if (claims && claims.sub !== subject) return defect('refused', `${up.name} renewed the session for another person`, null);
  // A provider that does not rotate refresh tokens keeps accepting the one we have.
  const tokens = tokensOf(result.value, now);
  // What was learnt at sign-in stays with the session.
  const renewed: UpstreamTokens = {
    ...tokens,
    refreshToken: tokens.refreshToken ?? current.refreshToken,
    ...(current.userinfoRefused ? { userinfoRefused: true } : {}),
    ...(current.verifiedEmail ? { verifiedEmail: current.verifiedEmail } : {}),
    ...(current.authTime !== undefined ? { authTime: current.authTime } : {}),
  };
  return ok({ status: 'renewed', tokens: renewed });
}

/** For a tool acting for the person: the provider's user-info with the upstream access token; `refused` when the provider no longer accepts the session. */
export async function upstreamUserinfo(up: ResolvedUpstream, accessToken: string): Promise<UpstreamResult<Record<string, unknown>>> {
  const userinfo = await readUserinfo(up, 'userinfo', accessToken, oauth.skipSubjectCheck);
  if (!userinfo.ok && userinfo.defect.code === 'refused') return fail({ ...userinfo.defect, description: `${up.name} no longer accepts the session` });
  return userinfo;
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
function staleLogin(up: ResolvedUpstream, claims: oauth.IDToken, pending: PendingUpstream): UpstreamDefect | undefined {
  if (pending.freshSince === undefined) return undefined;
  if (typeof claims.auth_time !== 'number') {
    const failure = upstreamFailure('id token validation', null, 'auth_time', 'the ID token has no auth_time, though max_age was sent');
    return { code: 'failed_checks', description: `${up.name} did not say when you last signed in, so it cannot confirm a recent sign-in`, failure };
  }
  if (claims.auth_time + CLOCK_TOLERANCE >= pending.freshSince) return undefined;
  const failure = upstreamFailure('id token validation', null, 'auth_time', `the login is from ${claims.auth_time}, before the re-authentication began`);
  return { code: 'failed_checks', description: `${up.name} did not ask you to sign in again`, failure };
}

async function oidcSignIn(up: ResolvedUpstream, claims: oauth.IDToken, tokens: UpstreamTokens): Promise<UpstreamResult<UpstreamSignIn>> {
  let profile: Record<string, unknown> = claims;
  const warnings: UpstreamFailure[] = [];
  // Many providers put profile claims in user-info only (oidc-provider does by default).
  if ((claims.email === undefined || claims.name === undefined) && up.as.userinfo_endpoint) {
    const userinfo = await readUserinfo(up, 'userinfo', tokens.accessToken, claims.sub);
    if (userinfo.ok) profile = { ...userinfo.value, ...claims };
    else {
      const failure = userinfo.defect.failure;
      if (failure?.status !== 401 && failure?.status !== 403) return userinfo;
      // A provider whose access tokens are for another API (one the operator named as the
      // resource) refuses them at its user-info. The ID token, validated, still says who signed
      // in; and later checks of the session cannot ask user-info either.
      warnings.push(
        upstreamFailure(
          'userinfo',
          failure.status,
          failure.error,
          `user-info refused the access token (${failure.reason}); signed in from the ID token's claims`,
        ),
      );
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
  return ok({ identity, tokens, warnings });
}

/** The provider's user-info, read at `step`. */
async function readUserinfo(
  up: ResolvedUpstream,
  step: UpstreamStep,
  accessToken: string,
  subject: string | typeof oauth.skipSubjectCheck,
): Promise<UpstreamResult<Record<string, unknown>>> {
  if (up.kind === 'oidc') {
    return attempt(up, step, async () => {
      const response = await oauth.userInfoRequest(up.as, up.client, accessToken, up.http);
      return { ...(await oauth.processUserInfoResponse(up.as, up.client, subject, response)) };
    });
  }
  // A plain OAuth 2.0 API (GitHub's /user) has no `sub`, so OpenID's user-info rules do not apply.
  const answered = await attempt(up, step, () => getJson(up, new URL(up.as.userinfo_endpoint!), accessToken));
  if (!answered.ok) return answered;
  const response = answered.value;
  const failure = (reason: string) => upstreamFailure('userinfo', response.status, null, reason);
  if (response.status === 401 || response.status === 403)
    return defect('refused', `${up.name} no longer accepts the session`, failure('the access token was refused'));
  if (response.status >= 500) return unavailable(up, 'user-info', failure('the provider failed'));
  const body: unknown = response.ok ? await response.json().catch(() => null) : null;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return defect('misconfigured', `the user information from ${up.name} could not be read (HTTP ${response.status})`, failure('not a JSON object'));
  }
  return ok(body as Record<string, unknown>);
}

/**
 * The person's verified address from a GitHub-style list: the primary one when verified, else
 * another verified one, else null. A list that cannot be read (e.g. the scope to read it was not
 * granted) is a warning for the log: the email then stays unverified.
 */
async function verifiedEmail(
  up: ResolvedUpstream,
  endpoint: string,
  accessToken: string,
): Promise<UpstreamResult<{ email: string | null } | { warning: UpstreamFailure }>> {
  const answered = await attempt(up, 'emails', () => getJson(up, new URL(endpoint), accessToken));
  if (!answered.ok) return answered;
  const response = answered.value;
  if (response.status >= 500) return unavailable(up, 'emails', upstreamFailure('emails', response.status, null, 'the provider failed'));
  const body: unknown = response.ok ? await response.json().catch(() => null) : null;
  if (!Array.isArray(body))
    return ok({ warning: upstreamFailure('emails', response.status, null, 'no list of email addresses; the email is taken as unverified') });
  const verified = body.filter(
    (entry): entry is { email: string; primary?: unknown } =>
      typeof entry === 'object' &&
      entry !== null &&
      (entry as { verified?: unknown }).verified === true &&
      typeof (entry as { email?: unknown }).email === 'string' &&
      (entry as { email: string }).email !== '',
  );
  return ok({ email: (verified.find((entry) => entry.primary === true) ?? verified[0])?.email ?? null });
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

function defect(code: UpstreamDefectCode, description: string, failure: UpstreamFailure | null): { ok: false; defect: UpstreamDefect } {
  return fail({ code, description, failure });
}

/**
 * Runs a step that talks to the provider, turning what oauth4webapi and fetch throw into defects,
 * each with its cause. `checkStep` names the step when the provider's answer was fine as HTTP but
 * failed our checks (the ID token's, for a token response).
 */
async function attempt<T>(up: ResolvedUpstream, step: UpstreamStep, fn: () => Promise<T>, checkStep: UpstreamStep = step): Promise<UpstreamResult<T>> {
  try {
    return ok(await fn());
  } catch (error) {
    const what = STEP_WORDS[step];
    if (error instanceof oauth.ResponseBodyError) {
      const failure = upstreamFailure(step, error.status, error.error, error.error_description ?? error.message);
      if (error.status >= 500 || error.error === 'temporarily_unavailable' || error.error === 'server_error') return unavailable(up, what, failure);
      if (error.error === 'invalid_grant' || error.error === 'access_denied' || error.error === 'invalid_token') {
        return defect('refused', `${up.name} refused the ${what} (${error.error})`, failure);
      }
      return defect('misconfigured', `${up.name} refused the ${what} (${error.error}); the provider's configuration needs attention`, failure);
    }
    if (error instanceof oauth.WWWAuthenticateChallengeError) {
      const challenge = error.cause[0]?.parameters;
      const failure = upstreamFailure(step, error.status, challenge?.error ?? null, challenge?.error_description ?? error.message);
      if (error.status === 401) return defect('refused', `${up.name} no longer accepts the session`, failure);
      return unavailable(up, what, failure);
    }
    if (error instanceof oauth.OperationProcessingError) {
      const answer = error.cause instanceof Response ? error.cause : null;
      const failure = upstreamFailure(answer ? step : checkStep, answer?.status ?? null, error.code ?? null, error.message);
      if (answer && answer.status >= 500) return unavailable(up, what, failure);
      return defect('failed_checks', `the ${what} response from ${up.name} failed its checks (${error.code ?? error.message})`, failure);
    }
    // fetch() itself failed: refused connection, DNS, TLS, timeout.
    return unavailable(up, what, upstreamFailure(step, null, null, networkReason(error)));
  }
}

/** How a step is named to the person and the client (kept as they were named before). */
const STEP_WORDS: Record<UpstreamStep, string> = {
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

function unavailable(up: ResolvedUpstream, what: string, failure: UpstreamFailure): { ok: false; defect: UpstreamDefect } {
  return defect('unavailable', `${up.name} could not be reached for the ${what}; try again shortly`, failure);
}

/** The defect of an authorization response that is an error, or that does not belong to this sign-in. */
function fromAuthorizationResponse(up: ResolvedUpstream, error: unknown): UpstreamDefect {
  if (error instanceof oauth.AuthorizationResponseError) {
    const failure = upstreamFailure('authorization response', null, error.error, error.error_description ?? error.message);
    if (error.error === 'access_denied') return { code: 'declined', description: `the sign-in at ${up.name} was declined`, failure };
    if (error.error === 'temporarily_unavailable' || error.error === 'server_error') return unavailable(up, 'sign-in', failure).defect;
    return {
      code: 'misconfigured',
      description: `${up.name} refused the sign-in request (${error.error}); the provider's configuration needs attention`,
      failure,
    };
  }
  // A state or iss that does not match: not the answer to the request we sent.
  const failure = upstreamFailure(
    'authorization response',
    null,
    error instanceof oauth.OperationProcessingError ? (error.code ?? null) : null,
    describe(error),
  );
  return { code: 'failed_checks', description: `the sign-in response from ${up.name} does not belong to this sign-in (${describe(error)})`, failure };
}
