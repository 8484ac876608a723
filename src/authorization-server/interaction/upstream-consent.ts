import { OAuthError } from '../../core/errors.js';
import type { InteractionRecord } from '../../store/store.js';
import { trustedRedirect } from '../authorization-response.js';
import type { InteractionServices } from './state.js';
import type { Params } from '../http/params.js';
import { seeOther, type Answer } from '../http/responses.js';
import { expiredInteraction } from '../interactions.js';
import { consentPage } from '../pages/consent.js';
import { pageAnswer } from '../pages/layout.js';
import { forwardUpstream, signInError, upstreamConfig } from '../upstream/sign-in.js';
import { denyDevice } from '../device-decisions.js';
import { deviceDonePage } from '../pages/device.js';
import { showDeviceConsent } from './device-consent.js';
import { formTargets, pageBasics, requestShown } from './page-parts.js';
import type { EndpointRequest } from '../http/request.js';

/** The provider this interaction's person chose; the state `upstream-consent` has one. */
function chosenProvider(interaction: InteractionRecord): string {
  if (!interaction.upstream) throw expiredInteraction();
  return interaction.upstream.provider;
}

/**
 * The consent page before anything is forwarded upstream: every dynamically registered client
 * reaches the provider through our one client id, so the person approves this client first.
 */
export async function showUpstreamConsent(ctx: InteractionServices, interaction: InteractionRecord, request: EndpointRequest): Promise<Answer> {
  const resolved = await upstreamConfig(ctx).providers.get(chosenProvider(interaction));
  if (!resolved.ok) throw signInError(resolved.defect);
  const up = resolved.value;
  if (interaction.device) return showDeviceConsent(ctx, interaction, request, { name: up.name, origin: new URL(up.as.authorization_endpoint!).origin });
  const { client, clientName, action, csrfToken } = await pageBasics(ctx, interaction);
  return pageAnswer(
    consentPage({
      action,
      csrfToken,
      upstreamName: up.name,
      clientName,
      ...requestShown(ctx, client, interaction),
      formTargets: formTargets(interaction, new URL(up.as.authorization_endpoint!).origin),
    }),
  );
}

/** step=consent before an upstream sign-in: approved, off to the provider; denied, back to the client. */
export async function submitUpstreamConsent(
  ctx: InteractionServices,
  _request: EndpointRequest,
  interaction: InteractionRecord,
  form: Params,
): Promise<Answer> {
  const provider = chosenProvider(interaction);
  const decision = form.get('decision');
  if (decision === 'approve') return seeOther((await forwardUpstream(ctx, interaction)).href);
  if (decision !== 'deny') throw new OAuthError('invalid_request', 'decision must be approve or deny').withUserMessage('Choose Approve or Deny.');
  const consumed = await ctx.store.consumeInteraction(interaction.id, ctx.now());
  if (!consumed) throw expiredInteraction();
  if (consumed.device) return pageAnswer(deviceDonePage(await denyDevice(ctx, consumed, null)));
  ctx.log({ event: 'consent_denied', client_id: consumed.clientId, provider });
  throw new OAuthError('access_denied', 'the user denied the request').redirectTo(trustedRedirect(consumed.request, ctx.config.issuer));
}
