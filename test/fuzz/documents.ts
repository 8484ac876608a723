/**
 * A loopback server of client ID metadata documents for the fuzz run: `/ok` is a valid document,
 * `/d/<n>` answers what the seeded generator makes of n — a near-valid document with one field
 * wrong, random JSON, HTML, bytes, a redirect, an error status, a reset connection, a body
 * longer or shorter than it says. The authorization server fetches these when a request names
 * one as its client_id.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Random } from './random.js';

export const DOCUMENT_REDIRECT_URI = 'http://127.0.0.1:33333/callback';

export interface DocumentServer {
  base: string;
  stop(): Promise<void>;
}

function validDocument(url: string): Record<string, unknown> {
  return {
    client_id: url,
    client_name: 'Fuzz document client',
    redirect_uris: [DOCUMENT_REDIRECT_URI],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
  };
}

function answer(request: IncomingMessage, response: ServerResponse, base: string): void {
  const url = `${base}${request.url ?? '/'}`;
  if (request.url === '/ok') {
    response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' });
    response.end(JSON.stringify(validDocument(url)));
    return;
  }
  const n = Number(/^\/d\/(\d+)$/.exec(request.url ?? '')?.[1] ?? 0);
  const r = new Random(n);
  const json = (value: unknown) => Buffer.from(JSON.stringify(value) ?? 'null');
  const near = (): Buffer => {
    const document = validDocument(url);
    const key = r.pick([...Object.keys(document), 'scope', 'jwks_uri', 'logo_uri', 'client_uri', 'response_types', 'software_statement', '__proto__']);
    document[key] = r.chance(0.5) ? r.json() : r.nasty(String(document[key] ?? ''));
    return json(document);
  };
  const body = r.weighted<() => Buffer>([
    [6, near],
    [2, () => json(r.json())],
    [1, () => r.bytes(r.length(2000))],
    [1, () => Buffer.from('<html><body>not json</body></html>')],
    [1, () => Buffer.from(`${'['.repeat(20_000)}${']'.repeat(20_000)}`)],
    [1, () => Buffer.alloc(70_000, 0x20)],
  ])();
  const status = r.weighted([
    [8, 200],
    [1, r.pick([201, 204, 301, 302, 304, 400, 404, 410, 500, 503])],
  ]);
  const headers: Record<string, string> = {
    'content-type': r.weighted([
      [8, 'application/json'],
      [1, r.pick(['text/html', 'application/json; charset=latin1', 'APPLICATION/JSON', '', 'application/jsonx', 'text/plain'])],
    ]),
  };
  if (r.chance(0.5)) headers['cache-control'] = r.pick(['max-age=60', 'no-store', 'max-age=-1', 'max-age=1e99', 'max-age=abc', 'no-cache, max-age=5', '']);
  if (status >= 300 && status < 400) headers.location = r.pick(['/ok', 'http://127.0.0.1:1/', 'https://example.com/']);
  const ending = r.weighted([
    [10, 'normal'],
    [1, 'reset'],
    [1, 'short'],
    [1, 'long'],
  ]);
  if (ending === 'reset') {
    request.socket.destroy();
    return;
  }
  if (ending === 'short') headers['content-length'] = String(body.length + 10);
  if (ending === 'long') headers['content-length'] = String(Math.max(0, body.length - 10));
  try {
    response.writeHead(status, headers);
    if (ending === 'short') {
      response.write(body);
      response.socket?.destroy();
    } else response.end(ending === 'long' ? body.subarray(0, Math.max(0, body.length - 10)) : body);
  } catch {
    request.socket.destroy();
  }
}

export async function startDocumentServer(): Promise<DocumentServer> {
  let base = '';
  const server = createServer((request, response) => answer(request, response, base));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
