import { OAuthError } from '../../core/errors.js';
import { addressBucket } from '../../core/client-address.js';
import { DUMMY_PASSWORD_HASH, verifyPassword } from '../../core/passwords.js';
import type { InteractionRecord, UserRecord } from '../../store/store.js';
import { completeAuthorization } from '../authorization-response.js';
import { consentCovers } from '../consent.js';
import type { ServerContext } from '../context.js';
import type { Params } from '../http/params.js';
import { seeOther } from '../http/responses.js';
import { expiredInteraction } from '../interactions.js';
import { hasNoUsers } from '../no-users.js';
import { toResponse } from '../pages/layout.js';
import { loginPage } from '../pages/login.js';
import { startSession } from '../sessions.js';
import { SignInThrottle } from '../sign-in-throttle.js';
import { formTargets, pageBasics } from './page-parts.js';

/** Why the sign-in page is shown again: the message, the username to fill back in, and a wait (429) if any. */
interface SignInError {
  message: string;
  username: string;
  retryAfter?: number;
}

/** The sign-in page: a password form (unless local users are off) and a button per upstream provider. */
export async function showSignIn(ctx: ServerContext, interaction: InteractionRecord, error?: SignInError): Promise<Response> {
  const { clientName, action, csrfToken } = await pageBasics(ctx, interaction);
  const upstream = ctx.upstream;
  const page = loginPage({
    action,
    csrfToken,
    clientName,
    formTargets: formTargets(interaction),
    providers: upstream?.providers.list() ?? [],
    localUsers: upstream?.localUsers ?? true,
    ...(error ? { error: error.message, username: error.username } : {}),
  });
  if (error?.retryAfter) return toResponse({ ...page, status: 429 }, { 'Retry-After': String(error.retryAfter) });
  return toResponse(page);
}

/**
 * step=login: a local username and password. Signed in, the person goes on to the consent page,
 * or straight back to the client when a remembered consent covers the request.
 */
export async function submitSignIn(ctx: ServerContext, request: Request, interaction: InteractionRecord, form: Params): Promise<Response> {
  const { store } = ctx;
  if (ctx.upstream?.localUsers === false) {
    throw new OAuthError('invalid_request', 'local users are turned off').withUserMessage('Sign in with one of the providers offered.');
  }
  const username = form.get('username') ?? '';
  const password = form.get('password') ?? '';
  // Failed attempts slow further ones down, for the account and for the address (never a lockout).
  const address = ctx.clientAddress(request);
  const attempt = ctx.signInThrottle.begin(SignInThrottle.keys(username, address), ctx.nowMs());
  // Logged as the throttle counts it, by bucket (an IPv6 address's /64), never the whole address.
  const bucket = address === undefined ? {} : { address: addressBucket(address) };
  if (typeof attempt === 'number') {
    const wait = attempt;
    ctx.log({ event: 'login_throttled', client_id: interaction.clientId, ...bucket });
    return showSignIn(ctx, interaction, {
      message: `Too many failed sign-ins for this account or from this address. Try again in ${wait} second${wait === 1 ? '' : 's'}; each further failure doubles the wait, up to 15 minutes.`,
      username: username.slice(0, 200),
      retryAfter: wait,
    });
  }
  let user: UserRecord | undefined;
  let valid: boolean;
  try {
    user = username ? await store.getUser({ username }) : undefined;
    // Verify against a dummy hash for unknown users so the response time does not reveal them.
    valid = await verifyPassword(password, user?.passwordHash ?? DUMMY_PASSWORD_HASH);
  } catch (error) {
    attempt.abandoned();
    throw error;
  }
  if (!user || !valid) {
    // Timed after the password check (scrypt, 0.1 s or more): the wait starts when the answer goes out.
    attempt.failed(ctx.nowMs());
    // A server nobody was added to yet fails every sign-in: the operator reading the log learns why.
    const noUsers = !user && (await hasNoUsers(store, ctx.nowMs()));
    ctx.log({ event: 'login_failed', client_id: interaction.clientId, ...bucket, ...(noUsers ? { reason: 'no_users' } : {}) });
    return showSignIn(ctx, interaction, { message: 'Wrong username or password.', username: username.slice(0, 200) });
  }
  attempt.succeeded();
  const { session, cookie } = await startSession(ctx, user.id);
  ctx.log({ event: 'login', user_id: user.id, client_id: interaction.clientId });
  if (!interaction.request.prompt.includes('consent') && (await consentCovers(ctx, user.id, interaction.request))) {
    const consumed = await store.consumeInteraction(interaction.id, ctx.now());
    if (!consumed) throw expiredInteraction();
    return completeAuthorization(ctx, consumed.request, session, [cookie]);
  }
  await store.updateInteraction(interaction.id, { userId: user.id });
  return seeOther(`${ctx.config.basePath}/interaction/${interaction.id}`, [cookie]);
}
