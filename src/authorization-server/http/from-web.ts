/**
 * The edge anywhere else: an EndpointRequest read from a Web Request, for
 * `createAuthorizationServer` under any adapter (Workers, Deno, Bun, `app.fetch` in tests), and
 * under Node when a middleware has replaced the Request the listener was given. The same answers
 * as from-node.ts for the same HTTP message (test/authorization-server/edge-request.test.ts).
 */
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

/** The `clientAddress` option: the socket's peer of a Web Request, as the adapter serving it knows it. */
export type PeerAddressOf = (request: Request) => string | undefined;

/** The request, all but its body (NO_BODY until readWebBody's is put in). */
export function requestFromWeb(request: Request, settings: EdgeSettings, peerOf: PeerAddressOf | undefined): EndpointRequest {
  const get = (name: string): string | null => request.headers.get(name);
  const headers: RequestHeaders = {
    authorization: get(HEADER_NAMES.authorization),
    dpop: get(HEADER_NAMES.dpop),
    contentType: get(HEADER_NAMES.contentType),
    origin: get(HEADER_NAMES.origin),
    secFetchSite: get(HEADER_NAMES.secFetchSite),
    forwarded: get(HEADER_NAMES.forwarded),
    xForwardedFor: get(HEADER_NAMES.xForwardedFor),
  };
  const peer = peerOf?.(request);
  return {
    method: request.method === 'HEAD' ? 'GET' : request.method,
    url: new URL(request.url),
    headers,
    cookies: parseCookies(get('cookie')),
    body: NO_BODY,
    clientAddress: clientAddressOf(peer, headers.xForwardedFor, settings),
    peerAddress: peer,
  };
}

/** A POST's body, at most `maxBytes` of it, parsed as its media type says; other methods and media types are not read. */
export async function readWebBody(web: Request, request: EndpointRequest, maxBytes: number): Promise<RequestBody> {
  if (request.method !== 'POST') return NO_BODY;
  const mediaType = mediaTypeOf(request.headers.contentType);
  if (!readsBody(mediaType)) return { kind: 'other', mediaType };
  if (declaresMoreThan(web.headers.get('content-length'), maxBytes)) return { kind: 'unreadable', defect: 'too_large' };
  const bytes = await capped(web, maxBytes);
  return typeof bytes === 'string' ? { kind: 'unreadable', defect: bytes } : parseBody(mediaType, bytes);
}

const EMPTY = new Uint8Array(0);

/** The body stream, counted: 'too_large' as soon as the count passes the cap (the rest is cancelled), 'cut_off' when it broke. */
async function capped(request: Request, maxBytes: number): Promise<Uint8Array | 'too_large' | 'cut_off'> {
  if (!request.body) return EMPTY;
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let next: ReadableStreamReadResult<Uint8Array>;
    try {
      next = await reader.read();
    } catch {
      return 'cut_off';
    }
    const { done, value } = next;
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      return 'too_large';
    }
    chunks.push(value);
  }
  return chunks.length === 0 ? EMPTY : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}
