import { OAuthError } from '../../core/errors.js';
import { isSubset, parseScope, withoutOfflineAccess } from '../../core/scopes.js';
import { hashSecret } from '../../core/secrets.js';
import type { ClientRecord, GrantRecord, RefreshRequest, RefreshResult, SpentRefreshTokenRecord } from '../../store/store.js';
import { resolveResource } from '../checks/authorization-request.js';
import type { ServerContext } from '../context.js';
import type { Params } from '../http/params.js';
import { requireBoundKey } from '../dpop.js';
import { accessTokenExpiry, newRefreshTokenValue, type IssuedTokens } from '../tokens.js';
import { tokenResponse } from './token-response.js';
import { upstreamTokensOfGrant } from '../upstream/session.js';

/**
 * grant_type=refresh_token (OAuth 2.1 §4.3), rotated at every use for every client (RFC 9700
 * §4.14.2). A rotated token presented again revokes its whole family, unless it comes within the
 * configured grace window (an honest client refreshing twice at once), which only refuses it, or
 * is the retry of a refresh whose answer was lost (answerSecondUse).
 *
 * The usual refresh (no scope or resource asked for, no upstream sign-in behind the grant) is one
 * store call: the store checks the token and its grant and rotates it in one transaction. A
 * request that must be checked against the token or its grant first reads them, checks, then
 * makes that same call, which re-checks everything the read saw.
 */
export async function refreshAccessToken(ctx: ServerContext, client: ClientRecord, params: Params): Promise<IssuedTokens> {
  const { store, log } = ctx;
  if (!client.grantTypes.includes('refresh_token')) {
    throw new OAuthError('unauthorized_client', 'this client is not registered for the refresh_token grant');
  }
  const presented = params.get('refresh_token');
  if (!presented) throw new OAuthError('invalid_request', 'refresh_token is required');
  // A token bound to a DPoP key is refused without that key's proof before anything is read or
  // spent, the retry of a lost answer included. The new token is bound as the request binds them:
  // to the same key, since the proof had to be made with it.
  requireBoundKey(presented, ctx.dpopKey, 'refresh token');
  const now = ctx.now();
  const tokenHash = hashSecret(presented);
  // The new token takes the presented one's grant, client and scope in the store.
  const nextToken = newRefreshTokenValue(ctx);
  const request: RefreshRequest = {
    tokenHash,
    clientId: client.clientId,
    next: { tokenHash: hashSecret(nextToken), createdAt: now, expiresAt: now + ctx.config.refreshTokenTtl },
    accessExpiresAt: accessTokenExpiry(ctx.config, now),
    now,
    upstreamChecked: false,
  };

  const requested = withoutOfflineAccess(parseScope(params.get('scope')));
  let result: RefreshResult;
  if (requested.length === 0 && !params.has('resource')) {
    result = await store.refreshGrant(request);
    if (result.status === 'upstream') result = await checkThenRefresh(ctx, request, result);
  } else {
    // Scope and resource are checked against the token and its grant before the token is spent.
    const record = await store.getRefreshToken(tokenHash);
    const grant = record && record.clientId === client.clientId ? await store.getGrant(record.grantId) : undefined;
    if (record && grant && grant.revokedAt === null && record.expiresAt > now) {
      checkScopeAndResource(ctx, params, requested, record.scope, grant);
      result = await store.refreshGrant(request);
      if (result.status === 'upstream') result = await checkThenRefresh(ctx, request, result);
    } else {
      // Whatever is wrong with it, the store says the same as on the usual path.
      result = await store.refreshGrant(request);
      if (result.status === 'ok' || result.status === 'upstream') throw new OAuthError('invalid_grant', 'refresh token is invalid');
    }
  }

  switch (result.status) {
    case 'ok': {
      log({ event: 'token_refreshed', client_id: client.clientId, grant_id: result.grant.id });
      // The new refresh token keeps the family's full scope (RFC 6749 §6); only the access token narrows.
      return tokenResponse(ctx, result.grant, requested.length > 0 ? requested : result.scope, now, nextToken);
    }
    case 'replayed':
      // Another client's spent token is refused without touching it: presenting it proves nothing.
      if (result.record.clientId !== client.clientId) throw new OAuthError('invalid_grant', 'refresh token is invalid');
      return answerSecondUse(ctx, { request, nextToken, params, requested }, result.record);
    case 'expired':
      throw new OAuthError('invalid_grant', 'refresh token has expired');
    case 'revoked':
      throw new OAuthError('invalid_grant', 'refresh token has been revoked');
    case 'foreign':
    case 'missing':
    case 'upstream':
      throw new OAuthError('invalid_grant', 'refresh token is invalid');
  }
}

/**
 * Third-party authorization: a grant that rests on an upstream sign-in is honoured only while the
 * upstream still honours that sign-in, checked before the token is spent, so an upstream that is
 * down leaves the client's refresh token usable for a retry.
 */
async function checkThenRefresh(ctx: ServerContext, request: RefreshRequest, held: Extract<RefreshResult, { status: 'upstream' }>): Promise<RefreshResult> {
  await upstreamTokensOfGrant(ctx, held.grant);
  return ctx.store.refreshGrant({ ...request, upstreamChecked: true });
}

/** The requested scope may only narrow the token's; the resource, if named, must be the grant's. */
function checkScopeAndResource(ctx: ServerContext, params: Params, requested: string[], scope: string[], grant: GrantRecord): void {
  if (!isSubset(requested, scope)) throw new OAuthError('invalid_scope', 'scope may only narrow the scope originally granted');
  if (params.has('resource') && resolveResource([params.get('resource')!], ctx.config) !== grant.resource) {
    throw new OAuthError('invalid_target', 'resource is not one this grant covers');
  }
}

/** The refresh being answered: what the store is asked, the new token in clear, and the request's scope. */
interface Refresh {
  request: RefreshRequest;
  nextToken: string;
  params: Params;
  requested: string[];
}

/**
 * A rotated token presented again by its client:
 * - within the grace window of its rotation (an honest client refreshing twice at once), refused;
 * - within the retry window, while the token it was rotated to has never been used, a retry of a
 *   refresh whose answer was lost (a crash, a dropped connection): answered with a new pair that
 *   takes the unused token's place, once. Whoever holds that token can then only present a
 *   replaced one, which revokes the family: a thief retrying first is caught at the next refresh
 *   of the client it stole from. The access token issued with the lost answer is left to expire:
 *   it was never delivered (or, if it was, its holder also holds the replaced token, presented at
 *   its next refresh), and it is refused with the family should the family be revoked;
 * - otherwise, and when a retry loses to a use of its token or its successor, a reuse: the whole
 *   family is revoked (RFC 9700 §4.14.2).
 */
async function answerSecondUse(ctx: ServerContext, refresh: Refresh, spent: SpentRefreshTokenRecord): Promise<IssuedTokens> {
  const { store, log } = ctx;
  const { refreshReuseGraceSeconds, refreshRetrySeconds } = ctx.config;
  const { request, requested } = refresh;
  const now = request.now;
  const grant = await store.getGrant(spent.grantId);
  if (!grant || grant.revokedAt !== null) throw new OAuthError('invalid_grant', 'refresh token has been revoked');
  const age = now - spent.spentAt;
  if (age < refreshReuseGraceSeconds) throw new OAuthError('invalid_grant', 'refresh token was just rotated; use the new one');
  if (spent.successorUnused && age < refreshRetrySeconds) {
    // A family's tokens carry its grant's scope. Checked, like the upstream sign-in, before anything is spent.
    checkScopeAndResource(ctx, refresh.params, requested, grant.scope, grant);
    if (grant.upstreamSessionId !== null) await upstreamTokensOfGrant(ctx, grant);
    const result = await store.retryRefresh({ ...request, upstreamChecked: true }, now - refreshRetrySeconds);
    if (result.status === 'ok') {
      log({ event: 'token_refreshed', client_id: grant.clientId, grant_id: grant.id, retry: true });
      return tokenResponse(ctx, result.grant, requested.length > 0 ? requested : result.scope, now, refresh.nextToken);
    }
  }
  await ctx.revocations.revokeGrant(grant.id, now);
  log({ event: 'refresh_token_reused', client_id: grant.clientId, grant_id: grant.id });
  throw new OAuthError('invalid_grant', 'refresh token was already used; the grant is revoked');
}
