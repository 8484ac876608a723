import { randomBytes } from 'node:crypto';
import type { VerifiedToken } from '../resource-server/index.js';

/** How long a token the gateway signs for an upstream lives at most, in seconds. */
export const UPSTREAM_TOKEN_SECONDS = 300;

/** Signs claims with the authorization server's current key (published in its JWKS). */
export type ClaimsSigner = (claims: Record<string, unknown>) => Promise<string>;

/**
 * The claims of a token for the upstream, made from the person's verified token: the same
 * subject, client and scopes, issued by us for the upstream's own audience, so it is worthless
 * at any other server and at this gateway. `act` names the gateway as the party acting for the
 * subject (RFC 8693 §4.1); `original_jti` ties it to the token it was made from, for audits on
 * both sides. It never outlives the person's token.
 */
export function upstreamTokenClaims(auth: VerifiedToken, input: { issuer: string; audience: string; gateway: string; now: number }): Record<string, unknown> {
  const exp = Math.min(input.now + UPSTREAM_TOKEN_SECONDS, auth.expiresAt);
  const originalJti = typeof auth.claims.jti === 'string' ? auth.claims.jti : undefined;
  return {
    iss: input.issuer,
    sub: auth.subject,
    aud: input.audience,
    client_id: auth.clientId,
    scope: auth.scopes.join(' '),
    iat: input.now,
    exp,
    jti: randomBytes(16).toString('base64url'),
    act: { sub: input.gateway },
    ...(originalJti === undefined ? {} : { original_jti: originalJti }),
  };
}
