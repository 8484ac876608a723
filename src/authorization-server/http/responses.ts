/**
 * What endpoints answer: plain data (status, headers, cookies, body), which the route turns into
 * a Response in one place (`toWebResponse`), as the resource server's guard answers a Denial.
 */

/** Token-family responses must never be cached (RFC 6749 §5.1, OAuth 2.1 §3.2.3). */
export const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' } as const;

export interface Answer {
  status: number;
  headers: Record<string, string>;
  /** Set-Cookie values, one header each (the header may repeat, which a plain object cannot hold). */
  cookies: readonly string[];
  body: string | null;
}

const NO_COOKIES: readonly string[] = Object.freeze([]);

/** An answer from a string body and a plain header object. */
export function respond(body: string | null, status: number, headers: Record<string, string>): Answer {
  return { status, headers, cookies: NO_COOKIES, body };
}

/** The answer with more headers (route() adds CORS this way). */
export function withHeaders(answer: Answer, headers: Record<string, string>): Answer {
  // Object.assign, not spread: spreading the 8-odd hyphenated header names of a CORS token response
  // into a new literal takes V8's property-by-property slow path (docs/performance.md).
  return { status: answer.status, headers: Object.assign({}, answer.headers, headers), cookies: answer.cookies, body: answer.body };
}

/** The answer with cookies set. */
export function withCookies(answer: Answer, cookies: readonly string[]): Answer {
  return cookies.length === 0 ? answer : { ...answer, cookies: [...answer.cookies, ...cookies] };
}

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Answer {
  return respond(JSON.stringify(body), status, { 'Content-Type': 'application/json', ...NO_STORE, ...headers });
}

/**
 * 303 to a URL, with optional cookies: the shape of every browser hop here. 303 so that a form
 * POST is followed by a GET; no referrer, so the URL we came from (with its code) stays ours.
 */
export function seeOther(location: string, cookies: readonly string[] = NO_COOKIES): Answer {
  // An empty string body, not null: @hono/node-server writes a string body at once with its length,
  // but streams a null one (chunked, after a timer tick), which stalled every redirect.
  return { status: 303, headers: { Location: location, 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' }, cookies, body: '' };
}

/**
 * The one place an answer becomes a Response. Without cookies, a plain header object, which
 * @hono/node-server hands to writeHead as it is; pairs (Set-Cookie may repeat) cost it a Headers
 * object built and read back.
 */
export function toWebResponse(answer: Answer): Response {
  if (answer.cookies.length === 0) return new Response(answer.body, { status: answer.status, headers: answer.headers });
  const headers: [string, string][] = Object.entries(answer.headers);
  for (const cookie of answer.cookies) headers.push(['Set-Cookie', cookie]);
  return new Response(answer.body, { status: answer.status, headers });
}
