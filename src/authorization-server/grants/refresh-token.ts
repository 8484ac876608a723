import { OAuthError } from '../../core/errors.js';
import { isSubset, parseScope } from '../../core/scopes.js';
import { hashSecret } from '../../core/secrets.js';
import type { ClientRecord, SpentRefreshTokenRecord } from '../../store/store.js';
import { resolveResource } from '../checks/authorization-request.js';
import type { ServerContext } from '../context.js';
import type { Params } from '../http/params.js';
import { newRefreshToken, type IssuedTokens } from '../tokens.js';
import { tokenResponse } from './token-response.js';
import { upstreamTokensOfGrant } from '../upstream/session.js';

/**
 * grant_type=refresh_token (OAuth 2.1 §4.3), rotated at every use for every client (RFC 9700
 * §4.14.2). A rotated token presented again revokes its whole family, unless it comes within the
 * configured grace window (an honest client refreshing twice at once), which only refuses it.
 */
export async function refreshAccessToken(ctx: ServerContext, client: ClientRecord, params: Params): Promise<IssuedTokens> {
  const { store, log } = ctx.config;
  if (!client.grantTypes.includes('refresh_token')) {
    throw new OAuthError('unauthorized_client', 'this client is not registered for the refresh_token grant');
  }
  const presented = params.get('refresh_token');
  if (!presented) throw new OAuthError('invalid_request', 'refresh_token is required');
  const now = ctx.config.now();
  const tokenHash = hashSecret(presented);
  const record = await store.getRefreshToken(tokenHash);
  if (!record) {
    // Rotated before? Then this is a second use. Another client's token is refused without
    // touching it, whether spent or not: presenting it proves nothing.
    const spent = await store.findSpentRefreshToken(tokenHash);
    if (spent && spent.clientId === client.clientId) return refuseReuse(ctx, spent, now);
    throw new OAuthError('invalid_grant', 'refresh token is invalid');
  }
  if (record.clientId !== client.clientId) throw new OAuthError('invalid_grant', 'refresh token is invalid');
  const grant = await store.getGrant(record.grantId);
  if (!grant || grant.revokedAt !== null) throw new OAuthError('invalid_grant', 'refresh token has been revoked');

  const requested = parseScope(params.get('scope'));
  if (!isSubset(requested, record.scope)) {
    throw new OAuthError('invalid_scope', 'scope may only narrow the scope originally granted');
  }
  const scope = requested.length > 0 ? requested : record.scope;
  if (params.has('resource') && resolveResource([params.get('resource')!], ctx.config) !== grant.resource) {
    throw new OAuthError('invalid_target', 'resource is not one this grant covers');
  }

  // Third-party authorization: a grant that rests on an upstream sign-in is honoured only while
  // the upstream still honours that sign-in (checked before the token is spent, so an upstream
  // that is down leaves the client's refresh token usable for a retry).
  if (grant.upstreamSessionId !== null) await upstreamTokensOfGrant(ctx, grant);

  // The new refresh token keeps the family's full scope (RFC 6749 §6); only the access token narrows.
  const next = newRefreshToken(ctx.config, grant, record.scope);
  const result = await store.rotateRefreshToken(record.tokenHash, next.record, now);
  switch (result.status) {
    case 'ok':
      log({ event: 'token_refreshed', client_id: client.clientId, grant_id: grant.id });
      return tokenResponse(ctx, grant, scope, next.token);
    case 'replayed':
      // A concurrent rotation of the same token won the race.
      return refuseReuse(ctx, result.record, now);
    case 'expired':
      throw new OAuthError('invalid_grant', 'refresh token has expired');
    case 'revoked':
      throw new OAuthError('invalid_grant', 'refresh token has been revoked');
    case 'missing':
      throw new OAuthError('invalid_grant', 'refresh token is invalid');
  }
}

/**
 * A rotated token presented again: the whole family is revoked (RFC 9700 §4.14.2), unless it
 * comes within the grace window of its rotation (an honest client refreshing twice at once),
 * which only refuses it.
 */
async function refuseReuse(ctx: ServerContext, spent: SpentRefreshTokenRecord, now: number): Promise<never> {
  const { store, log } = ctx.config;
  const grant = await store.getGrant(spent.grantId);
  if (!grant || grant.revokedAt !== null) throw new OAuthError('invalid_grant', 'refresh token has been revoked');
  if (now - spent.spentAt < ctx.config.refreshReuseGraceSeconds) {
    throw new OAuthError('invalid_grant', 'refresh token was just rotated; use the new one');
  }
  await ctx.revocations.revokeGrant(grant.id, now);
  log({ event: 'refresh_token_reused', client_id: grant.clientId, grant_id: grant.id });
  throw new OAuthError('invalid_grant', 'refresh token was already used; the grant is revoked');
}
