import { OAuthError } from '../../core/errors.js';
import { verifyCodeVerifier } from '../../core/pkce.js';
import { hashSecret } from '../../core/secrets.js';
import type { AuthorizationCodeRecord } from '../../store/store.js';
import { resolveResource } from '../checks/authorization-request.js';
import type { ResolvedConfig } from '../config.js';
import { requireBoundKey } from '../dpop.js';
import type { IssuedTokens } from '../tokens.js';
import { redeemCodeForTokens, type CodeKind, type CodeRedemption } from './redeem-code.js';
import type { TokenRequest } from './token-request.js';

/**
 * grant_type=authorization_code (OAuth 2.1 §4.1.3). The code is consumed first, atomically, so
 * that it is single use whatever happens next; a replay revokes the grant it produced.
 */
export async function exchangeAuthorizationCode(ctx: CodeRedemption, request: TokenRequest): Promise<IssuedTokens> {
  const { client, params } = request;
  if (!client.grantTypes.includes('authorization_code')) {
    throw new OAuthError('unauthorized_client', 'this client is not registered for the authorization_code grant');
  }
  const code = params.get('code');
  if (!code) throw new OAuthError('invalid_request', 'code is required');
  if (!params.get('code_verifier')) throw new OAuthError('invalid_request', 'code_verifier is required (PKCE)');
  // A code bound by dpop_jkt (RFC 9449 §10) is checked before it is consumed: a thief without the key does not burn it.
  requireBoundKey(code, request.dpopKey, 'authorization code');

  return redeemCodeForTokens(ctx, request, hashSecret(code), AUTHORIZATION_CODE, (record) => redemptionRefusal(ctx.config, request, record));
}

const AUTHORIZATION_CODE: CodeKind = {
  grantType: 'authorization_code',
  name: 'authorization code',
  expired: { error: 'invalid_grant', description: 'authorization code has expired' },
  replayedEvent: 'code_replayed',
};

/** Why a consumed code may not be redeemed by this request, if it may not (returned, not thrown: the code stays used). */
function redemptionRefusal(config: ResolvedConfig, { client, params }: TokenRequest, record: AuthorizationCodeRecord): OAuthError | undefined {
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
    resource = params.has('resource') ? resolveResource([params.get('resource')!], config) : record.resource;
  } catch (error) {
    if (error instanceof OAuthError) return error;
    throw error;
  }
  if (resource !== record.resource) return new OAuthError('invalid_target', 'resource differs from the one the code was issued for');
  return undefined;
}
