import { hashSecret, randomToken } from '../core/secrets.js';
import type { AuthorizationRequest } from '../core/protocol.js';
import type { GrantRecord } from '../store/store.js';
import type { BaseServices } from './services.js';
import { bindToKey } from './dpop.js';

/*
 * Codes are issued here, at the end of the front channel; the token endpoint redeems them
 * (grants/authorization-code.ts).
 */

/**
 * Issues a code for an approved request: the grant (the family its tokens will belong to) is
 * created now, and the code, stored only as a hash, is bound to everything it must be checked against.
 */
export async function createAuthorizationCode(
  ctx: BaseServices,
  request: AuthorizationRequest,
  userId: string,
  authTime: number,
  upstreamSessionId: string | null = null,
): Promise<string> {
  const now = ctx.now();
  // Bound by dpop_jkt: the token request must prove it holds that key (grants/authorization-code.ts).
  const code = bindToKey(randomToken(32), request.dpopJkt);
  const grant: GrantRecord = {
    id: randomToken(16),
    clientId: request.clientId,
    userId,
    scope: request.scope,
    resource: request.resource,
    authTime,
    createdAt: now,
    revokedAt: null,
    upstreamSessionId,
    accessExpiresAt: null,
  };
  // One transaction for both: one commit per approved request.
  await ctx.store.createGrant(grant, {
    codeHash: hashSecret(code),
    grantId: grant.id,
    clientId: request.clientId,
    userId,
    redirectUri: request.redirectUri,
    redirectUriProvided: request.redirectUriProvided,
    codeChallenge: request.codeChallenge,
    scope: request.scope,
    resource: request.resource,
    authTime,
    createdAt: now,
    expiresAt: now + ctx.config.codeTtl,
    consumedAt: null,
  });
  return code;
}
