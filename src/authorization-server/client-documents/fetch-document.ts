/**
 * Fetching a client ID metadata document: a URL a stranger gave us, fetched from our network, so
 * every defence against server-side request forgery applies:
 * - https only (plain http to 127.0.0.1 only behind a switch named for tests);
 * - the host is resolved first and every address must be public (core/addresses.ts); the
 *   connection then goes to the address we checked, so DNS cannot change its answer in between;
 * - no redirect is followed (a redirect could lead anywhere);
 * - connect and total timeouts, a size cap read as the body streams, `application/json` only.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { isNonPublicAddress } from '../../core/addresses.js';

export interface DocumentFetchOptions {
  /** Tests only: allows documents at http://127.0.0.1. */
  allowLoopbackHttp: boolean;
  connectTimeoutMs?: number;
  totalTimeoutMs?: number;
  maxBytes?: number;
  /** Replaces DNS (tests). */
  resolve?: (host: string) => Promise<Array<{ address: string; family: number }>>;
  /** Replaces the request function (tests that must prove no connection is attempted). */
  request?: typeof https.request;
  /** Media types accepted besides application/json (a JWKS may be application/jwk-set+json). */
  extraContentTypes?: readonly string[];
}

export interface FetchedDocument {
  body: unknown;
  /** Seconds the response may be reused, from Cache-Control (0: not at all). */
  maxAge: number | null;
}

/**
 * Why a document could not be had (or is not valid); the message names the reason, never the
 * body. It is for the log only: it may describe our network (an address, a closed port).
 */
export class DocumentFetchError extends Error {
  constructor(message: string, readonly temporary = false) {
    super(message);
    this.name = 'DocumentFetchError';
  }
}

const MAX_BYTES = 64 * 1024;

export function isTestLoopbackUrl(url: URL): boolean {
  return url.protocol === 'http:' && url.hostname === '127.0.0.1';
}

/** The addresses to connect to, all checked; refuses a host that resolves to any non-public one. */
async function vettedAddress(url: URL, options: DocumentFetchOptions): Promise<{ address: string; family: number }> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (options.allowLoopbackHttp && isTestLoopbackUrl(url)) return { address: '127.0.0.1', family: 4 };
  let addresses: Array<{ address: string; family: number }>;
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await (options.resolve ?? ((name) => dnsLookup(name, { all: true, verbatim: true })))(host);
    } catch {
      throw new DocumentFetchError(`the host ${host} could not be resolved`, true);
    }
  }
  if (addresses.length === 0) throw new DocumentFetchError(`the host ${host} has no address`, true);
  // Every answer must be public, not just the first: the connection could otherwise be steered.
  const refused = addresses.find((a) => isNonPublicAddress(a.address));
  if (refused) throw new DocumentFetchError(`the host ${host} resolves to a non-public address (${refused.address})`);
  return addresses[0]!;
}

export async function fetchClientDocument(url: URL, options: DocumentFetchOptions): Promise<FetchedDocument> {
  const testHttp = options.allowLoopbackHttp && isTestLoopbackUrl(url);
  if (url.protocol !== 'https:' && !testHttp) throw new DocumentFetchError('the document must be served over https');
  const target = await vettedAddress(url, options);
  const maxBytes = options.maxBytes ?? MAX_BYTES;
  const send = options.request ?? (url.protocol === 'https:' ? https.request : http.request);

  return new Promise<FetchedDocument>((resolve, reject) => {
    let settled = false;
    const fail = (error: DocumentFetchError): void => {
      if (settled) return;
      settled = true;
      clearTimeout(total);
      request.destroy();
      reject(error);
    };
    const total = setTimeout(() => fail(new DocumentFetchError('fetching the document took too long', true)), options.totalTimeoutMs ?? 5000);
    const request = send(
      url,
      {
        method: 'GET',
        headers: { accept: 'application/json', 'user-agent': 'context-auth' },
        // Connect to the address checked above, whatever DNS says now.
        lookup: (_host, lookupOptions, callback) => {
          if ((lookupOptions as { all?: boolean }).all) (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [target]);
          else callback(null, target.address, target.family);
        },
        timeout: options.connectTimeoutMs ?? 3000,
        agent: false,
      },
      (response) => {
        const status = response.statusCode ?? 0;
        if (status >= 300 && status < 400) return fail(new DocumentFetchError(`the document URL redirects (HTTP ${status}); redirects are not followed`));
        if (status !== 200) return fail(new DocumentFetchError(`the document URL answered HTTP ${status}`, status >= 500));
        const type = (response.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
        if (type !== 'application/json' && !options.extraContentTypes?.includes(type)) return fail(new DocumentFetchError(`the document is ${type || 'untyped'}, not application/json`));
        const declared = Number(response.headers['content-length']);
        if (declared > maxBytes) return fail(new DocumentFetchError(`the document is larger than ${maxBytes} bytes`));
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) return fail(new DocumentFetchError(`the document is larger than ${maxBytes} bytes`));
          chunks.push(chunk);
        });
        response.on('error', () => fail(new DocumentFetchError('the connection broke while reading the document', true)));
        response.on('end', () => {
          if (settled) return;
          let body: unknown;
          try {
            body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            return fail(new DocumentFetchError('the document is not valid JSON'));
          }
          settled = true;
          clearTimeout(total);
          resolve({ body, maxAge: maxAgeOf(response.headers['cache-control']) });
        });
      },
    );
    request.on('timeout', () => fail(new DocumentFetchError('the document host did not answer in time', true)));
    request.on('error', (error) => fail(new DocumentFetchError(`the document could not be fetched (${(error as NodeJS.ErrnoException).code ?? error.message})`, true)));
    request.end();
  });
}

/** max-age from Cache-Control; 0 for no-store / no-cache; null when it says nothing. */
function maxAgeOf(header: string | undefined): number | null {
  if (!header) return null;
  const directives = header.toLowerCase().split(',').map((d) => d.trim());
  if (directives.some((d) => d === 'no-store' || d === 'no-cache')) return 0;
  const maxAge = directives.find((d) => d.startsWith('max-age='));
  const seconds = maxAge ? Number(maxAge.slice('max-age='.length)) : NaN;
  return Number.isFinite(seconds) && seconds >= 0 ? Math.floor(seconds) : null;
}
