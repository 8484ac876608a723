import { OAuthError } from '../../core/errors.js';
import { GRANT_ID_CLAIM } from '../../core/revocation-set.js';
import { OPENID, parseScope } from '../../core/scopes.js';
import { bearerChallenge, type BearerChallenge } from '../../core/www-authenticate.js';
import type { EndpointRequest } from '../http/request.js';
import { json, type Answer } from '../http/responses.js';
import type { SigningKeys } from '../keys.js';
import type { BaseServices } from '../services.js';
import { verifyOwnAccessToken } from '../tokens.js';

/**
 * GET and POST /userinfo (OpenID Connect Core §5.3): who the person behind an access token of ours
 * granted `openid` is — `sub` as in our tokens, with `profile` their username, with `email` the
 * email an upstream provider gave for them. The token comes as a bearer token in the
 * `Authorization` header (RFC 6750 §2.1), for any of the resources we issue tokens for: it is our
 * own, checked as introspection checks it. Refusals carry the RFC 6750 §3 challenge.
 */
export async function userinfoEndpoint(ctx: Pick<BaseServices, 'config' | 'store' | 'now'> & { keys: SigningKeys }, request: EndpointRequest): Promise<Answer> {
  const authorization = request.headers.authorization;
  // RFC 6750 §3.1: a request with no credentials gets the challenge without an error code.
  if (authorization === null) throw refusal({}, 'invalid_request', 'an access token is required (Authorization: Bearer)', 401);
  const match = /^bearer ([A-Za-z0-9\-._~+/]+=*)$/i.exec(authorization);
  if (!match) throw refusal({ error: 'invalid_request' }, 'invalid_request', 'the Authorization header must be Bearer and one access token', 400);
  const claims = await verifyOwnAccessToken(ctx, match[1]!);
  if (!claims) throw invalidToken('the access token is not one this server issued, or it has expired');
  // A bound token is used only with a proof of its key (RFC 9449 §7.1), which this endpoint does not take.
  if (claims.cnf) throw invalidToken('the access token is bound to a DPoP key; the userinfo endpoint takes bearer tokens only');
  const grant = await ctx.store.getGrant(claims[GRANT_ID_CLAIM]);
  if (!grant || grant.revokedAt !== null || (await ctx.store.isAccessTokenRevoked(claims.jti))) throw invalidToken('the access token has been revoked');
  const scope = parseScope(claims.scope);
  if (!scope.includes(OPENID) || grant.userId === null || claims.sub !== grant.userId) {
    throw refusal({ error: 'insufficient_scope', scope: OPENID }, 'insufficient_scope', 'the access token was not granted openid', 403);
  }
  const body: Record<string, unknown> = { sub: claims.sub };
  if (scope.includes('profile')) {
    const user = await ctx.store.getUser({ id: grant.userId });
    if (user) body.preferred_username = user.username;
  }
  if (scope.includes('email')) {
    const email = (await ctx.store.listUserIdentities({ userId: grant.userId })).find((identity) => identity.email !== null)?.email;
    if (email) body.email = email;
  }
  return json(body);
}

function invalidToken(description: string): OAuthError {
  return refusal({ error: 'invalid_token' }, 'invalid_token', description, 401);
}

function refusal(
  challenge: BearerChallenge,
  code: 'invalid_request' | 'invalid_token' | 'insufficient_scope',
  description: string,
  status: number,
): OAuthError {
  const header = bearerChallenge(challenge.error === undefined ? challenge : { ...challenge, errorDescription: description });
  return new OAuthError(code, description, status, { 'WWW-Authenticate': header });
}
