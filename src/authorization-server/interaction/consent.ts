import { OAuthError } from '../../core/errors.js';
import type { InteractionRecord } from '../../store/store.js';
import { completeAuthorization, trustedRedirect } from '../authorization-response.js';
import { rememberConsent } from '../consent.js';
import type { InteractionServices } from './state.js';
import type { Params } from '../http/params.js';
import { expiredInteraction } from '../interactions.js';
import { consentPage } from '../pages/consent.js';
import { pageAnswer } from '../pages/layout.js';
import { currentSession } from '../sessions.js';
import { showDeviceConsent, submitDeviceConsent } from './device-consent.js';
import { formTargets, pageBasics, requestShown } from './page-parts.js';
import { showSignIn } from './sign-in.js';
import type { EndpointRequest } from '../http/request.js';
import type { Answer } from '../http/responses.js';

/** A consent that no signed-in person of this browser can give: the person starts again. */
export function notSignedIn(): OAuthError {
  return new OAuthError('invalid_request', 'no session, or not the user who signed in to this interaction').withUserMessage(
    'Your session ended. Go back to the application and start again.',
  );
}

/** The consent page of the person signed in here: the client, where it returns to, the scopes and the resource. */
export async function showConsent(ctx: InteractionServices, interaction: InteractionRecord, request: EndpointRequest): Promise<Answer> {
  if (interaction.device) return showDeviceConsent(ctx, interaction, request);
  const { client, clientName, action, csrfToken } = await pageBasics(ctx, interaction);
  const user = interaction.userId === null ? undefined : await ctx.store.getUser({ id: interaction.userId });
  // The user was removed since signing in: the sign-in page again.
  if (!user) return showSignIn(ctx, interaction);
  return pageAnswer(
    consentPage({
      action,
      csrfToken,
      username: user.username,
      clientName,
      ...requestShown(ctx, client, interaction),
      formTargets: formTargets(interaction),
    }),
  );
}

/**
 * step=consent after signing in here: only the person whose session signed in to this interaction
 * decides. Approved, the consent is remembered and the code goes to the client; denied, an error does.
 */
export async function submitConsent(ctx: InteractionServices, request: EndpointRequest, interaction: InteractionRecord, form: Params): Promise<Answer> {
  if (interaction.device) return submitDeviceConsent(ctx, request, interaction, form);
  const { store } = ctx;
  const session = await currentSession(ctx, request);
  if (!session || interaction.userId === null || session.userId !== interaction.userId) throw notSignedIn();
  const decision = form.get('decision');
  if (decision !== 'approve' && decision !== 'deny') {
    throw new OAuthError('invalid_request', 'decision must be approve or deny').withUserMessage('Choose Approve or Deny.');
  }
  // Consuming first makes a double-submitted form yield one code at most.
  const consumed = await store.consumeInteraction(interaction.id, ctx.now());
  if (!consumed) throw expiredInteraction();
  if (decision === 'deny') {
    ctx.log({ event: 'consent_denied', user_id: session.userId, client_id: consumed.clientId });
    // The stored request was validated by /authorize, its redirect URI with it.
    throw new OAuthError('access_denied', 'the user denied the request').redirectTo(trustedRedirect(consumed.request, ctx.config.issuer));
  }
  await rememberConsent(ctx, session.userId, consumed.request);
  ctx.log({ event: 'consent_granted', user_id: session.userId, client_id: consumed.clientId });
  return completeAuthorization(ctx, consumed.request, session);
}
