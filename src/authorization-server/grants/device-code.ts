import { OAuthError } from '../../core/errors.js';
import { DEVICE_CODE_GRANT_TYPE } from '../../core/protocol.js';
import type { ClientRecord } from '../../store/store.js';
import type { ServerContext } from '../context.js';
import { deviceCodeHash } from '../device-codes.js';
import type { Params } from '../http/params.js';
import type { IssuedTokens, TokenFamily } from '../tokens.js';
import { accessTokenExpiry, newRefreshToken } from '../tokens.js';
import { tokenResponse } from './token-response.js';

/**
 * grant_type=urn:ietf:params:oauth:grant-type:device_code (RFC 8628 §3.4–3.5). Each poll is
 * recorded first (a poll too soon is told to slow down); once the person approved, the device
 * code is redeemed as an authorization code is, atomically and once: the approval stored a code
 * under the device code's hash, so a second redemption is a replay and revokes what the first got.
 */
export async function deviceCodeGrant(ctx: ServerContext, client: ClientRecord, params: Params): Promise<IssuedTokens> {
  const { store, log } = ctx;
  if (!client.grantTypes.includes(DEVICE_CODE_GRANT_TYPE)) {
    throw new OAuthError('unauthorized_client', `this client is not registered for the ${DEVICE_CODE_GRANT_TYPE} grant`);
  }
  const deviceCode = params.get('device_code');
  if (!deviceCode) throw new OAuthError('invalid_request', 'device_code is required');

  const now = ctx.now();
  const hash = deviceCodeHash(deviceCode);
  const poll = await store.pollDeviceAuthorization(hash, client.clientId, now);
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

  let grant: TokenFamily | undefined;
  let refresh: ReturnType<typeof newRefreshToken> | undefined;
  const result = await store.redeemAuthorizationCode(hash, now, (record) => {
    // The poll found the authorization to be this client's; its code is the same client's.
    if (record.clientId !== client.clientId) return undefined;
    grant = { id: record.grantId, clientId: record.clientId, userId: record.userId, scope: record.scope, resource: record.resource, authTime: record.authTime };
    refresh = client.grantTypes.includes('refresh_token') ? newRefreshToken(ctx, grant, grant.scope) : undefined;
    return { accessExpiresAt: accessTokenExpiry(ctx.config, now), refreshToken: refresh?.record };
  });
  if (result.status === 'replayed') {
    await ctx.revocations.revokeGrant(result.record.grantId, now);
    log({ event: 'device_code_replayed', client_id: result.record.clientId, grant_id: result.record.grantId });
    throw new OAuthError('invalid_grant', 'device_code was already used; the tokens it produced are revoked');
  }
  if (result.status === 'expired') throw new OAuthError('expired_token', 'device_code has expired; start a new device authorization');
  if (result.status === 'revoked') throw new OAuthError('invalid_grant', 'the authorization was revoked');
  if (result.status === 'missing' || !grant) throw new OAuthError('invalid_grant', 'device_code is invalid');
  log({ event: 'token_issued', grant_type: DEVICE_CODE_GRANT_TYPE, client_id: client.clientId, grant_id: grant.id });
  return tokenResponse(ctx, grant, grant.scope, now, refresh?.token);
}
