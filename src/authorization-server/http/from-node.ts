/**
 * The edge on Node: an EndpointRequest read straight from Node's IncomingMessage, under the
 * server's own listener (node-server/listener.ts). Its headers come from one pass over the raw
 * headers, its body from the stream: no Web Request, Headers object or web stream is built, which
 * for a small form costs more than the grant itself.
 */
import { OAuthError } from '../../core/errors.js';
import { joinHeader, type NodeRequest } from '../../node/request.js';
import {
  HEADER_NAMES,
  NO_BODY,
  clientAddressOf,
  declaresMoreThan,
  mediaTypeOf,
  parseBody,
  parseCookies,
  readsBody,
  type EdgeSettings,
  type EndpointRequest,
  type RequestBody,
  type RequestHeaders,
} from './request.js';

/** Header name (lower case) → the RequestHeaders field it fills; `cookie` and `host` read beside them. */
const FIELDS = new Map<string, keyof RequestHeaders | 'cookie' | 'host'>([
  ...Object.entries(HEADER_NAMES).map(([field, name]) => [name, field as keyof RequestHeaders] as const),
  ['cookie', 'cookie'],
  ['host', 'host'],
]);
/** The lengths of those names: most headers are passed over on their length alone, without a lower-cased copy. */
const LENGTHS = new Set([...FIELDS.keys()].map((name) => name.length));

/** The request, all but its body (NO_BODY until readNodeBody's is put in). */
export function requestFromNode(incoming: NodeRequest, settings: EdgeSettings): EndpointRequest {
  const headers: RequestHeaders = {
    authorization: null,
    dpop: null,
    contentType: null,
    origin: null,
    secFetchSite: null,
    forwarded: null,
    xForwardedFor: null,
  };
  let cookie: string | null = null;
  let host: string | null = null;
  const raw = incoming.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (!LENGTHS.has(name.length)) continue;
    const field = FIELDS.get(name) ?? FIELDS.get(name.toLowerCase());
    if (field === undefined) continue;
    if (field === 'cookie') cookie = joinHeader('cookie', cookie, raw[i + 1]!);
    else if (field === 'host') host = joinHeader('host', host, raw[i + 1]!);
    else headers[field] = joinHeader(HEADER_NAMES[field], headers[field], raw[i + 1]!);
  }
  const method = incoming.method === 'HEAD' || incoming.method === undefined ? 'GET' : incoming.method;
  const peer = incoming.socket.remoteAddress;
  return {
    method,
    url: urlOf(incoming, host),
    headers,
    cookies: parseCookies(cookie),
    body: NO_BODY,
    clientAddress: clientAddressOf(peer, headers.xForwardedFor, settings),
    peerAddress: peer,
  };
}

/** The URL as @hono/node-server makes it: an absolute-form target as it is, else the scheme of the socket, the Host header and the target. */
function urlOf(incoming: NodeRequest, host: string | null): URL {
  const target = incoming.url ?? '/';
  try {
    if (target[0] !== '/' && (target.startsWith('http://') || target.startsWith('https://'))) return new URL(target);
    return new URL(`${incoming.socket.encrypted ? 'https' : 'http'}://${host ?? ''}${target}`);
  } catch {
    throw new OAuthError('invalid_request', 'the request target and Host header do not make a URL');
  }
}

/** A POST's body, at most `maxBytes` of it, parsed as its media type says; other methods and media types are not read. */
export function readNodeBody(incoming: NodeRequest, request: EndpointRequest, maxBytes: number): Promise<RequestBody> | RequestBody {
  if (request.method !== 'POST') return NO_BODY;
  const mediaType = mediaTypeOf(request.headers.contentType);
  if (!readsBody(mediaType)) return { kind: 'other', mediaType };
  if (declaresMoreThan(incoming.headers['content-length'], maxBytes)) return TOO_LARGE;
  // Usually the body came with the headers: Node's parser has the whole message buffered by the
  // time the handler reads it, taken in one synchronous read instead of listeners and a stream tick.
  if (incoming.readableFlowing === null && !incoming.readableEnded && incoming.complete === true) {
    if (incoming.readableLength > maxBytes) return TOO_LARGE;
    return parseBody(mediaType, (incoming.read() as Buffer | null) ?? EMPTY);
  }
  return streamed(incoming, maxBytes).then((bytes) => (typeof bytes === 'string' ? { kind: 'unreadable', defect: bytes } : parseBody(mediaType, bytes)));
}

const TOO_LARGE: RequestBody = Object.freeze({ kind: 'unreadable', defect: 'too_large' });
const EMPTY = new Uint8Array(0);

/** The body as it streams in, counted: 'too_large' as soon as the count passes the cap (the rest is never read), 'cut_off' when the client went away mid-body. */
function streamed(incoming: NodeRequest, maxBytes: number): Promise<Uint8Array | 'too_large' | 'cut_off'> {
  if (incoming.readableEnded) return Promise.resolve(EMPTY);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onBroken);
      incoming.off('close', onBroken);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.byteLength;
      if (size > maxBytes) {
        // Stop reading here; once the 413 is sent the adapter drains or closes the connection.
        done();
        incoming.pause();
        resolve('too_large');
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      done();
      resolve(chunks.length === 0 ? EMPTY : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    // An error, or a close before the end: the client's connection broke mid-body, or its framing did.
    const onBroken = (): void => {
      done();
      resolve('cut_off');
    };
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onBroken);
    incoming.on('close', onBroken);
  });
}
