import { OAuthError } from '../../core/errors.js';
import { isSubset, parseScope, withoutOfflineAccess } from '../../core/scopes.js';
import { hashSecret } from '../../core/secrets.js';
import { hasLegacyRefreshRetry, hasRefreshRetry, hasRefreshWithAssertion } from '../../store/capabilities.js';
import type { GrantRecord, RefreshRequest, RefreshResult, SpentRefreshTokenRecord, Store } from '../../store/store.js';
import { resolveResource } from '../checks/authorization-request.js';
import type { ResolvedConfig } from '../config.js';
import type { Params } from '../http/params.js';
import { requireBoundKey, type DpopKey } from '../dpop.js';
import { accessTokenExpiry, newRefreshTokenValue, successorKeys, successorKeysIfCached, successorRefreshTokenValue, type IssuedTokens } from '../tokens.js';
import type { TokenRequest } from './token-request.js';
import { tokenResponse, type TokenIssuing } from './token-response.js';
import { upstreamTokensOfGrant, type UpstreamGrantServices } from '../upstream/session.js';

/** What a refresh needs: issuing tokens, and checking (or ending) the upstream sign-in behind a grant. */
export type RefreshServices = TokenIssuing & UpstreamGrantServices;

/**
 * grant_type=refresh_token (OAuth 2.1 §4.3), rotated at every use for every client (RFC 9700
 * §4.14.2). A rotated token presented again revokes its whole family, unless it is a retry of its
 * rotation (an answer lost, or two sessions of one client refreshing at once), answered with the
 * same new token, or comes within the configured grace window, which only refuses it
 * (answerSecondUse).
 *
 * The new token is derived from the presented one with a server-held key (successorRefreshTokenValue),
 * so a retry can name it again without the store keeping it.
 *
 * The usual refresh (no scope or resource asked for, no upstream sign-in behind the grant) is one
 * store call: the store checks the token and its grant and rotates it in one transaction. A
 * request that must be checked against the token or its grant first reads them, checks, then
 * makes that same call, which re-checks everything the read saw.
 */
export async function refreshAccessToken(ctx: RefreshServices, tokenRequest: TokenRequest): Promise<IssuedTokens> {
  const { store, log } = ctx;
  const { client, params, dpopKey, now } = tokenRequest;
  if (!client.grantTypes.includes('refresh_token')) {
    throw new OAuthError('unauthorized_client', 'this client is not registered for the refresh_token grant');
  }
  const presented = params.get('refresh_token');
  if (!presented) throw new OAuthError('invalid_request', 'refresh_token is required');
  // A token bound to a DPoP key is refused without that key's proof before anything is read or
  // spent, a retry included. The new token is bound as the request binds them: to the same key,
  // since the proof had to be made with it; so a retry derives the same token only if it binds
  // as the refresh did.
  requireBoundKey(presented, dpopKey, 'refresh token');
  const tokenHash = hashSecret(presented);
  // The new token takes the presented one's grant, client and scope in the store.
  const nextToken = successorRefreshTokenValue(dpopKey, presented, (successorKeysIfCached(ctx.keys) ?? (await successorKeys(ctx.keys)))[0]!);
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
    result = await refreshInStore(store, request, dpopKey);
    if (result.status === 'upstream') result = await checkThenRefresh(ctx, request, result);
  } else {
    // Scope and resource are checked against the token and its grant before the token is spent.
    const record = await store.getRefreshToken(tokenHash);
    const grant = record && record.clientId === client.clientId ? await store.getGrant(record.grantId) : undefined;
    if (record && grant && grant.revokedAt === null && record.expiresAt > now) {
      checkScopeAndResource(ctx.config, params, requested, record.scope, grant);
      result = await refreshInStore(store, request, dpopKey);
      if (result.status === 'upstream') result = await checkThenRefresh(ctx, request, result);
    } else {
      // Whatever is wrong with it, the store says the same as on the usual path.
      result = await refreshInStore(store, request, dpopKey);
      if (result.status === 'ok' || result.status === 'upstream') throw new OAuthError('invalid_grant', 'refresh token is invalid');
    }
  }

  switch (result.status) {
    case 'ok': {
      log({ event: 'token_refreshed', client_id: client.clientId, grant_id: result.grant.id });
      // The new refresh token keeps the family's full scope (RFC 6749 §6); only the access token narrows.
      return tokenResponse(ctx, result.grant, requested.length > 0 ? requested : result.scope, now, dpopKey, nextToken);
    }
    case 'replayed':
      // Another client's spent token is refused without touching it: presenting it proves nothing.
      if (result.record.clientId !== client.clientId) throw new OAuthError('invalid_grant', 'refresh token is invalid');
      return answerSecondUse(ctx, { request, presented, params, requested, dpopKey }, result.record);
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
 * The store's refresh, which spends the request's DPoP proof in its own transaction where the
 * store can (one commit for both): a proof used before is then refused before the token is
 * spent, and a fresh one is spent whatever the refresh's outcome. Elsewhere the token endpoint
 * spent the proof before the grant ran.
 */
function refreshInStore(store: Store, request: RefreshRequest, dpopKey: DpopKey | undefined): Promise<RefreshResult> {
  if (!dpopKey || !hasRefreshWithAssertion(store)) return store.refreshGrant(request);
  return dpopKey.spendWithin(
    (record) => store.refreshGrantWithAssertion(request, record),
    () => store.refreshGrant(request),
  );
}

/**
 * Third-party authorization: a grant that rests on an upstream sign-in is honoured only while the
 * upstream still honours that sign-in, checked before the token is spent, so an upstream that is
 * down leaves the client's refresh token usable for a retry.
 */
async function checkThenRefresh(
  ctx: UpstreamGrantServices,
  request: RefreshRequest,
  held: Extract<RefreshResult, { status: 'upstream' }>,
): Promise<RefreshResult> {
  await upstreamTokensOfGrant(ctx, held.grant);
  return ctx.store.refreshGrant({ ...request, upstreamChecked: true });
}

/** The requested scope may only narrow the token's; the resource, if named, must be the grant's. */
function checkScopeAndResource(config: ResolvedConfig, params: Params, requested: string[], scope: string[], grant: GrantRecord): void {
  if (!isSubset(requested, scope)) throw new OAuthError('invalid_scope', 'scope may only narrow the scope originally granted');
  if (params.has('resource') && resolveResource([params.get('resource')!], config) !== grant.resource) {
    throw new OAuthError('invalid_target', 'resource is not one this grant covers');
  }
}

/** The refresh being answered: what the store is asked, the token presented, and the request's scope. */
interface Refresh {
  request: RefreshRequest;
  presented: string;
  params: Params;
  requested: string[];
  dpopKey: DpopKey | undefined;
}

/**
 * A rotated token presented again by its client:
 * - within the retry window of its rotation, while the token it was rotated to (its successor)
 *   has never been used: a retry of the rotation (its answer lost to a crash or a dropped
 *   connection, or two sessions of one client that share their credentials refreshing at once),
 *   answered with that same successor and a new access token. Every such retry gets the same
 *   token, so whichever answer a session keeps, its next refresh works. A thief holding the spent
 *   token gets the live one too, as the victim holds it: from then on, whichever of the two
 *   presents that token second, after the other used it or after the window, presents a spent
 *   token whose successor was used, and the family is revoked;
 * - otherwise, within the grace window of its rotation, refused without revoking;
 * - otherwise a reuse: the whole family is revoked (RFC 9700 §4.14.2).
 */
async function answerSecondUse(ctx: RefreshServices, refresh: Refresh, spent: SpentRefreshTokenRecord): Promise<IssuedTokens> {
  const { store, log } = ctx;
  const { refreshReuseGraceSeconds, refreshRetrySeconds } = ctx.config;
  const now = refresh.request.now;
  const grant = await store.getGrant(spent.grantId);
  if (!grant || grant.revokedAt !== null) throw new OAuthError('invalid_grant', 'refresh token has been revoked');
  const age = now - spent.spentAt;
  if (spent.successorUnused && age < refreshRetrySeconds) {
    // A family's tokens carry its grant's scope. Checked, like the upstream sign-in, before the grant is touched.
    checkScopeAndResource(ctx.config, refresh.params, refresh.requested, grant.scope, grant);
    if (grant.upstreamSessionId !== null) await upstreamTokensOfGrant(ctx, grant);
    const answer = await answerRetry(ctx, refresh, now - refreshRetrySeconds);
    if (answer) {
      log({ event: 'token_refreshed', client_id: grant.clientId, grant_id: grant.id, retry: true });
      return answer;
    }
  }
  if (age < refreshReuseGraceSeconds) throw new OAuthError('invalid_grant', 'refresh token was just rotated; use the new one');
  await ctx.revocations.revokeGrant(grant.id, now);
  log({ event: 'refresh_token_reused', client_id: grant.clientId, grant_id: grant.id });
  throw new OAuthError('invalid_grant', 'refresh token was already used; the grant is revoked');
}

/**
 * The retry's answer, or undefined when the store refuses it: its successor used meanwhile, the
 * grant revoked, or a successor not derived from the presented token under a key the server
 * still holds with the binding this request gives (a key retired since, another DPoP key).
 * The successor is derived again under each key the server holds, since a key rotation may have
 * come between the rotation and its retry; the store confirms the one its spent record names.
 * A store without the refreshRetry capability but written before it replaces the successor with
 * a new token instead (retryRefresh): then only the last answer's token stays usable.
 */
async function answerRetry(ctx: RefreshServices, refresh: Refresh, spentAfter: number): Promise<IssuedTokens | undefined> {
  const { store } = ctx;
  const { request, requested, dpopKey } = refresh;
  const { now } = request;
  const upstreamChecked = true;
  let token: string;
  let result: RefreshResult;
  if (hasRefreshRetry(store)) {
    const successors = (await successorKeys(ctx.keys)).map((key) => successorRefreshTokenValue(dpopKey, refresh.presented, key));
    const hashes = successors.map(hashSecret);
    const { tokenHash, clientId, accessExpiresAt } = request;
    const repeated = await store.repeatRefresh({ tokenHash, clientId, successorHashes: hashes, spentAfter, accessExpiresAt, now, upstreamChecked });
    if (repeated.status !== 'ok') return undefined;
    token = successors[hashes.indexOf(repeated.successorHash)]!;
    result = repeated;
  } else if (hasLegacyRefreshRetry(store)) {
    token = newRefreshTokenValue(dpopKey);
    result = await store.retryRefresh({ ...request, next: { ...request.next, tokenHash: hashSecret(token) }, upstreamChecked }, spentAfter);
  } else {
    return undefined;
  }
  if (result.status !== 'ok') return undefined;
  return tokenResponse(ctx, result.grant, requested.length > 0 ? requested : result.scope, now, dpopKey, token);
}
