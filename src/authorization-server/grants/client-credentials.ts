import { OAuthError } from '../../core/errors.js';
import { parseScope, resolveScope } from '../../core/scopes.js';
import { allowedScopes, machineScopeNote, resolveResource } from '../checks/authorization-request.js';
import type { IssuedTokens } from '../tokens.js';
import type { TokenRequest } from './token-request.js';
import { issueSingleAccessToken, type TokenIssuing } from './token-response.js';

/** grant_type=client_credentials (OAuth 2.1 §4.2): confidential clients only, no refresh token. */
export async function clientCredentialsGrant(ctx: TokenIssuing, request: TokenRequest): Promise<IssuedTokens> {
  const { client, params } = request;
  // Confidential: a secret, or a key pair for private_key_jwt (whose assertion was checked already).
  const confidential = client.tokenEndpointAuthMethod === 'private_key_jwt' || (client.tokenEndpointAuthMethod !== 'none' && client.clientSecretHash !== null);
  if (!confidential) {
    throw new OAuthError('unauthorized_client', 'client_credentials is for confidential clients only');
  }
  if (!client.grantTypes.includes('client_credentials')) {
    throw new OAuthError('unauthorized_client', 'this client is not registered for the client_credentials grant');
  }
  const scope = resolveScope(
    parseScope(params.get('scope')),
    allowedScopes(client, ctx.config, 'client'),
    ctx.config.defaultScopes,
    machineScopeNote(client, ctx.config),
  );
  const resource = resolveResource(params.has('resource') ? [params.get('resource')!] : [], ctx.config);
  return issueSingleAccessToken(ctx, request, { clientId: client.clientId, userId: null, scope, resource }, { grant_type: 'client_credentials' });
}
