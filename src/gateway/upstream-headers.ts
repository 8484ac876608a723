/**
 * What crosses the gateway, by name, in each direction. Lists of what may pass rather than of
 * what may not: the person's Authorization and DPoP headers, their cookies and whatever a proxy in
 * front added never reach the upstream, and the upstream cannot set cookies on this origin, send
 * a challenge naming another authorization server, or redirect the client elsewhere.
 */

/** The Streamable HTTP request headers an MCP server reads. */
const TO_UPSTREAM = ['accept', 'content-type', 'mcp-session-id', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'last-event-id'] as const;

/**
 * The answer headers a client reads. Not Content-Length nor Content-Encoding: fetch hands over
 * the body decoded, and the Node server frames it again.
 */
const TO_CLIENT = ['content-type', 'cache-control', 'mcp-session-id', 'mcp-protocol-version', 'allow', 'retry-after'] as const;

export function upstreamRequestHeaders(incoming: Headers, authorization: string | undefined): Headers {
  const headers = new Headers();
  for (const name of TO_UPSTREAM) {
    const value = incoming.get(name);
    if (value !== null) headers.set(name, value);
  }
  if (authorization !== undefined) headers.set('authorization', authorization);
  return headers;
}

export function clientResponseHeaders(upstream: Headers): Headers {
  const headers = new Headers();
  for (const name of TO_CLIENT) {
    const value = upstream.get(name);
    if (value !== null) headers.set(name, value);
  }
  return headers;
}
