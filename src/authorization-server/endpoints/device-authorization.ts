import { OAuthError } from '../../core/errors.js';
import { DEVICE_CODE_GRANT_TYPE } from '../../core/protocol.js';
import { parseScope, resolveScope, withoutOfflineAccess } from '../../core/scopes.js';
import { isStoreConflict } from '../../store/store.js';
import { authenticateClient } from '../checks/authenticate-client.js';
import { allowedScopes, resolveResource } from '../checks/authorization-request.js';
import type { ClientAuthenticationServices } from '../checks/authenticate-client.js';
import type { ClientUse } from '../clients.js';
import {
  DEVICE_CODE_TTL,
  DEVICE_POLL_INTERVAL,
  DEVICE_VERIFICATION_PATH,
  deviceCodeHash,
  displayUserCode,
  newDeviceCode,
  newUserCode,
  userCodeHash,
} from '../device-codes.js';
import { deviceAuthorizations } from '../device-store.js';
import { readForm } from '../http/params.js';
import { json, type Answer } from '../http/responses.js';
import type { EndpointRequest } from '../http/request.js';

/** New user codes tried when one collides with a pending one (about one in 2^34 per code pending). */
const USER_CODE_ATTEMPTS = 3;

/**
 * POST /device_authorization (RFC 8628 §3.1–3.2): a device with no browser of its own asks for
 * a code pair. The client authenticates as at /token; scope and resource are checked as
 * /authorize checks them, and the token its device code gets is for that resource.
 */
export async function deviceAuthorizationEndpoint(ctx: ClientAuthenticationServices & { clientUse: ClientUse }, request: EndpointRequest): Promise<Answer> {
  const params = readForm(request, ctx.config.maxBodyBytes);
  const client = await authenticateClient(ctx, request, params);
  const noting = ctx.clientUse.note(ctx.store, client.clientId, ctx.now());
  if (noting) await noting;
  if (!client.grantTypes.includes(DEVICE_CODE_GRANT_TYPE)) {
    throw new OAuthError('unauthorized_client', `this client is not registered for the ${DEVICE_CODE_GRANT_TYPE} grant`);
  }
  const resource = resolveResource(params.has('resource') ? [params.get('resource')!] : [], ctx.config);
  const scope = resolveScope(withoutOfflineAccess(parseScope(params.get('scope'))), allowedScopes(client, ctx.config, 'user'), ctx.config.defaultScopes);

  const now = ctx.now();
  const deviceCode = newDeviceCode();
  for (let attempt = 1; ; attempt++) {
    const userCode = newUserCode();
    try {
      await deviceAuthorizations(ctx.store).createDeviceAuthorization({
        deviceCodeHash: deviceCodeHash(deviceCode),
        userCodeHash: userCodeHash(userCode),
        clientId: client.clientId,
        scope,
        resource,
        interval: DEVICE_POLL_INTERVAL,
        lastPolledAt: null,
        status: 'pending',
        createdAt: now,
        expiresAt: now + DEVICE_CODE_TTL,
      });
    } catch (error) {
      if (isStoreConflict(error) && attempt < USER_CODE_ATTEMPTS) continue;
      throw error;
    }
    ctx.log({ event: 'device_authorization', client_id: client.clientId, resource });
    const verificationUri = `${ctx.config.issuer}${DEVICE_VERIFICATION_PATH}`;
    const shown = displayUserCode(userCode);
    return json({
      device_code: deviceCode,
      user_code: shown,
      verification_uri: verificationUri,
      verification_uri_complete: `${verificationUri}?user_code=${encodeURIComponent(shown)}`,
      expires_in: DEVICE_CODE_TTL,
      interval: DEVICE_POLL_INTERVAL,
    });
  }
}
