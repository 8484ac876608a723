import type { AuditValue } from '../audit.js';
import { formatScope } from '../../core/scopes.js';
import { randomToken } from '../../core/secrets.js';
import type { GrantRecord } from '../../store/store.js';
import type { ServerContext } from '../context.js';
import { accessTokenExpiry, issueAccessToken, type IssuedTokens, type TokenFamily } from '../tokens.js';

/**
 * Signs the access token for a grant, issued at `now` (its expiry already recorded on the grant),
 * and shapes the token response (RFC 6749 §5.1).
 */
export async function tokenResponse(ctx: ServerContext, grant: TokenFamily, scope: string[], now: number, refreshToken?: string): Promise<IssuedTokens> {
  const access = await issueAccessToken(ctx, grant, scope, grant.resource, now);
  const body: IssuedTokens = {
    access_token: access.token,
    token_type: ctx.dpopKey ? 'DPoP' : 'Bearer',
    expires_in: access.expiresIn,
    scope: formatScope(scope),
  };
  if (refreshToken !== undefined) body.refresh_token = refreshToken;
  return body;
}

/**
 * A grant whose one access token is issued now, with no refresh token (client credentials, the
 * jwt-bearer grant): the grant is created with the token's expiry in the same write, logged as
 * `token_issued` with `log`'s fields (never a token), and answered. The request's DPoP proof is
 * spent first, if it is not yet (a workload's request, which only the grant authenticates): a
 * replayed one leaves no grant behind.
 */
export async function issueSingleAccessToken(
  ctx: ServerContext,
  family: Pick<GrantRecord, 'clientId' | 'userId' | 'scope' | 'resource'>,
  now: number,
  log: Record<string, AuditValue>,
): Promise<IssuedTokens> {
  const grant: GrantRecord = {
    ...family,
    id: randomToken(16),
    authTime: null,
    createdAt: now,
    revokedAt: null,
    upstreamSessionId: null,
    accessExpiresAt: accessTokenExpiry(ctx.config, now),
  };
  await ctx.dpopKey?.spend();
  await ctx.store.createGrant(grant);
  ctx.log({ event: 'token_issued', ...log, client_id: grant.clientId, grant_id: grant.id });
  return tokenResponse(ctx, grant, grant.scope, now);
}
