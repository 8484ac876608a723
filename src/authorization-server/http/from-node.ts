/**
 * The edge on Node: an EndpointRequest read straight from Node's IncomingMessage, under the
 * server's own listener (node-server/listener.ts). Its headers come from one pass over the raw
 * headers, its body from the stream: no Web Request, Headers object or web stream is built, which
 * for a small form costs more than the grant itself.
 */
import { OAuthError } from '../../core/errors.js';
import { readNodeBytes, type NodeBody } from '../../node/body.js';
import { joinHeader, type NodeRequest } from '../../node/request.js';
import {
  HEADER_NAMES,
  NO_BODY,
  clientAddressOf,
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
  const read = readNodeBytes(incoming, maxBytes);
  return read instanceof Promise ? read.then((bytes) => parsed(mediaType, bytes)) : parsed(mediaType, read);
}

function parsed(mediaType: string, bytes: NodeBody): RequestBody {
  return typeof bytes === 'string' ? { kind: 'unreadable', defect: bytes } : parseBody(mediaType, bytes);
}
