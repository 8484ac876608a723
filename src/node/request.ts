/**
 * The Node request behind a Web Request, under @hono/node-server: the one place that knows how
 * that adapter links the two.
 *
 * The adapter hands the app a lazy Web Request and, publicly, the Node request it came from
 * (Hono's `c.env.incoming`). Reading that Node request directly (the body from its stream, one
 * header from its raw headers) skips building a full undici Request, its Headers and two web
 * streams, which for a small form costs more than the grant itself. It is right only while the
 * Web Request in hand is the one built from that Node request: a middleware may have put another
 * in its place (a decompressing one, say), whose body and headers are its own.
 *
 * Nothing public tells which Node request a Web Request was built from; the adapter keeps it under
 * a symbol it does not export, found here by its description. Whenever that check does not hold
 * (another adapter, a replaced Request, a version of the adapter that keeps it otherwise), callers
 * are told there is no Node request and read the Web Request through its public API, with the same
 * answers. test/node/request.test.ts fails when the installed adapter is no longer recognised.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { debuglog } from 'node:util';

/** What is used of Node's IncomingMessage (or Http2ServerRequest): its body stream and headers as received. */
export type NodeRequest = Readable & {
  rawHeaders: string[];
  headers: IncomingHttpHeaders;
  httpVersionMajor: number;
  complete: boolean;
};

/** The adapter's description of the symbol it keeps the Node request under. */
const INCOMING_KEY_DESCRIPTION = 'incomingKey';
let incomingKey: symbol | undefined;

// NODE_DEBUG=context-auth shows why the Web Request is read instead, once per process.
const debug = debuglog('context-auth');
let toldWhy = false;

function isNodeRequest(value: unknown): value is NodeRequest {
  return typeof value === 'object' && value !== null && typeof (value as Readable).on === 'function' && 'readableFlowing' in value && Array.isArray((value as NodeRequest).rawHeaders);
}

/**
 * `incoming` (Hono's `c.env.incoming`) when `request` is the Web Request @hono/node-server built
 * from it, so that its body and headers are the Node request's; undefined otherwise.
 */
export function nodeRequestBehind(request: Request, incoming: unknown): NodeRequest | undefined {
  if (!isNodeRequest(incoming)) return undefined;
  const fields = request as unknown as Record<symbol, unknown>;
  if (incomingKey !== undefined && fields[incomingKey] === incoming) return incoming;
  const key = Object.getOwnPropertySymbols(request).find((symbol) => symbol.description === INCOMING_KEY_DESCRIPTION);
  if (key === undefined || fields[key] !== incoming) {
    if (!toldWhy) {
      toldWhy = true;
      debug('the Web Request is not the one @hono/node-server built from c.env.incoming (a middleware replaced it, or this version of the adapter is not recognised): reading the Web Request');
    }
    return undefined;
  }
  incomingKey = key;
  return incoming;
}

/**
 * One header of a Node request (`name` in lower case), as `request.headers.get(name)` answers it:
 * repeats joined with ", ", surrounding HTTP whitespace trimmed; null when absent. Node's own
 * `headers` keeps only the first of some repeated headers, and the Web Request's `headers` would
 * build a Headers object of every header, validated one by one, to read one of them.
 */
export function nodeHeader(node: NodeRequest, name: string): string | null {
  const raw = node.rawHeaders;
  let value: string | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const key = raw[i]!;
    if (key.length === name.length && key.toLowerCase() === name) {
      const found = trimHttpWhitespace(raw[i + 1]!);
      value = value === null ? found : `${value}, ${found}`;
    }
  }
  return value;
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
