import type { AuditValue } from '../audit.js';
import { formatScope } from '../../core/scopes.js';
import { randomToken } from '../../core/secrets.js';
import type { GrantRecord } from '../../store/store.js';
import type { DpopKey } from '../dpop.js';
import type { BaseServices } from '../services.js';
import { accessTokenExpiry, issueAccessToken, type IssuedTokens, type TokenFamily, type TokenSigning } from '../tokens.js';

/** What issuing tokens needs: their signing, and the store and log where a new grant is kept and told. */
export type TokenIssuing = TokenSigning & Pick<BaseServices, 'config' | 'store' | 'log'>;

/**
 * Signs the access token for a grant, issued at `now` (its expiry already recorded on the grant),
 * bound to the request's DPoP key when it has one, and shapes the token response (RFC 6749 §5.1).
 */
export async function tokenResponse(
  signing: TokenSigning,
  grant: TokenFamily,
  scope: string[],
  now: number,
  dpopKey: DpopKey | undefined,
  refreshToken?: string,
): Promise<IssuedTokens> {
  const access = await issueAccessToken(signing, grant, scope, grant.resource, now, dpopKey);
  const body: IssuedTokens = {
    access_token: access.token,
    token_type: dpopKey ? 'DPoP' : 'Bearer',
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
  services: TokenIssuing,
  request: { now: number; dpopKey: DpopKey | undefined },
  family: Pick<GrantRecord, 'clientId' | 'userId' | 'scope' | 'resource'>,
  log: Record<string, AuditValue>,
): Promise<IssuedTokens> {
  const { now, dpopKey } = request;
  const grant: GrantRecord = {
    ...family,
    id: randomToken(16),
    authTime: null,
    createdAt: now,
    revokedAt: null,
    upstreamSessionId: null,
    accessExpiresAt: accessTokenExpiry(services.config, now),
  };
  await dpopKey?.spend();
  await services.store.createGrant(grant);
  services.log({ event: 'token_issued', ...log, client_id: grant.clientId, grant_id: grant.id });
  return tokenResponse(services, grant, grant.scope, now, dpopKey);
}
