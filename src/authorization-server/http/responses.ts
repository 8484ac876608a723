/** Token-family responses must never be cached (RFC 6749 §5.1, OAuth 2.1 §3.2.3). */
export const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' } as const;

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json', ...NO_STORE, ...headers },
  });
}

/**
 * 303 to a URL, with optional cookies: the shape of every browser hop here. 303 so that a form
 * POST is followed by a GET; no referrer, so the URL we came from (with its code) stays ours.
 */
export function seeOther(location: string, cookies: string[] = []): Response {
  const headers = new Headers({ Location: location, 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' });
  for (const cookie of cookies) headers.append('Set-Cookie', cookie);
  return new Response(null, { status: 303, headers });
}
