import { randomToken } from '../core/secrets.js';
import type { GrantRecord, InteractionRecord } from '../store/store.js';
import { rememberConsent } from './consent.js';
import type { BaseServices } from './services.js';
import { deviceAuthorizations } from './device-store.js';

/*
 * The end of a device's interaction (RFC 8628): the person's decision, taken once, whether they
 * signed in here (interaction/device-consent.ts) or upstream (upstream/sign-in.ts).
 */

/** What became of a decision: taken, or too late (the authorization was decided already, or expired). */
export type DeviceOutcome = 'approved' | 'denied' | 'gone';

/**
 * Approves the device authorization of a consumed interaction for the person signed in: its
 * grant and the code the device's next poll redeems are written with the approval, at once. The
 * consent is remembered, as for a browser's client.
 */
export async function approveDevice(
  ctx: BaseServices,
  interaction: InteractionRecord,
  userId: string,
  authTime: number,
  upstreamSessionId: string | null,
): Promise<DeviceOutcome> {
  if (!interaction.device) throw new Error('not a device interaction');
  const now = ctx.now();
  const { clientId, scope, resource } = interaction.request;
  const grant: GrantRecord = {
    id: randomToken(16),
    clientId,
    userId,
    scope,
    resource,
    authTime,
    createdAt: now,
    revokedAt: null,
    upstreamSessionId,
    accessExpiresAt: null,
  };
  const approved = await deviceAuthorizations(ctx.store).approveDeviceAuthorization(interaction.device.deviceCodeHash, now, grant, {
    grantId: grant.id,
    clientId,
    userId,
    // A device has no redirect URI and no PKCE: its code is found only under the device code's hash.
    redirectUri: '',
    redirectUriProvided: false,
    codeChallenge: '',
    scope,
    resource,
    authTime,
    createdAt: now,
    consumedAt: null,
  });
  if (!approved) {
    ctx.log({ event: 'device_decision_late', user_id: userId, client_id: clientId });
    return 'gone';
  }
  await rememberConsent(ctx, userId, interaction.request);
  ctx.log({ event: 'consent_granted', user_id: userId, client_id: clientId, device: true });
  return 'approved';
}

/** Denies the device authorization of a consumed interaction: the device's next poll gets access_denied. */
export async function denyDevice(ctx: BaseServices, interaction: InteractionRecord, userId: string | null): Promise<DeviceOutcome> {
  if (!interaction.device) throw new Error('not a device interaction');
  const denied = await deviceAuthorizations(ctx.store).denyDeviceAuthorization(interaction.device.deviceCodeHash, ctx.now());
  ctx.log({ event: denied ? 'consent_denied' : 'device_decision_late', user_id: userId ?? undefined, client_id: interaction.clientId, device: true });
  return denied ? 'denied' : 'gone';
}
