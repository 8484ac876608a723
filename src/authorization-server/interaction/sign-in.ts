import { OAuthError } from '../../core/errors.js';
import type { InteractionRecord } from '../../store/store.js';
import { completeAuthorization } from '../authorization-response.js';
import { consentCovers } from '../consent.js';
import type { InteractionServices } from './state.js';
import type { Params } from '../http/params.js';
import { seeOther, type Answer } from '../http/responses.js';
import { expiredInteraction } from '../interactions.js';
import { pageAnswer } from '../pages/layout.js';
import { loginPage } from '../pages/login.js';
import { checkPassword } from '../password-sign-in.js';
import { startSession } from '../sessions.js';
import { formTargets, pageBasics } from './page-parts.js';
import type { EndpointRequest } from '../http/request.js';

/** Why the sign-in page is shown again: the message, the username to fill back in, and a wait (429) if any. */
interface SignInError {
  message: string;
  username: string;
  retryAfter?: number;
}

/** The sign-in page: a password form (unless local users are off) and a button per upstream provider. */
export async function showSignIn(ctx: InteractionServices, interaction: InteractionRecord, error?: SignInError): Promise<Answer> {
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
  if (error?.retryAfter) return pageAnswer({ ...page, status: 429 }, { 'Retry-After': String(error.retryAfter) });
  return pageAnswer(page);
}

/**
 * step=login: a local username and password. Signed in, the person goes on to the consent page,
 * or straight back to the client when a remembered consent covers the request.
 */
export async function submitSignIn(ctx: InteractionServices, request: EndpointRequest, interaction: InteractionRecord, form: Params): Promise<Answer> {
  const { store } = ctx;
  if (ctx.upstream?.localUsers === false) {
    throw new OAuthError('invalid_request', 'local users are turned off').withUserMessage('Sign in with one of the providers offered.');
  }
  const username = form.get('username') ?? '';
  const checked = await checkPassword(ctx, request, username, form.get('password') ?? '', { client_id: interaction.clientId });
  if ('refused' in checked) return showSignIn(ctx, interaction, { ...checked.refused, username: username.slice(0, 200) });
  const { user } = checked;
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
