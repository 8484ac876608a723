import { OAuthError } from '../../core/errors.js';
import { verifyCodeVerifier } from '../../core/pkce.js';
import { hashSecret } from '../../core/secrets.js';
import type { AuthorizationCodeRecord, ClientRecord } from '../../store/store.js';
import { resolveResource } from '../checks/authorization-request.js';
import type { ServerContext } from '../context.js';
import { requireBoundKey } from '../dpop.js';
import type { Params } from '../http/params.js';
import type { IssuedTokens, TokenFamily } from '../tokens.js';
import { accessTokenExpiry, newRefreshToken } from '../tokens.js';
import { tokenResponse } from './token-response.js';

/**
 * grant_type=authorization_code (OAuth 2.1 §4.1.3). The code is consumed first, atomically, so
 * that it is single use whatever happens next; a replay revokes the grant it produced.
 */
export async function exchangeAuthorizationCode(ctx: ServerContext, client: ClientRecord, params: Params): Promise<IssuedTokens> {
  const { store, log } = ctx;
  if (!client.grantTypes.includes('authorization_code')) {
    throw new OAuthError('unauthorized_client', 'this client is not registered for the authorization_code grant');
  }
  const code = params.get('code');
  if (!code) throw new OAuthError('invalid_request', 'code is required');
  if (!params.get('code_verifier')) throw new OAuthError('invalid_request', 'code_verifier is required (PKCE)');
  // A code bound by dpop_jkt (RFC 9449 §10) is checked before it is consumed: a thief without the key does not burn it.
  requireBoundKey(code, ctx.dpopKey, 'authorization code');

  const now = ctx.now();
  // The checks run inside the store's transaction, after the code is consumed: a refused
  // redemption still uses the code up, and an accepted one commits with its tokens, once.
  let refused: OAuthError | undefined;
  let grant: TokenFamily | undefined;
  let refresh: ReturnType<typeof newRefreshToken> | undefined;
  const result = await store.redeemAuthorizationCode(hashSecret(code), now, (record) => {
    refused = redemptionRefusal(ctx, client, params, record);
    if (refused) return undefined;
    // The store consumed the code only while its grant stood, so the grant needs no second read
    // here; a concurrent replay revoking it from now on revokes the tokens issued with it (their
    // expiry is recorded on the grant, or lengthens its recorded revocation).
    grant = { id: record.grantId, clientId: record.clientId, userId: record.userId, scope: record.scope, resource: record.resource, authTime: record.authTime };
    refresh = client.grantTypes.includes('refresh_token') ? newRefreshToken(ctx, grant, grant.scope) : undefined;
    return { accessExpiresAt: accessTokenExpiry(ctx.config, now), refreshToken: refresh?.record };
  });
  if (result.status === 'replayed') {
    await ctx.revocations.revokeGrant(result.record.grantId, now);
    log({ event: 'code_replayed', client_id: result.record.clientId, grant_id: result.record.grantId });
    throw new OAuthError('invalid_grant', 'authorization code was already used; the tokens it produced are revoked');
  }
  if (result.status === 'expired') throw new OAuthError('invalid_grant', 'authorization code has expired');
  // Withdrawn consent (or an operator) revoked the grant after the code was issued.
  if (result.status === 'revoked') throw new OAuthError('invalid_grant', 'the authorization was revoked');
  if (result.status === 'missing') throw new OAuthError('invalid_grant', 'authorization code is invalid');
  if (refused) throw refused;
  if (!grant) throw new Error('the store consumed the code without asking what to issue');
  log({ event: 'token_issued', grant_type: 'authorization_code', client_id: client.clientId, grant_id: grant.id });
  return tokenResponse(ctx, grant, grant.scope, now, refresh?.token);
}

/** Why a consumed code may not be redeemed by this request, if it may not (returned, not thrown: the code stays used). */
function redemptionRefusal(ctx: ServerContext, client: ClientRecord, params: Params, record: AuthorizationCodeRecord): OAuthError | undefined {
  if (record.clientId !== client.clientId) return new OAuthError('invalid_grant', 'authorization code was issued to another client');
  // Required when the authorization request had it; when it did not, one sent anyway must still match.
  if ((record.redirectUriProvided || params.has('redirect_uri')) && params.get('redirect_uri') !== record.redirectUri) {
    return new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request');
  }
  if (!verifyCodeVerifier(params.get('code_verifier'), record.codeChallenge)) {
    return new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
  }
  let resource: string;
  try {
    resource = params.has('resource') ? resolveResource([params.get('resource')!], ctx.config) : record.resource;
  } catch (error) {
    if (error instanceof OAuthError) return error;
    throw error;
  }
  if (resource !== record.resource) return new OAuthError('invalid_target', 'resource differs from the one the code was issued for');
  return undefined;
}
