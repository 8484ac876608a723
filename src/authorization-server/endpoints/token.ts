import { OAuthError } from '../../core/errors.js';
import { authenticateClient } from '../checks/authenticate-client.js';
import type { ServerContext } from '../context.js';
import { exchangeAuthorizationCode } from '../grants/authorization-code.js';
import { clientCredentialsGrant } from '../grants/client-credentials.js';
import { refreshAccessToken } from '../grants/refresh-token.js';
import { readForm } from '../http/params.js';
import { json } from '../http/responses.js';

const grants = {
  authorization_code: exchangeAuthorizationCode,
  refresh_token: refreshAccessToken,
  client_credentials: clientCredentialsGrant,
} as const;

/** POST /token: authenticate the client, then run the one grant it asked for. */
export async function tokenEndpoint(ctx: ServerContext, request: Request): Promise<Response> {
  const params = await readForm(request, ctx.config.maxBodyBytes);
  const grantType = params.get('grant_type');
  if (!grantType) throw new OAuthError('invalid_request', 'grant_type is required');
  const client = await authenticateClient(ctx, request, params, 'token');
  const noting = ctx.clientUse.note(ctx.store, client.clientId, ctx.now());
  if (noting) await noting;
  if (!Object.hasOwn(grants, grantType)) {
    throw new OAuthError('unsupported_grant_type', `grant_type ${grantType} is not supported`);
  }
  const body = await grants[grantType as keyof typeof grants](ctx, client, params);
  return json(body);
}
