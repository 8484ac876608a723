/**
 * The Node request behind a Web Request, when the Web Request still answers as that Node request.
 *
 * @hono/node-server hands a `fetch` handler a lightweight Web Request it built from a Node request
 * and, beside it, that Node request (Hono's `c.env.incoming`). Whoever holds the Web Request can
 * then read its body and headers from the Node request (`nodeRequestOf`), which skips building a
 * full undici Request, its Headers and two web streams. Two ways to know it is still that one:
 * the authorization server's own listener notes the pair (`noteBuiltFrom`); and any server on
 * @hono/node-server leaves its lightweight Request as the adapter made it, holding the Node request
 * and its URL and nothing else until someone asks for its headers, body or signal
 * (`untouchedNodeRequestOf`, which the resource server's guard uses). A middleware
 * may have put another Request in its place (a decompressing one, say), or read or changed the
 * lightweight one's headers: that one is read through its public API, with the same answers.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';

/** What is used of Node's IncomingMessage: its body stream, headers as received, method, target and socket. */
export type NodeRequest = Readable & {
  rawHeaders: string[];
  headers: IncomingHttpHeaders;
  httpVersionMajor: number;
  complete: boolean;
  method?: string | undefined;
  url?: string | undefined;
  socket: { remoteAddress?: string | undefined; encrypted?: boolean };
};

/** Our own note on a Web Request: the Node request it was built from. A property, not a WeakMap entry: weak entries cost the collector on every scavenge. */
const BUILT_FROM = Symbol('context-auth.builtFrom');
type Noted = Request & { [BUILT_FROM]?: NodeRequest };

/** Notes that `request` is the Web Request @hono/node-server built from `incoming` (its `fetch(request, { incoming })`). */
export function noteBuiltFrom(request: Request, incoming: NodeRequest): void {
  (request as Noted)[BUILT_FROM] = incoming;
}

/** `incoming` (Hono's `c.env.incoming`) when `request` is the Web Request noted as built from it; undefined otherwise. */
export function nodeRequestOf(request: Request, incoming: unknown): NodeRequest | undefined {
  const noted = (request as Noted)[BUILT_FROM];
  return noted !== undefined && noted === incoming ? noted : undefined;
}

/**
 * As nodeRequestOf, and also under any server on @hono/node-server: `incoming` when `request` is
 * the adapter's lightweight Request built from it and still untouched. For the resource server's
 * guard, which library users put on servers of their own.
 */
export function untouchedNodeRequestOf(request: Request, incoming: unknown): NodeRequest | undefined {
  const noted = (request as Noted)[BUILT_FROM];
  if (noted !== undefined) return noted === incoming ? noted : undefined;
  return incoming !== undefined && untouchedFrom(request, incoming) ? (incoming as NodeRequest) : undefined;
}

/**
 * True when `request` is @hono/node-server's lightweight Request built from `incoming`, none of
 * whose parts has been made yet: its own symbol-keyed fields are the Node request and its URL. Its
 * Headers (which a middleware could change), its full Request (whose body someone may be reading)
 * and its AbortController are further fields, made on first use; any of them, or a later adapter
 * that keeps its fields otherwise, and the request is read through its public API.
 */
function untouchedFrom(request: Request, incoming: unknown): boolean {
  if (typeof request !== 'object' || request === null) return false;
  let holdsIncoming = false;
  for (const key of Object.getOwnPropertySymbols(request)) {
    const value = (request as unknown as Record<symbol, unknown>)[key];
    if (value === incoming) holdsIncoming = true;
    else if (typeof value !== 'string') return false;
  }
  return holdsIncoming;
}

/** The Node request `request` was noted as built from, whatever the context says. */
export function notedNodeRequest(request: Request): NodeRequest | undefined {
  return (request as Noted)[BUILT_FROM];
}

/**
 * One header of a Node request (`name` in lower case), as `request.headers.get(name)` answers it:
 * repeats joined with ", " (a Cookie header's with "; "), surrounding HTTP whitespace trimmed;
 * null when absent. Node's own `headers` keeps only the first of some repeated headers.
 */
export function nodeHeader(node: NodeRequest, name: string): string | null {
  const raw = node.rawHeaders;
  let value: string | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const key = raw[i]!;
    if (key.length === name.length && key.toLowerCase() === name) value = joinHeader(name, value, raw[i + 1]!);
  }
  return value;
}

/** `value` joined to what a header had so far, as the Web's Headers joins repeats. */
export function joinHeader(name: string, sofar: string | null, value: string): string {
  const found = trimHttpWhitespace(value);
  if (sofar === null) return found;
  return name === 'cookie' ? `${sofar}; ${found}` : `${sofar}, ${found}`;
}

/**
 * True when Node's HTTP/1 parser frames the body by a Content-Length of at most `maxBytes`: it
 * ends the body after that many bytes, so the body cannot run past the cap and needs no counting.
 */
export function framedWithin(node: NodeRequest, maxBytes: number): boolean {
  const declared = node.headers['content-length'];
  // Both headers at once are refused by Node's parser, unless it runs lenient (insecureHTTPParser).
  return node.httpVersionMajor === 1 && typeof declared === 'string' && Number(declared) <= maxBytes && node.headers['transfer-encoding'] === undefined;
}

const isSpace = (code: number): boolean => code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;

/** Fetch's header value normalization: only tab, LF, CR and space, not String#trim's wider set. */
function trimHttpWhitespace(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isSpace(value.charCodeAt(start))) start++;
  while (end > start && isSpace(value.charCodeAt(end - 1))) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}
