import { OAuthError } from '../../core/errors.js';
import type { InteractionRecord } from '../../store/store.js';
import type { InteractionServices } from './state.js';
import { approveDevice, denyDevice } from '../device-decisions.js';
import { displayUserCode, openUserCode } from '../device-codes.js';
import { readCookie } from '../browser-cookies.js';
import type { Params } from '../http/params.js';
import { expiredInteraction } from '../interactions.js';
import { deviceConsentPage, deviceDonePage } from '../pages/device.js';
import { pageAnswer } from '../pages/layout.js';
import { currentSession } from '../sessions.js';
import { pageBasics, requestShown } from './page-parts.js';
import { showSignIn } from './sign-in.js';
import type { EndpointRequest } from '../http/request.js';
import type { Answer } from '../http/responses.js';

/** The user code of a device interaction, opened with this browser's cookie (undefined if it does not open). */
function userCodeOf(ctx: InteractionServices, request: EndpointRequest, interaction: InteractionRecord): string | undefined {
  const binding = readCookie(ctx, request, 'browser');
  return binding && interaction.device ? openUserCode(interaction.device.sealedUserCode, binding, interaction.id) : undefined;
}

/**
 * The device consent page: signed in here (`username`), or before an upstream sign-in
 * (`upstream`: the provider's name, and its origin the form leads to once approved).
 */
export async function showDeviceConsent(
  ctx: InteractionServices,
  interaction: InteractionRecord,
  request: EndpointRequest,
  upstream?: { name: string; origin: string },
): Promise<Answer> {
  const { client, clientName, action, csrfToken } = await pageBasics(ctx, interaction);
  let username: string | undefined;
  if (!upstream) {
    const user = interaction.userId === null ? undefined : await ctx.store.getUser({ id: interaction.userId });
    if (!user) return showSignIn(ctx, interaction);
    username = user.username;
  }
  const userCode = userCodeOf(ctx, request, interaction);
  return pageAnswer(
    deviceConsentPage({
      action,
      csrfToken,
      clientName,
      ...requestShown(ctx, client, interaction),
      ...(username !== undefined ? { username } : { upstreamName: upstream?.name ?? '' }),
      ...(userCode ? { userCode: displayUserCode(userCode) } : {}),
      formTargets: upstream ? [upstream.origin] : [],
    }),
  );
}

/** step=consent of a device interaction, signed in here: the decision is taken once, and the person told what became of it. */
export async function submitDeviceConsent(ctx: InteractionServices, request: EndpointRequest, interaction: InteractionRecord, form: Params): Promise<Answer> {
  const session = await currentSession(ctx, request);
  if (!session || interaction.userId === null || session.userId !== interaction.userId) {
    throw new OAuthError('invalid_request', 'no session, or not the user who signed in to this interaction').withUserMessage(
      'Your session ended. Enter the code from your device again.',
    );
  }
  const decision = form.get('decision');
  if (decision !== 'approve' && decision !== 'deny') {
    throw new OAuthError('invalid_request', 'decision must be approve or deny').withUserMessage('Choose Approve or Deny.');
  }
  const consumed = await ctx.store.consumeInteraction(interaction.id, ctx.now());
  if (!consumed) throw expiredInteraction();
  const outcome =
    decision === 'approve'
      ? await approveDevice(ctx, consumed, session.userId, session.authTime, session.upstreamSessionId)
      : await denyDevice(ctx, consumed, session.userId);
  return pageAnswer(deviceDonePage(outcome));
}
