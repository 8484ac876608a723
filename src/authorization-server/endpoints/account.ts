import { OAuthError } from '../../core/errors.js';
import type { StoreAdministration } from '../../store/store.js';
import { ACCOUNT_PATH } from '../account-link.js';
import { readCookie } from '../browser-cookies.js';
import type { InteractionServices } from '../interaction/state.js';
import type { Revocations } from '../revocations.js';
import { formToken, isFormToken, refusedFormToken } from '../form-tokens.js';
import { readPageForm } from '../http/page-form.js';
import type { Params } from '../http/params.js';
import { seeOther, type Answer } from '../http/responses.js';
import { approvedApplications, groupedApplications } from '../approved-applications.js';
import { accountPage, accountSignInPage } from '../pages/account.js';
import { pageAnswer } from '../pages/layout.js';
import { revokedAccessTokens } from '../pages/revoked-tokens.js';
import { checkPassword } from '../password-sign-in.js';
import { browserBinding, currentSession, endSession, startSession } from '../sessions.js';
import { beginPageSignIn, offeredProviders } from '../upstream/page-sign-in.js';
import type { EndpointRequest } from '../http/request.js';

/*
 * A person's own page: the applications they approved, each revocable, and signing out. Outside
 * any authorization request, so its forms carry the server's token for this page (form-tokens.ts):
 * the sign-in form's is bound to this browser, every other to the session. Every action is the
 * signed-in person's own: the user comes from the session, never from the form.
 */

/** What the page says once after an action's redirect (`?done=`): a fixed sentence, never text from the URL. */
function noticeOf(ctx: InteractionServices & { revocations: Revocations }, done: string | null): string | undefined {
  if (done === 'revoked') return `Access revoked: that application can no longer get tokens. ${revokedAccessTokens(ctx.config.accessTokenTtl)}`;
  if (done === 'signed-out') return 'You are signed out.';
  return undefined;
}

/** GET /account: the sign-in form, or the person's approved applications (`admin`: the store, which can list and revoke consents). */
export async function accountEndpoint(
  ctx: InteractionServices & { revocations: Revocations },
  admin: StoreAdministration,
  request: EndpointRequest,
): Promise<Answer> {
  const binding = browserBinding(ctx, request);
  const headers: Record<string, string> = binding.cookie ? { 'Set-Cookie': binding.cookie } : {};
  const action = `${ctx.config.basePath}${ACCOUNT_PATH}`;
  const notice = noticeOf(ctx, request.url.searchParams.get('done'));
  const session = await currentSession(ctx, request);
  const user = session ? await ctx.store.getUser({ id: session.userId }) : undefined;
  if (!session || !user) {
    const offered = await offeredProviders(ctx);
    const csrfToken = await formToken(ctx, 'account', { binding: binding.value });
    return pageAnswer(accountSignInPage({ action, csrfToken, localUsers: localUsers(ctx), ...offered, ...(notice ? { notice } : {}) }), headers);
  }
  const page = accountPage({
    action,
    csrfToken: await formToken(ctx, 'account', { session }),
    username: user.username,
    applications: groupedApplications(await approvedApplications(ctx, admin, session.userId)),
    revokedAccessTokens: revokedAccessTokens(ctx.config.accessTokenTtl),
    ...(notice ? { notice } : {}),
  });
  return pageAnswer(page, headers);
}

/** POST /account: sign in (the token of this browser), or revoke an application or sign out (the token of the session). */
export async function accountSubmit(
  ctx: InteractionServices & { revocations: Revocations },
  admin: StoreAdministration,
  request: EndpointRequest,
): Promise<Answer> {
  const form = readPageForm(ctx, request);
  const csrf = form.get('csrf') ?? '';
  const action = form.get('action');
  if (action === 'sign-in') {
    const binding = readCookie(ctx, request, 'browser');
    if (!binding || !(await isFormToken(ctx, 'account', { binding }, csrf))) throw refusedFormToken();
    return signIn(ctx, request, binding, form);
  }
  const session = await currentSession(ctx, request);
  // Signed out meanwhile (another tab, expiry): the page again, which asks to sign in; nothing changes.
  if (!session) return seeOther(accountUrl(ctx));
  if (!(await isFormToken(ctx, 'account', { session }, csrf))) throw refusedFormToken();
  if (action === 'revoke') {
    const now = ctx.now();
    const revoked: string[] = [];
    // Only ever the signed-in person's own consents: a client id names nothing of anyone else's.
    for (const clientId of clientIdsOf(form)) if ((await admin.revokeConsents(session.userId, clientId, now)) > 0) revoked.push(clientId);
    if (revoked.length > 0) {
      // The store recorded the grants' revocations; reading them now lets a guard in this process refuse their tokens at once.
      await ctx.revocations.sync();
      for (const clientId of revoked) ctx.log({ event: 'consent_revoked', user_id: session.userId, client_id: clientId, by: 'user' });
    }
    // Nothing to revoke (a second click, another tab): the page shows what remains.
    return seeOther(`${accountUrl(ctx)}?done=revoked`);
  }
  if (action === 'sign-out') {
    const cleared = await endSession(ctx, request);
    ctx.log({ event: 'logout', user_id: session.userId });
    return seeOther(`${accountUrl(ctx)}?done=signed-out`, [cleared]);
  }
  throw new OAuthError('invalid_request', 'action must be sign-in, revoke or sign-out').withUserMessage('Unexpected form.');
}

/**
 * action=sign-in: with `provider`, off to that provider (its callback brings the person back here);
 * otherwise a local password, through the same check and throttle as the interaction's sign-in.
 */
async function signIn(ctx: InteractionServices & { revocations: Revocations }, request: EndpointRequest, binding: string, form: Params): Promise<Answer> {
  const provider = form.get('provider');
  if (provider !== undefined) {
    const { url, cookie } = await beginPageSignIn(ctx, binding, provider, { page: 'account' });
    return seeOther(url.href, [cookie]);
  }
  if (!localUsers(ctx)) {
    throw new OAuthError('invalid_request', 'local users are turned off').withUserMessage('Sign in with one of the providers on the account page.');
  }
  const username = form.get('username') ?? '';
  const checked = await checkPassword(ctx, request, username, form.get('password') ?? '', { page: 'account' });
  if ('refused' in checked) {
    const { message, retryAfter } = checked.refused;
    const page = accountSignInPage({
      action: accountUrl(ctx),
      csrfToken: await formToken(ctx, 'account', { binding }),
      localUsers: true,
      ...(await offeredProviders(ctx)),
      username: username.slice(0, 200),
      error: message,
      ...(retryAfter ? { status: 429 } : {}),
    });
    return pageAnswer(page, retryAfter ? { 'Retry-After': String(retryAfter) } : {});
  }
  const { cookie } = await startSession(ctx, checked.user.id);
  ctx.log({ event: 'login', user_id: checked.user.id, page: 'account' });
  return seeOther(accountUrl(ctx), [cookie]);
}

/** Registrations of one application revoked at once (a group's "Revoke all") are at most this many. */
const MAX_REVOKED_AT_ONCE = 100;

/** The applications a revoke names: `client_id`, or `client_ids` separated by spaces (a group's Revoke all). */
function clientIdsOf(form: Params): string[] {
  const many = form.get('client_ids');
  if (many === undefined) {
    const one = form.get('client_id') ?? '';
    return one ? [one] : [];
  }
  const ids = [...new Set(many.split(' ').filter((id) => id !== ''))];
  if (ids.length > MAX_REVOKED_AT_ONCE)
    throw new OAuthError('invalid_request', `at most ${MAX_REVOKED_AT_ONCE} client_ids at once`).withUserMessage('Unexpected form.');
  return ids;
}

const localUsers = (ctx: InteractionServices & { revocations: Revocations }): boolean => ctx.upstream?.localUsers ?? true;
const accountUrl = (ctx: InteractionServices & { revocations: Revocations }): string => `${ctx.config.basePath}${ACCOUNT_PATH}`;
