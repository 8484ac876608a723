/**
 * The Node request behind a Web Request, under the authorization server's own listener.
 *
 * @hono/node-server hands the listener's `fetch` a Web Request it built from a Node request and,
 * beside it, that Node request (Hono's `c.env.incoming`). The listener notes the pair
 * (`noteBuiltFrom`), so that further in, whoever holds the Web Request can tell whether it is
 * still that one (`nodeRequestOf`): then its body and headers can be read from the Node request,
 * which skips building a full undici Request, its Headers and two web streams. A middleware may
 * have put another Request in its place (a decompressing one, say), whose body and headers are its
 * own: that one carries no note, and is read through its public API, with the same answers.
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
