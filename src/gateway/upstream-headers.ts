/**
 * What crosses the gateway, by name, in each direction. Lists of what may pass rather than of
 * what may not: the person's Authorization and DPoP headers, their cookies and whatever a proxy in
 * front added never reach the upstream, and the upstream cannot set cookies on this origin, send
 * a challenge naming another authorization server, or redirect the client elsewhere.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/** The Streamable HTTP request headers an MCP server reads. */
const TO_UPSTREAM = ['accept', 'content-type', 'mcp-session-id', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'last-event-id'] as const;

/**
 * The answer headers a client reads. Not Content-Length nor Content-Encoding: the body is handed
 * over decoded (forward.ts), and the Node server frames it again.
 */
const TO_CLIENT = ['content-type', 'cache-control', 'mcp-session-id', 'mcp-protocol-version', 'allow', 'retry-after'] as const;

/**
 * The headers the upstream gets: those it reads, ours for it (`authorization`), the body's length,
 * and a plain answer asked for: compressing a small JSON-RPC answer on a hop costs more than it saves.
 */
export function upstreamRequestHeaders(incoming: Headers, authorization: string | undefined, bodyLength: number | undefined): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = { 'accept-encoding': 'identity' };
  for (const name of TO_UPSTREAM) {
    const value = incoming.get(name);
    if (value !== null) headers[name] = value;
  }
  if (authorization !== undefined) headers.authorization = authorization;
  if (bodyLength !== undefined) headers['content-length'] = bodyLength;
  return headers;
}

export function clientResponseHeaders(upstream: IncomingHttpHeaders): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of TO_CLIENT) {
    const value = upstream[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}
