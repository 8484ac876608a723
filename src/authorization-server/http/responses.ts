/** Token-family responses must never be cached (RFC 6749 §5.1, OAuth 2.1 §3.2.3). */
export const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' } as const;

interface Parts {
  body: string | null;
  status: number;
  headers: Record<string, string>;
}

/**
 * What a response built by `respond` was built from, so `withHeaders` can build it again. A
 * property rather than a WeakMap entry: weak entries for short-lived objects cost the collector.
 */
const PARTS = Symbol('parts');
type Built = Response & { [PARTS]?: Parts };

/**
 * A response from a string body and a plain header object: the shape @hono/node-server writes
 * to the socket directly, without web streams or a Headers object.
 */
export function respond(body: string | null, status: number, headers: Record<string, string>): Response {
  const response: Built = new Response(body, { status, headers });
  response[PARTS] = { body, status, headers };
  return response;
}

/**
 * The response with more headers (route() adds CORS this way). One built by `respond` is built
 * again from its parts. Setting headers on it instead is lost under @hono/node-server once the body
 * is read (its lazy Response rebuilds from what it was given); copying its stream
 * (`new Response(response.body, response)`) costs the adapter its fast path. Any other response is
 * copied.
 */
export function withHeaders(response: Response, headers: Record<string, string>): Response {
  const parts = (response as Built)[PARTS];
  // Object.assign, not spread: spreading the 8-odd hyphenated header names of a CORS token response
  // into a new literal takes V8's property-by-property slow path (docs/performance.md).
  if (parts) return respond(parts.body, parts.status, Object.assign({}, parts.headers, headers));
  const copy = new Response(response.body, response);
  for (const key in headers) copy.headers.set(key, headers[key]!);
  return copy;
}

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return respond(JSON.stringify(body), status, { 'Content-Type': 'application/json', ...NO_STORE, ...headers });
}

/**
 * 303 to a URL, with optional cookies: the shape of every browser hop here. 303 so that a form
 * POST is followed by a GET; no referrer, so the URL we came from (with its code) stays ours.
 */
export function seeOther(location: string, cookies: string[] = []): Response {
  // Without cookies (a client reconnecting: straight back with a code), a plain header object,
  // which @hono/node-server hands to writeHead as it is; pairs (Set-Cookie may repeat) cost it a
  // Headers object built and read back.
  if (cookies.length === 0) return respond('', 303, { Location: location, 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' });
  const headers: [string, string][] = [['Location', location], ['Cache-Control', 'no-store'], ['Referrer-Policy', 'no-referrer']];
  for (const cookie of cookies) headers.push(['Set-Cookie', cookie]);
  // An empty string body, not null: @hono/node-server writes a string body at once with its length,
  // but streams a null one (chunked, after a timer tick), which stalled every redirect.
  return new Response('', { status: 303, headers });
}
