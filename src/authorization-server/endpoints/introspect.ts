import { OAuthError } from '../../core/errors.js';
import { GRANT_ID_CLAIM } from '../../core/revocation-set.js';
import { authenticateClient, type ClientAuthenticationServices } from '../checks/authenticate-client.js';
import type { SigningKeys } from '../keys.js';
import { readForm } from '../http/params.js';
import { json, type Answer } from '../http/responses.js';
import { verifyOwnAccessToken } from '../tokens.js';
import type { EndpointRequest } from '../http/request.js';

const INACTIVE = { active: false } as const;

/**
 * POST /introspect (RFC 7662), for authenticated confidential callers only. A caller learns about
 * its own tokens; a resource server (a client an operator marked `canIntrospect`) about any.
 * Refresh tokens are never described, only access tokens.
 */
export async function introspectEndpoint(ctx: ClientAuthenticationServices & { keys: SigningKeys }, request: EndpointRequest): Promise<Answer> {
  const { store } = ctx;
  const params = readForm(request, ctx.config.maxBodyBytes);
  const caller = await authenticateClient(ctx, request, params);
  if (caller.tokenEndpointAuthMethod === 'none') {
    throw new OAuthError('invalid_client', 'introspection requires a confidential client', 401);
  }
  const token = params.get('token');
  if (!token) throw new OAuthError('invalid_request', 'token is required');

  const claims = await verifyOwnAccessToken(ctx, token);
  // Anything that is not one of our valid access tokens, refresh tokens included, is just inactive.
  if (!claims) return json(INACTIVE);
  if (!caller.canIntrospect && claims.client_id !== caller.clientId) return json(INACTIVE);
  // No row per token: the grant it names must stand, and the token itself must not be revoked.
  const grant = await store.getGrant(claims[GRANT_ID_CLAIM]);
  // A delegated token (token exchange) names the grant it was delegated from, another client's.
  if (!grant || grant.revokedAt !== null || (grant.clientId !== claims.client_id && claims.act === undefined)) return json(INACTIVE);
  if (await store.isAccessTokenRevoked(claims.jti)) return json(INACTIVE);
  return json({
    active: true,
    scope: claims.scope,
    client_id: claims.client_id,
    // RFC 9449 §6.2: a bound token is described with the key it is bound to.
    token_type: claims.cnf ? 'DPoP' : 'Bearer',
    exp: claims.exp,
    iat: claims.iat,
    sub: claims.sub,
    aud: claims.aud,
    iss: claims.iss,
    jti: claims.jti,
    ...(claims.cnf ? { cnf: claims.cnf } : {}),
    ...(claims.act ? { act: claims.act } : {}),
  });
}
