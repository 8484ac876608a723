import { formatScope } from '../../core/scopes.js';
import type { ServerContext } from '../context.js';
import { issueAccessToken, type IssuedTokens, type TokenFamily } from '../tokens.js';

/**
 * Signs the access token for a grant, issued at `now` (its expiry already recorded on the grant),
 * and shapes the token response (RFC 6749 §5.1).
 */
export async function tokenResponse(ctx: ServerContext, grant: TokenFamily, scope: string[], now: number, refreshToken?: string): Promise<IssuedTokens> {
  const access = await issueAccessToken(ctx, grant, scope, grant.resource, now);
  const body: IssuedTokens = {
    access_token: access.token,
    token_type: 'Bearer',
    expires_in: access.expiresIn,
    scope: formatScope(scope),
  };
  if (refreshToken !== undefined) body.refresh_token = refreshToken;
  return body;
}
