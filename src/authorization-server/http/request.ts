/**
 * What the endpoints read of an HTTP request, read once at the edge: from Node's IncomingMessage
 * (`from-node.ts`, the server's own listener) or from a Web Request (`from-web.ts`, any other
 * adapter). Plain data, so an endpoint, a check or a grant never sees how the request came in,
 * and the two adapters are tested to give the same value for the same HTTP message.
 */
import type { BlockList } from 'node:net';
import { forwardedClientAddress } from '../../core/client-address.js';

/** The headers the server reads, each as a Web Request's `headers.get` answers it: repeats joined, null when absent. */
export interface RequestHeaders {
  authorization: string | null;
  dpop: string | null;
  contentType: string | null;
  origin: string | null;
  secFetchSite: string | null;
  forwarded: string | null;
  xForwardedFor: string | null;
}

/** Why a body could not be had: more than the cap, cut off before its end, not UTF-8, not JSON. */
export type BodyDefect = 'too_large' | 'cut_off' | 'not_utf8' | 'not_json';

/**
 * The body as parsed. Only a POST's body is read, and only when its media type is one the server
 * takes (a form, JSON); any other is left unread and named.
 */
export type RequestBody =
  | { kind: 'none' }
  /** application/x-www-form-urlencoded, decoded, every field in the order sent (repeats kept: the endpoint decides). */
  | { kind: 'form'; fields: [string, string][] }
  /** application/json, parsed. */
  | { kind: 'json'; value: unknown }
  /** Another media type (the Content-Type's, lower case, '' when none was sent): not read. */
  | { kind: 'other'; mediaType: string }
  | { kind: 'unreadable'; defect: BodyDefect };

export interface EndpointRequest {
  /** GET for a HEAD: the server answers both alike. */
  method: string;
  url: URL;
  headers: RequestHeaders;
  /** The Cookie header, each name with every value sent for it, in order (a name sent twice is for the reader to refuse). */
  cookies: ReadonlyMap<string, readonly string[]>;
  body: RequestBody;
  /** The client's address: the socket's peer, or what a trusted proxy says it forwarded for (`trustProxy`). */
  clientAddress: string | undefined;
  /** The socket's peer, whatever a proxy says (the metrics endpoint serves this machine only). */
  peerAddress: string | undefined;
}

/** The lower-case header names of RequestHeaders, by field. */
export const HEADER_NAMES = {
  authorization: 'authorization',
  dpop: 'dpop',
  contentType: 'content-type',
  origin: 'origin',
  secFetchSite: 'sec-fetch-site',
  forwarded: 'forwarded',
  xForwardedFor: 'x-forwarded-for',
} as const satisfies Record<keyof RequestHeaders, string>;

export const NO_BODY: RequestBody = Object.freeze({ kind: 'none' });

/** The media type of a Content-Type header, lower case, without parameters; '' when there is none. */
export function mediaTypeOf(contentType: string | null): string {
  if (contentType === null) return '';
  const semicolon = contentType.indexOf(';');
  return (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
}

export const FORM = 'application/x-www-form-urlencoded';
export const JSON_TYPE = 'application/json';

/** True when a body of this media type is read (a POST's only). */
export function readsBody(mediaType: string): boolean {
  return mediaType === FORM || mediaType === JSON_TYPE;
}

/** True when the declared Content-Length says more than the cap: refused before a byte is read. */
export function declaresMoreThan(contentLength: string | null | undefined, maxBytes: number): boolean {
  return Number(contentLength ?? '0') > maxBytes;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A read body parsed as its media type says; a body that is not UTF-8 is refused rather than patched with U+FFFD. */
export function parseBody(mediaType: string, bytes: Uint8Array): RequestBody {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { kind: 'unreadable', defect: 'not_utf8' };
  }
  if (mediaType === FORM) return { kind: 'form', fields: [...new URLSearchParams(text)] };
  try {
    return { kind: 'json', value: JSON.parse(text) };
  } catch {
    return { kind: 'unreadable', defect: 'not_json' };
  }
}

const NO_COOKIES: ReadonlyMap<string, readonly string[]> = new Map();

/** The Cookie header as name → values, in the order sent; pieces without `=` are not cookies. */
export function parseCookies(header: string | null): ReadonlyMap<string, readonly string[]> {
  if (!header) return NO_COOKIES;
  const cookies = new Map<string, string[]>();
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    const values = cookies.get(name);
    if (values) values.push(value);
    else cookies.set(name, [value]);
  }
  return cookies;
}

/** What the edge needs to build a request: the body cap, and the proxies whose X-Forwarded-For is believed. */
export interface EdgeSettings {
  maxBodyBytes: number;
  /** null: no proxy is trusted, the client address is the peer's. */
  trustedProxies: BlockList | null;
}

/** The client address: the peer's, or the address a trusted proxy forwarded for. */
export function clientAddressOf(peer: string | undefined, forwardedFor: string | null, settings: EdgeSettings): string | undefined {
  return settings.trustedProxies ? forwardedClientAddress(peer, forwardedFor, settings.trustedProxies) : peer;
}
