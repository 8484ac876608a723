import { OAuthError } from '../../core/errors.js';
import { nodeHeader, nodeRequestBehind, type NodeRequest } from '../../node/request.js';

/**
 * Request bodies read with a cap: more than `maxBytes` is 413 as soon as the count passes it,
 * whatever Content-Length claimed (chunked bodies declare nothing), and the rest is never read.
 *
 * Served by @hono/node-server, the Web Request is a lazy wrapper around Node's IncomingMessage:
 * reading its `body` builds a full undici Request, an AbortSignal and two web streams, which for
 * a ~100-byte form costs more than the grant itself. So when the route knows the IncomingMessage
 * behind the very Request it was given (`attachNodeRequest`), the body is read from it directly;
 * any other Request (`app.request()`, a Request a middleware replaced) is read as a web stream
 * (node/request.ts tells which is which).
 */

/**
 * The Node request behind a Request, as a property of the Request rather than a WeakMap entry:
 * a weak entry per request costs the collector (ephemerons) on every scavenge.
 */
const NODE_REQUEST = Symbol('nodeRequest');
type Attached = Request & { [NODE_REQUEST]?: NodeRequest };

/** Notes the Node request behind `request` (Hono's `c.env.incoming` under @hono/node-server) when it is the one `request` was built from. */
export function attachNodeRequest(request: Request, incoming: unknown): void {
  const node = nodeRequestBehind(request, incoming);
  if (node) (request as Attached)[NODE_REQUEST] = node;
}

/**
 * One request header, as `request.headers.get(name)` answers it (`name` in lower case); from the
 * Node request's raw headers when there is one.
 */
export function requestHeader(request: Request, name: string): string | null {
  const incoming = (request as Attached)[NODE_REQUEST];
  return incoming ? nodeHeader(incoming, name) : request.headers.get(name);
}

export function bodyTooLarge(maxBytes: number): OAuthError {
  return new OAuthError('invalid_request', `request body is larger than ${maxBytes} bytes`, 413);
}

/** The whole body, at most `maxBytes` of it; 413 past that. */
export function readBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(requestHeader(request, 'content-length') ?? '0');
  if (declared > maxBytes) return Promise.reject(bodyTooLarge(maxBytes));
  const incoming = (request as Attached)[NODE_REQUEST];
  // Untouched so far: nobody else has started reading it (then the web stream is the one to read).
  if (incoming && incoming.readableFlowing === null && !incoming.readableEnded) {
    // Usually the body came with the headers: Node's parser has the whole message buffered by the
    // time the handler reads it, taken in one synchronous read instead of listeners and a stream tick.
    if (incoming.complete === true) {
      if (incoming.readableLength > maxBytes) return Promise.reject(bodyTooLarge(maxBytes));
      return Promise.resolve((incoming.read() as Buffer | null) ?? EMPTY);
    }
    return readNodeBody(incoming, maxBytes);
  }
  return readWebBody(request, maxBytes);
}

/** The client's connection broke mid-body, or its framing did: its fault, not ours. */
function brokenOff(): OAuthError {
  return new OAuthError('invalid_request', 'the request body could not be read to its end');
}

const EMPTY = new Uint8Array(0);

function readNodeBody(incoming: NodeRequest, maxBytes: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
      incoming.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.byteLength;
      if (size > maxBytes) {
        // Stop reading here; once the 413 is sent the adapter drains or closes the connection.
        done();
        incoming.pause();
        reject(bodyTooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      done();
      resolve(chunks.length === 0 ? EMPTY : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (): void => {
      done();
      reject(brokenOff());
    };
    // Closed before its end: the client went away mid-body.
    const onClose = (): void => {
      done();
      reject(brokenOff());
    };
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('close', onClose);
  });
}

async function readWebBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  if (!request.body) return EMPTY;
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let next: ReadableStreamReadResult<Uint8Array>;
    try {
      next = await reader.read();
    } catch {
      throw brokenOff();
    }
    const { done, value } = next;
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw bodyTooLarge(maxBytes);
    }
    chunks.push(value);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The body as UTF-8 text; a body that is not UTF-8 is refused rather than patched with U+FFFD. */
export async function readText(request: Request, maxBytes: number): Promise<string> {
  const bytes = await readBody(request, maxBytes);
  try {
    return utf8.decode(bytes);
  } catch {
    throw new OAuthError('invalid_request', 'request body is not valid UTF-8');
  }
}
