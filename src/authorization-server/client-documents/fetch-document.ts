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
import { fail, ok, type Defect, type Result } from '../../core/result.js';

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
 * Why a document could not be had: `unreachable` may pass (DNS, a timeout, a broken connection,
 * the host failing), `refused` will not (a non-public address, plain http, a redirect, another
 * status or type, too large, not JSON). The description names the reason, never the body; it is
 * for the log only: it may describe our network (an address, a closed port).
 */
export type DocumentDefect = Defect<'unreachable' | 'refused'>;

const cannotReach = (description: string) => fail<DocumentDefect>({ code: 'unreachable', description });
const refuse = (description: string) => fail<DocumentDefect>({ code: 'refused', description });

const MAX_BYTES = 64 * 1024;

export function isTestLoopbackUrl(url: URL): boolean {
  return url.protocol === 'http:' && url.hostname === '127.0.0.1';
}

type Address = { address: string; family: number };

/** The address to connect to, every one the host resolves to checked; refuses a host that resolves to any non-public one. */
async function vettedAddress(url: URL, options: DocumentFetchOptions): Promise<Result<Address, DocumentDefect>> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (options.allowLoopbackHttp && isTestLoopbackUrl(url)) return ok({ address: '127.0.0.1', family: 4 });
  let addresses: Address[];
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await (options.resolve ?? ((name) => dnsLookup(name, { all: true, verbatim: true })))(host);
    } catch {
      return cannotReach(`the host ${host} could not be resolved`);
    }
  }
  if (addresses.length === 0) return cannotReach(`the host ${host} has no address`);
  // Every answer must be public, not just the first: the connection could otherwise be steered.
  const nonPublic = addresses.find((a) => isNonPublicAddress(a.address));
  if (nonPublic) return refuse(`the host ${host} resolves to a non-public address (${nonPublic.address})`);
  return ok(addresses[0]!);
}

export async function fetchClientDocument(url: URL, options: DocumentFetchOptions): Promise<Result<FetchedDocument, DocumentDefect>> {
  const testHttp = options.allowLoopbackHttp && isTestLoopbackUrl(url);
  if (url.protocol !== 'https:' && !testHttp) return refuse('the document must be served over https');
  const vetted = await vettedAddress(url, options);
  if (!vetted.ok) return vetted;
  const target = vetted.value;
  const maxBytes = options.maxBytes ?? MAX_BYTES;
  const send = options.request ?? (url.protocol === 'https:' ? https.request : http.request);

  return new Promise<Result<FetchedDocument, DocumentDefect>>((resolve) => {
    let settled = false;
    const settle = (outcome: Result<FetchedDocument, DocumentDefect>): void => {
      if (settled) return;
      settled = true;
      clearTimeout(total);
      if (!outcome.ok) request.destroy();
      resolve(outcome);
    };
    const total = setTimeout(() => settle(cannotReach('fetching the document took too long')), options.totalTimeoutMs ?? 5000);
    const request = send(
      url,
      {
        method: 'GET',
        headers: { accept: 'application/json', 'user-agent': 'context-auth' },
        // Connect to the address checked above, whatever DNS says now.
        lookup: (_host, lookupOptions, callback) => {
          if ((lookupOptions as { all?: boolean }).all)
            (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [target]);
          else callback(null, target.address, target.family);
        },
        timeout: options.connectTimeoutMs ?? 3000,
        agent: false,
      },
      (response) => {
        const status = response.statusCode ?? 0;
        if (status >= 300 && status < 400) return settle(refuse(`the document URL redirects (HTTP ${status}); redirects are not followed`));
        if (status !== 200) return settle((status >= 500 ? cannotReach : refuse)(`the document URL answered HTTP ${status}`));
        const type = (response.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
        if (type !== 'application/json' && !options.extraContentTypes?.includes(type))
          return settle(refuse(`the document is ${type || 'untyped'}, not application/json`));
        const declared = Number(response.headers['content-length']);
        if (declared > maxBytes) return settle(refuse(`the document is larger than ${maxBytes} bytes`));
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) return settle(refuse(`the document is larger than ${maxBytes} bytes`));
          chunks.push(chunk);
        });
        response.on('error', () => settle(cannotReach('the connection broke while reading the document')));
        response.on('end', () => {
          if (settled) return;
          let body: unknown;
          try {
            body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            return settle(refuse('the document is not valid JSON'));
          }
          settle(ok({ body, maxAge: maxAgeOf(response.headers['cache-control']) }));
        });
      },
    );
    request.on('timeout', () => settle(cannotReach('the document host did not answer in time')));
    request.on('error', (error) => settle(cannotReach(`the document could not be fetched (${(error as NodeJS.ErrnoException).code ?? error.message})`)));
    request.end();
  });
}

/** max-age from Cache-Control; 0 for no-store / no-cache; null when it says nothing. */
function maxAgeOf(header: string | undefined): number | null {
  if (!header) return null;
  const directives = header
    .toLowerCase()
    .split(',')
    .map((d) => d.trim());
  if (directives.some((d) => d === 'no-store' || d === 'no-cache')) return 0;
  const maxAge = directives.find((d) => d.startsWith('max-age='));
  const seconds = maxAge ? Number(maxAge.slice('max-age='.length)) : NaN;
  return Number.isFinite(seconds) && seconds >= 0 ? Math.floor(seconds) : null;
}
