/**
 * OpenID Connect ID tokens (Core §2): issued beside the access token when `openid` is granted, for
 * the client to learn who signed in, and taken back by token exchange as the subject of an ID-JAG.
 * Signed with our signing keys under `typ: JWT`, so none passes for an access token (`at+jwt`) or
 * an ID-JAG, and none of those for an ID token.
 */
import { jwtHeaderProblem, jwtSigner, jwtTimeProblem, parseCompactJwt, verifyJwtSignature } from '../core/jwt.js';
import { GRANT_ID_CLAIM } from '../core/revocation-set.js';
import type { BaseServices } from './services.js';
import type { TokenSigning } from './tokens.js';

/** How long an ID token is good for: it says who signed in at that moment, and is presented at once. */
export const ID_TOKEN_LIFETIME_SECONDS = 600;

const ID_TOKEN_TYP = 'JWT';

/** What an ID token says: who signed in (`sub`), to which client (`aud`), and when. */
export interface IdTokenSubject {
  /** The grant it was issued with: token exchange finds the person's consent through it, and refuses it once revoked. */
  grantId: string;
  userId: string;
  clientId: string;
  /** When the person signed in (Core §2 `auth_time`); null when we do not know. */
  authTime: number | null;
  /** The authorization request's nonce, echoed exactly (Core §3.1.3.6); null when it had none. */
  nonce: string | null;
}

export async function issueIdToken(signing: TokenSigning, subject: IdTokenSubject, now: number): Promise<string> {
  const key = signing.keys.currentIfCached() ?? (await signing.keys.current());
  const claims: Record<string, unknown> = {
    iss: signing.config.issuer,
    sub: subject.userId,
    aud: subject.clientId,
    azp: subject.clientId,
    iat: now,
    exp: now + ID_TOKEN_LIFETIME_SECONDS,
    [GRANT_ID_CLAIM]: subject.grantId,
  };
  if (subject.authTime !== null) claims.auth_time = subject.authTime;
  if (subject.nonce !== null) claims.nonce = subject.nonce;
  return jwtSigner({ alg: key.alg, kid: key.kid, typ: ID_TOKEN_TYP }, key.key)(claims);
}

/** Why an ID token presented to us is refused, for the caller's description. */
export type IdTokenRefusal = 'not_ours' | 'expired' | 'other_client';

/**
 * Verifies an ID token of ours presented by `clientId`: signed by one of our published keys, our
 * issuer, unexpired, and issued to that client (`aud`, and `azp` when present). Whether its grant
 * still stands is the caller's to check.
 */
export async function verifyOwnIdToken(
  ctx: Pick<BaseServices, 'config' | 'now'> & Pick<TokenSigning, 'keys'>,
  token: string,
  clientId: string,
): Promise<{ ok: true; sub: string; grantId: string } | { ok: false; refusal: IdTokenRefusal }> {
  const jwt = parseCompactJwt(token);
  if (!jwt || jwtHeaderProblem(jwt.header, { typ: ID_TOKEN_TYP }) || typeof jwt.header.kid !== 'string') return { ok: false, refusal: 'not_ours' };
  const key = await ctx.keys.verificationKey(jwt.header.kid);
  if (!key || !verifyJwtSignature(jwt, key)) return { ok: false, refusal: 'not_ours' };
  const { claims } = jwt;
  const grantId = claims[GRANT_ID_CLAIM];
  if (claims.iss !== ctx.config.issuer || typeof claims.sub !== 'string' || typeof grantId !== 'string') return { ok: false, refusal: 'not_ours' };
  const time = jwtTimeProblem(claims, ctx.now(), 0);
  if (time === 'expired') return { ok: false, refusal: 'expired' };
  if (time !== undefined) return { ok: false, refusal: 'not_ours' };
  if (claims.aud !== clientId || (claims.azp !== undefined && claims.azp !== clientId)) return { ok: false, refusal: 'other_client' };
  return { ok: true, sub: claims.sub, grantId };
}
