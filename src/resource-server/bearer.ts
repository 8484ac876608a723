/** RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=". */
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
/** The form nearly every client sends, "Bearer <token>" with nothing around it: one match, no trimming. */
const PLAIN_BEARER = /^bearer ([A-Za-z0-9\-._~+/]+=*)$/i;

export type BearerExtraction =
  | { kind: 'none' }
  | { kind: 'token'; token: string }
  | { kind: 'malformed'; reason: string };

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
