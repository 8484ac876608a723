import { OAuthError } from '../../core/errors.js';
import { isSubset, parseScope } from '../../core/scopes.js';
import { hashSecret, randomToken } from '../../core/secrets.js';
import type { ClientRecord, RefreshRequest, RefreshResult, SpentRefreshTokenRecord } from '../../store/store.js';
import { resolveResource } from '../checks/authorization-request.js';
import type { ServerContext } from '../context.js';
import type { Params } from '../http/params.js';
import { accessTokenExpiry, type IssuedTokens } from '../tokens.js';
import { tokenResponse } from './token-response.js';
import { upstreamTokensOfGrant } from '../upstream/session.js';

/**
 * grant_type=refresh_token (OAuth 2.1 §4.3), rotated at every use for every client (RFC 9700
 * §4.14.2). A rotated token presented again revokes its whole family, unless it comes within the
 * configured grace window (an honest client refreshing twice at once), which only refuses it.
 *
 * The usual refresh (no scope or resource asked for, no upstream sign-in behind the grant) is one
 * store call: the store checks the token and its grant and rotates it in one transaction. A
 * request that must be checked against the token or its grant first reads them, checks, then
 * makes that same call, which re-checks everything the read saw.
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
  // The new token takes the presented one's grant, client and scope in the store.
  const nextToken = randomToken(32);
  const request: RefreshRequest = {
    tokenHash,
    clientId: client.clientId,
    next: { tokenHash: hashSecret(nextToken), createdAt: now, expiresAt: now + ctx.config.refreshTokenTtl },
    accessExpiresAt: accessTokenExpiry(ctx.config, now),
    now,
    upstreamChecked: false,
  };

  const requested = parseScope(params.get('scope'));
  let result: RefreshResult;
  if (requested.length === 0 && !params.has('resource')) {
    result = await store.refreshGrant(request);
    if (result.status === 'upstream') result = await checkThenRefresh(ctx, request, result);
  } else {
    // Scope and resource are checked against the token and its grant before the token is spent.
    const record = await store.getRefreshToken(tokenHash);
    const grant = record && record.clientId === client.clientId ? await store.getGrant(record.grantId) : undefined;
    if (record && grant && grant.revokedAt === null && record.expiresAt > now) {
      if (!isSubset(requested, record.scope)) throw new OAuthError('invalid_scope', 'scope may only narrow the scope originally granted');
      if (params.has('resource') && resolveResource([params.get('resource')!], ctx.config) !== grant.resource) {
        throw new OAuthError('invalid_target', 'resource is not one this grant covers');
      }
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
      return refuseReuse(ctx, result.record, now);
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
  return ctx.config.store.refreshGrant({ ...request, upstreamChecked: true });
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
