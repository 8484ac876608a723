import { OAuthError } from '../../core/errors.js';
import { DEVICE_CODE_GRANT_TYPE } from '../../core/protocol.js';
import { deviceCodeHash } from '../device-codes.js';
import { deviceAuthorizations } from '../device-store.js';
import type { IssuedTokens } from '../tokens.js';
import { redeemCodeForTokens, type CodeKind, type CodeRedemption } from './redeem-code.js';
import type { TokenRequest } from './token-request.js';

/**
 * grant_type=urn:ietf:params:oauth:grant-type:device_code (RFC 8628 §3.4–3.5). Each poll is
 * recorded first (a poll too soon is told to slow down); once the person approved, the device
 * code is redeemed as an authorization code is, atomically and once: the approval stored a code
 * under the device code's hash, so a second redemption is a replay and revokes what the first got.
 */
export async function deviceCodeGrant(ctx: CodeRedemption, request: TokenRequest): Promise<IssuedTokens> {
  const { client, params, now } = request;
  if (!client.grantTypes.includes(DEVICE_CODE_GRANT_TYPE)) {
    throw new OAuthError('unauthorized_client', `this client is not registered for the ${DEVICE_CODE_GRANT_TYPE} grant`);
  }
  const deviceCode = params.get('device_code');
  if (!deviceCode) throw new OAuthError('invalid_request', 'device_code is required');

  const hash = deviceCodeHash(deviceCode);
  const poll = await deviceAuthorizations(ctx.store).pollDeviceAuthorization(hash, client.clientId, now);
  switch (poll.status) {
    case 'missing':
      throw new OAuthError('invalid_grant', 'device_code is invalid');
    case 'foreign':
      throw new OAuthError('invalid_grant', 'device_code was issued to another client');
    case 'expired':
      throw new OAuthError('expired_token', 'device_code has expired; start a new device authorization');
    case 'pending':
      throw new OAuthError('authorization_pending', 'the person has not approved the request yet');
    case 'slow_down':
      throw new OAuthError('slow_down', `polling too fast; wait at least ${poll.record.interval} seconds between requests`);
    case 'denied':
      // The token endpoint's errors are 400 (RFC 6749 §5.2), this one too.
      throw new OAuthError('access_denied', 'the person denied the request', 400);
    case 'approved':
      break;
  }

  // The poll found the authorization to be this client's; its code is checked to be the same client's all the same.
  return redeemCodeForTokens(ctx, request, hash, DEVICE_CODE, (record) =>
    record.clientId === client.clientId ? undefined : new OAuthError('invalid_grant', 'device_code was issued to another client'),
  );
}

const DEVICE_CODE: CodeKind = {
  grantType: DEVICE_CODE_GRANT_TYPE,
  name: 'device_code',
  expired: { error: 'expired_token', description: 'device_code has expired; start a new device authorization' },
  replayedEvent: 'device_code_replayed',
};
