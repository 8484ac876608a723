/**
 * Third-party authorization, our side (the spec's steps 1–6), in the order a person goes through it:
 * 1. /authorize validated the client's request completely (nothing goes upstream for a request
 *    we would refuse) and bound it to this browser;
 * 2. on the sign-in page the person picks a provider (`chooseUpstream`);
 * 3. our consent page names the client: every dynamically registered client reaches the provider
 *    through our one client id, so the person approves each one before anything is forwarded
 *    (`forwardUpstream`, after approval, gives the provider's URL to send them to, with PKCE, state and nonce);
 * 4. the callback, once its endpoint found the interaction of the browser that started, comes here
 *    (`finishUpstreamSignIn`): it checks and redeems the upstream code, maps the identity to a local
 *    user, keeps the upstream tokens sealed in an upstream session, and issues our own code, bound
 *    to that session, for the client.
 * Each returns what happened (where the browser goes next, the cookies it gets); the interaction
 * pages and the callback endpoint make the HTTP responses. Step 4's checks and sign-in
 * (`signInUpstream`) also serve a sign-in begun at the account page or the console (page-sign-in.ts).
 */
import { OAuthError, temporarilyUnavailable } from '../../core/errors.js';
import { fail, ok, unreachable, type Defect, type Result } from '../../core/result.js';
import { randomToken } from '../../core/secrets.js';
import type { InteractionRecord, SessionRecord, UpstreamSessionRecord, UserRecord } from '../../store/store.js';
import { codeRedirect, trustedRedirect } from '../authorization-response.js';
import { rememberConsent } from '../consent.js';
import { approveDevice } from '../device-decisions.js';
import { deviceDonePage } from '../pages/device.js';
import type { Page } from '../pages/layout.js';
import type { BaseServices } from '../services.js';
import type { UpstreamServices } from './upstream-sign-in.js';
import type { UpstreamSignIn } from './upstream-sign-in.js';
import { expiredInteraction } from '../interactions.js';
import { startSession } from '../sessions.js';
import { failureLog, type UpstreamDefect } from './defects.js';
import { beginUpstream, finishUpstream, type PendingUpstream, type UpstreamTokens } from './flow.js';
import { refusalOf } from './policy.js';
import { upstreamUser } from './users.js';

export function upstreamConfig(ctx: BaseServices & UpstreamServices): UpstreamSignIn {
  if (!ctx.upstream)
    throw new OAuthError('invalid_request', 'this server has no upstream sign-in').withUserMessage('Sign-in through another provider is not offered here.');
  return ctx.upstream;
}

/** Step 2: remembers the provider chosen; the consent page comes next. */
export async function chooseUpstream(ctx: BaseServices & UpstreamServices, interaction: InteractionRecord, provider: string): Promise<void> {
  const upstream = upstreamConfig(ctx);
  if (!upstream.providers.has(provider)) {
    throw new OAuthError('invalid_request', `no upstream provider ${provider}`).withUserMessage(
      'That sign-in provider is not offered here. Go back and choose another.',
    );
  }
  await ctx.store.updateInteraction(interaction.id, { upstream: { provider, sealedPending: null } });
}

/** Step 3, once the person approved the client: the provider's URL to send them to. */
export async function forwardUpstream(ctx: BaseServices & UpstreamServices, interaction: InteractionRecord): Promise<URL> {
  const upstream = upstreamConfig(ctx);
  const chosen = interaction.upstream;
  if (!chosen) throw expiredInteraction();
  const logFields = { client_id: interaction.clientId };
  const up = await upstream.providers.get(chosen.provider).catch((error: unknown) => {
    logFailure(ctx, chosen.provider, logFields, error);
    throw asRedirect(ctx, interaction, error);
  });
  if (!up.ok) throw asRedirect(ctx, interaction, signInFailure(ctx, chosen.provider, logFields, up.defect));
  const { url, pending } = await beginUpstream(up.value, upstream.callbackUrl, interaction.id);
  // The PKCE verifier and nonce are secrets until the callback: kept sealed, bound to this interaction.
  const sealedPending = upstream.secretBox.seal(JSON.stringify(pending), interaction.id);
  await ctx.store.updateInteraction(interaction.id, { upstream: { provider: chosen.provider, sealedPending } });
  ctx.log({ event: 'upstream_redirect', provider: chosen.provider, client_id: interaction.clientId });
  return url;
}

/**
 * Where the browser goes at the end of an upstream sign-in (the client, with our code), or for a
 * device's authorization the page saying what became of it; and the session cookie it gets.
 */
export type UpstreamSignInResult = ({ redirectTo: string } | { page: Page }) & { cookies: string[] };

/** Step 4: the callback `callback` arrived for `interaction`, which belongs to the browser that brought it. */
export async function finishUpstreamSignIn(ctx: BaseServices & UpstreamServices, interaction: InteractionRecord, callback: URL): Promise<UpstreamSignInResult> {
  upstreamConfig(ctx);
  const { store, now } = ctx;
  // Nothing was sent upstream for this interaction: no callback can belong to it.
  if (!interaction.upstream?.sealedPending) throw expiredInteraction();
  // Single use: a second arrival of the same callback finds nothing.
  const consumed = await store.consumeInteraction(interaction.id, now());
  if (!consumed?.upstream?.sealedPending) throw expiredInteraction();

  const provider = consumed.upstream.provider;
  const logFields = { client_id: consumed.clientId };
  const outcome = await completeSignIn(ctx, consumed, consumed.upstream.sealedPending, callback, logFields).catch((error: unknown) => {
    logFailure(ctx, provider, logFields, error);
    throw asRedirect(ctx, consumed, error);
  });
  if (!outcome.ok) throw asRedirect(ctx, consumed, signInFailure(ctx, provider, logFields, outcome.defect));
  return outcome.value;
}

/** Step 4 once the interaction is consumed: the person signed in, and our answer to the client (or the device). */
async function completeSignIn(
  ctx: BaseServices & UpstreamServices,
  consumed: InteractionRecord,
  sealedPending: string,
  callback: URL,
  logFields: SignInLogFields,
): Promise<Result<UpstreamSignInResult, SignInDefect>> {
  const opened = upstreamConfig(ctx).secretBox.open(sealedPending, consumed.id);
  // Sealed by us for this interaction: one that does not open is the deployment's fault (a key dropped too soon).
  if (!opened.ok) throw new Error(`the pending upstream sign-in cannot be opened: ${opened.defect.description}`);
  const pending = JSON.parse(opened.value) as PendingUpstream;
  const signedIn = await signInUpstream(ctx, pending, callback, logFields);
  if (!signedIn.ok) return signedIn;
  const { user, session, upstreamSessionId, cookie } = signedIn.value;
  if (consumed.device) {
    // Approved on the device consent page before the person was forwarded (step 3).
    return ok({ page: deviceDonePage(await approveDevice(ctx, consumed, user.id, session.authTime, upstreamSessionId)), cookies: [cookie] });
  }
  // The person approved this client on our consent page before we forwarded them (step 3).
  await rememberConsent(ctx, user.id, consumed.request);
  ctx.log({ event: 'consent_granted', user_id: user.id, client_id: consumed.clientId });
  return ok({ redirectTo: await codeRedirect(ctx, consumed.request, session), cookies: [cookie] });
}

/** Who signed in at a callback, with the browser session that now rests on their upstream session. */
export interface UpstreamSignedIn {
  user: UserRecord;
  session: SessionRecord;
  upstreamSessionId: string;
  /** The session cookie to set. */
  cookie: string;
}

/** Where a sign-in came from, for the log: an authorization request's client, or one of our pages. */
export type SignInLogFields = { client_id: string } | { page: 'account' | 'admin'; reauth?: true };

/**
 * Why an upstream sign-in does not stand: the provider's answer (an UpstreamDefect), or ours:
 * the sign-in `policy` refuses the person, or a re-authentication came back as `another_person`
 * (`reason` says which rule, or who, for the log).
 */
export type SignInDefect = UpstreamDefect | (Defect<'policy' | 'another_person'> & { reason: string });

/**
 * The callback's checks and what follows them, the same for every upstream sign-in: the response
 * checked against `pending`, the sign-in policy, the local user (linked or created), the upstream
 * session with its tokens, and a browser session resting on it. `sameUser` (a re-authentication)
 * refuses a sign-in that comes back as anyone else, before any session starts.
 */
export async function signInUpstream(
  ctx: BaseServices & UpstreamServices,
  pending: PendingUpstream,
  callback: URL,
  logFields: SignInLogFields,
  options: { sameUser?: string } = {},
): Promise<Result<UpstreamSignedIn, SignInDefect>> {
  const upstream = upstreamConfig(ctx);
  const { now, log } = ctx;
  const resolved = await upstream.providers.get(pending.providerId);
  if (!resolved.ok) return resolved;
  const up = resolved.value;
  const finished = await finishUpstream(up, upstream.callbackUrl, callback, pending, now());
  if (!finished.ok) return finished;
  const { identity, tokens, warnings } = finished.value;
  for (const warning of warnings) log({ event: 'upstream_warning', provider: up.id, ...logFields, ...failureLog(warning) });
  const refusal = await refusalOf(identity, up.id, upstream.policy);
  // Who was refused, and why, is for the operator: the client learns only that it was refused.
  if (refusal) return fail({ code: 'policy', description: REFUSED.description, reason: refusal });
  if (options.sameUser !== undefined) {
    const existing = await ctx.store.getUser({ identity: { provider: up.id, issuer: identity.issuer, subject: identity.subject } });
    if (existing?.id !== options.sameUser)
      return fail({ code: 'another_person', description: OTHER_PERSON.description, reason: 'signed in again as another person' });
  }
  const user = await upstreamUser(ctx, up.id, identity);
  // Only an email the provider verified may later count for anything (the console's administrators).
  const verifiedEmail = identity.emailVerified && identity.email ? { verifiedEmail: identity.email.toLowerCase() } : {};
  const upstreamSession = await createUpstreamSession(ctx, upstream, user.id, up.id, identity.subject, { ...tokens, ...verifiedEmail });
  const { session, cookie } = await startSession(ctx, user.id, upstreamSession.id);
  log({ event: 'login', user_id: user.id, ...logFields, provider: up.id });
  return ok({ user, session, upstreamSessionId: upstreamSession.id, cookie });
}

/** What the client is told of a person the policy refused. */
const REFUSED = new OAuthError('access_denied', "the identity provider's account is not allowed to sign in here");

/** A re-authentication by someone other than the person signed in. */
const OTHER_PERSON = new OAuthError('access_denied', 'the identity provider signed in another account than the one to confirm').withUserMessage(
  'You signed in again as another account. Sign in again as the same person to confirm it is you.',
);

/**
 * The one mapping of a sign-in's defects to what the person or our client is told: the person
 * declined, or the answer failed its checks or was refused, is access_denied; a provider down is
 * temporarily_unavailable; one misconfigured is server_error. A refusal by our policy says no more
 * than that.
 */
export function signInError(defect: SignInDefect): OAuthError {
  switch (defect.code) {
    case 'declined':
    case 'failed_checks':
    case 'refused':
      return new OAuthError('access_denied', defect.description);
    case 'unavailable':
      return temporarilyUnavailable(defect.description);
    case 'misconfigured':
      return new OAuthError('server_error', defect.description);
    case 'policy':
      return REFUSED;
    case 'another_person':
      return OTHER_PERSON;
    default:
      return unreachable(defect);
  }
}

/**
 * A failed upstream sign-in, logged with its cause (the step, the provider's status and error
 * code; or which rule refused whom), and the error it is answered with.
 */
export function signInFailure(ctx: BaseServices & UpstreamServices, provider: string, logFields: SignInLogFields, defect: SignInDefect): OAuthError {
  const error = signInError(defect);
  if ('reason' in defect)
    ctx.log({ event: 'upstream_refused', provider, ...logFields, step: defect.code === 'policy' ? 'policy' : 'reauth', reason: defect.reason });
  else ctx.log({ event: 'upstream_failed', provider, ...logFields, error: error.code, description: error.description, ...failureLog(defect.failure) });
  return error;
}

/** A sign-in that failed on what no check decides (the store down, a bug), logged as what it is. */
export function logFailure(ctx: BaseServices & UpstreamServices, provider: string, logFields: SignInLogFields, error: unknown): void {
  ctx.log({
    event: 'upstream_failed',
    provider,
    ...logFields,
    error: error instanceof OAuthError ? error.code : 'server_error',
    description: error instanceof Error ? error.message : String(error),
  });
}

async function createUpstreamSession(
  ctx: BaseServices & UpstreamServices,
  upstream: UpstreamSignIn,
  userId: string,
  provider: string,
  subject: string,
  tokens: UpstreamTokens,
): Promise<UpstreamSessionRecord> {
  const now = ctx.now();
  const id = randomToken(16);
  const record: UpstreamSessionRecord = {
    id,
    userId,
    provider,
    subject,
    sealedTokens: upstream.secretBox.seal(JSON.stringify(tokens), id),
    createdAt: now,
    expiresAt: now + upstream.sessionTtl,
  };
  await ctx.store.createUpstreamSession(record);
  return record;
}

/**
 * Errors after /authorize trusted the redirect URI go back to the client with our own code
 * (access_denied, temporarily_unavailable, server_error), never as a 5xx page the client never sees.
 */
function asRedirect(ctx: BaseServices & UpstreamServices, interaction: InteractionRecord, error: unknown): OAuthError {
  const oauth = error instanceof OAuthError ? error : new OAuthError('server_error', 'the sign-in could not be completed');
  if (oauth.redirect) return oauth;
  return oauth.redirectTo(trustedRedirect(interaction.request, ctx.config.issuer));
}
