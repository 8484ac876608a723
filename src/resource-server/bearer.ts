/** RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=". */
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
/** The form nearly every client sends, "Bearer <token>" with nothing around it: one match, no trimming. */
const PLAIN_BEARER = /^bearer ([A-Za-z0-9\-._~+/]+=*)$/i;
/** RFC 9449 §7.1: the DPoP scheme's token has the same syntax. */
const DPOP = /^dpop +([A-Za-z0-9\-._~+/]+=*) *$/i;

export type BearerExtraction = { kind: 'none' } | { kind: 'token'; token: string } | { kind: 'malformed'; reason: string };

export type AccessTokenExtraction = { kind: 'none' } | { kind: 'token'; scheme: 'bearer' | 'dpop'; token: string } | { kind: 'malformed'; reason: string };

/**
 * The access token from `Authorization: Bearer …`, the only place we take it from: never the
 * query string, never the body (spec, "Bearer token use"). Another scheme counts as no token;
 * a broken Bearer header is malformed (→ 400 invalid_request).
 */
export function extractBearer(authorization: string | null | undefined): BearerExtraction {
  if (authorization === null || authorization === undefined) return { kind: 'none' };
  const plain = PLAIN_BEARER.exec(authorization);
  if (plain) return { kind: 'token', token: plain[1]! };
  if (authorization.trim() === '') return { kind: 'none' };
  if (!/^bearer(\s|$)/i.test(authorization.trimStart())) return { kind: 'none' };
  const match = BEARER.exec(authorization.trim());
  if (!match) return { kind: 'malformed', reason: 'the Authorization header must be "Bearer <token>" with one token' };
  return { kind: 'token', token: match[1]! };
}

/**
 * The access token and its scheme: `Bearer …` as extractBearer reads it, or `DPoP …` (RFC 9449
 * §7.1), whose request must also carry a proof. Any other scheme counts as no token.
 */
export function extractAccessToken(authorization: string | null | undefined): AccessTokenExtraction {
  const bearer = extractBearer(authorization);
  if (bearer.kind === 'token') return { kind: 'token', scheme: 'bearer', token: bearer.token };
  if (bearer.kind === 'malformed' || authorization === null || authorization === undefined) return bearer;
  if (!/^dpop(\s|$)/i.test(authorization.trimStart())) return { kind: 'none' };
  const match = DPOP.exec(authorization.trim());
  if (!match) return { kind: 'malformed', reason: 'the Authorization header must be "DPoP <token>" with one token' };
  return { kind: 'token', scheme: 'dpop', token: match[1]! };
}
