import { OAuthError } from '../../core/errors.js';
import { DEVICE_CODE_GRANT_TYPE, JWT_BEARER_GRANT_TYPE } from '../../core/protocol.js';
import { authenticateClient } from '../checks/authenticate-client.js';
import type { ServerContext } from '../context.js';
import { exchangeAuthorizationCode } from '../grants/authorization-code.js';
import { clientCredentialsGrant } from '../grants/client-credentials.js';
import { deviceCodeGrant } from '../grants/device-code.js';
import { jwtBearerGrant } from '../grants/jwt-bearer.js';
import { refreshAccessToken } from '../grants/refresh-token.js';
import { requestHeader } from '../http/body.js';
import { readForm, type Params } from '../http/params.js';
import { json } from '../http/responses.js';

const grants = {
  authorization_code: exchangeAuthorizationCode,
  refresh_token: refreshAccessToken,
  client_credentials: clientCredentialsGrant,
  [DEVICE_CODE_GRANT_TYPE]: deviceCodeGrant,
} as const;

/** POST /token: authenticate the client, then run the one grant it asked for. */
export async function tokenEndpoint(ctx: ServerContext, request: Request): Promise<Response> {
  const params = await readForm(request, ctx.config.maxBodyBytes);
  const grantType = params.get('grant_type');
  if (!grantType) throw new OAuthError('invalid_request', 'grant_type is required');
  // A workload's token authenticates it (RFC 7521 §4.1): that grant may come with no client at all.
  const anonymous = grantType === JWT_BEARER_GRANT_TYPE && !namesClient(request, params);
  const client = anonymous ? null : await authenticateClient(ctx, request, params, 'token');
  const noting = client && ctx.clientUse.note(ctx.store, client.clientId, ctx.now());
  if (noting) await noting;
  if (grantType === JWT_BEARER_GRANT_TYPE) return json(await jwtBearerGrant(ctx, client, params));
  if (!client) throw new OAuthError('invalid_client', 'client authentication is required', 401);
  if (!Object.hasOwn(grants, grantType)) {
    throw new OAuthError('unsupported_grant_type', `grant_type ${grantType} is not supported`);
  }
  const body = await grants[grantType as keyof typeof grants](ctx, client, params);
  return json(body);
}

/** Whether the request says who its client is, in any way client authentication reads. */
function namesClient(request: Request, params: Params): boolean {
  return requestHeader(request, 'authorization') !== null || ['client_id', 'client_secret', 'client_assertion', 'client_assertion_type'].some((name) => params.has(name));
}
