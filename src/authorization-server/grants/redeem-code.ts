import type { AuditEventName } from '../audit.js';
import { OAuthError, type OAuthErrorCode } from '../../core/errors.js';
import type { AuthorizationCodeRecord } from '../../store/store.js';
import type { Revocations } from '../revocations.js';
import type { IssuedTokens, TokenFamily } from '../tokens.js';
import { accessTokenExpiry, newRefreshToken } from '../tokens.js';
import type { TokenRequest } from './token-request.js';
import { tokenResponse, type TokenIssuing } from './token-response.js';

/** What redeeming a code needs: issuing tokens, and revoking what a replayed code produced. */
export type CodeRedemption = TokenIssuing & { revocations: Revocations };

/** What tells the two kinds of code apart in answers and logs: an authorization code, or an approved device code. */
export interface CodeKind {
  grantType: string;
  /** How answers name it: 'authorization code', 'device_code'. */
  name: string;
  /** The error an expired one gets, and what it says. */
  expired: { error: OAuthErrorCode; description: string };
  /** The audit event of a second redemption. */
  replayedEvent: AuditEventName;
}

/**
 * Redeems a code and answers with its tokens. The code is consumed first, atomically, so that it
 * is single use whatever happens next; `refusal` then runs inside the store's transaction, and a
 * redemption it refuses still uses the code up. A replay revokes the grant the code produced.
 */
export async function redeemCodeForTokens(
  ctx: CodeRedemption,
  request: TokenRequest,
  codeHash: string,
  kind: CodeKind,
  refusal: (record: AuthorizationCodeRecord) => OAuthError | undefined,
): Promise<IssuedTokens> {
  const { client, now, dpopKey } = request;
  let refused: OAuthError | undefined;
  let grant: TokenFamily | undefined;
  let refresh: ReturnType<typeof newRefreshToken> | undefined;
  const result = await ctx.store.redeemAuthorizationCode(codeHash, now, (record) => {
    refused = refusal(record);
    if (refused) return undefined;
    // The store consumed the code only while its grant stood, so the grant needs no second read
    // here; a concurrent replay revoking it from now on revokes the tokens issued with it (their
    // expiry is recorded on the grant, or lengthens its recorded revocation).
    grant = { id: record.grantId, clientId: record.clientId, userId: record.userId, scope: record.scope, resource: record.resource, authTime: record.authTime };
    refresh = client.grantTypes.includes('refresh_token') ? newRefreshToken(ctx.config, grant, grant.scope, now, dpopKey) : undefined;
    return { accessExpiresAt: accessTokenExpiry(ctx.config, now), refreshToken: refresh?.record };
  });
  if (result.status === 'replayed') {
    await ctx.revocations.revokeGrant(result.record.grantId, now);
    ctx.log({ event: kind.replayedEvent, client_id: result.record.clientId, grant_id: result.record.grantId });
    throw new OAuthError('invalid_grant', `${kind.name} was already used; the tokens it produced are revoked`);
  }
  if (result.status === 'expired') throw new OAuthError(kind.expired.error, kind.expired.description);
  // Withdrawn consent (or an operator) revoked the grant after the code was issued.
  if (result.status === 'revoked') throw new OAuthError('invalid_grant', 'the authorization was revoked');
  if (result.status === 'missing') throw new OAuthError('invalid_grant', `${kind.name} is invalid`);
  if (refused) throw refused;
  if (!grant) throw new Error('the store consumed the code without asking what to issue');
  ctx.log({ event: 'token_issued', grant_type: kind.grantType, client_id: client.clientId, grant_id: grant.id });
  return tokenResponse(ctx, grant, grant.scope, now, dpopKey, refresh?.token);
}
