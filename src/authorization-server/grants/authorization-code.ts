import { OAuthError } from '../../core/errors.js';
import { verifyCodeVerifier } from '../../core/pkce.js';
import { hashSecret } from '../../core/secrets.js';
import type { AuthorizationCodeRecord, ClientRecord } from '../../store/store.js';
import { resolveResource } from '../checks/authorization-request.js';
import type { ServerContext } from '../context.js';
import { requireBoundKey } from '../dpop.js';
import type { Params } from '../http/params.js';
import type { IssuedTokens } from '../tokens.js';
import { redeemCodeForTokens, type CodeKind } from './redeem-code.js';

/**
 * grant_type=authorization_code (OAuth 2.1 §4.1.3). The code is consumed first, atomically, so
 * that it is single use whatever happens next; a replay revokes the grant it produced.
 */
export async function exchangeAuthorizationCode(ctx: ServerContext, client: ClientRecord, params: Params): Promise<IssuedTokens> {
  if (!client.grantTypes.includes('authorization_code')) {
    throw new OAuthError('unauthorized_client', 'this client is not registered for the authorization_code grant');
  }
  const code = params.get('code');
  if (!code) throw new OAuthError('invalid_request', 'code is required');
  if (!params.get('code_verifier')) throw new OAuthError('invalid_request', 'code_verifier is required (PKCE)');
  // A code bound by dpop_jkt (RFC 9449 §10) is checked before it is consumed: a thief without the key does not burn it.
  requireBoundKey(code, ctx.dpopKey, 'authorization code');

  return redeemCodeForTokens(ctx, client, hashSecret(code), AUTHORIZATION_CODE, (record) => redemptionRefusal(ctx, client, params, record));
}

const AUTHORIZATION_CODE: CodeKind = {
  grantType: 'authorization_code',
  name: 'authorization code',
  expired: { error: 'invalid_grant', description: 'authorization code has expired' },
  replayedEvent: 'code_replayed',
};

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
