import { hashSecret } from '../../core/secrets.js';
import { authenticateClient, type ClientAuthenticationServices } from '../checks/authenticate-client.js';
import type { SigningKeys } from '../keys.js';
import type { Revocations } from '../revocations.js';
import { readForm } from '../http/params.js';
import { respond, type Answer } from '../http/responses.js';
import { OAuthError } from '../../core/errors.js';
import { verifyOwnAccessToken } from '../tokens.js';
import type { EndpointRequest } from '../http/request.js';

/**
 * POST /revoke (RFC 7009). Revoking a refresh token revokes its grant (and so every token of the
 * family); revoking an access token marks its jti. Unknown tokens and other clients' tokens get
 * the same 200 so that the answer reveals nothing (RFC 7009 §2.2).
 */
export async function revokeEndpoint(
  ctx: ClientAuthenticationServices & { keys: SigningKeys; revocations: Revocations },
  request: EndpointRequest,
): Promise<Answer> {
  const { store } = ctx;
  const params = readForm(request, ctx.config.maxBodyBytes);
  const client = await authenticateClient(ctx, request, params);
  const token = params.get('token');
  if (!token) throw new OAuthError('invalid_request', 'token is required');
  const hint = params.get('token_type_hint');
  if (hint !== undefined && hint !== 'access_token' && hint !== 'refresh_token') {
    throw new OAuthError('unsupported_token_type', 'token_type_hint must be access_token or refresh_token');
  }
  const now = ctx.now();
  const tokenHash = hashSecret(token);
  // A rotated refresh token still names its grant: revoking it revokes the family, as before rotation.
  const refresh = (await store.getRefreshToken(tokenHash)) ?? (await store.findSpentRefreshToken(tokenHash));
  if (refresh && refresh.clientId === client.clientId) {
    await ctx.revocations.revokeGrant(refresh.grantId, now);
    ctx.log({ event: 'token_revoked', kind: 'refresh_token', client_id: client.clientId, grant_id: refresh.grantId });
  } else if (!refresh) {
    const claims = await verifyOwnAccessToken(ctx, token);
    if (claims && claims.client_id === client.clientId) {
      await ctx.revocations.revokeAccessToken(claims.jti, claims.exp, now);
      ctx.log({ event: 'token_revoked', kind: 'access_token', client_id: client.clientId });
    }
  }
  return respond(null, 200, { 'Cache-Control': 'no-store' });
}
