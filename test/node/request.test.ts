/**
 * node/request.ts: which Web Requests are known to be built from the Node request beside them.
 * The first test is the alarm for an upgrade of @hono/node-server: the servers stay correct
 * without the fast path (test/node/fallback.test.ts), so nothing else would notice it is gone.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { Socket } from 'node:net';
import path from 'node:path';
import { describe, it } from 'node:test';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { framedWithin, nodeHeader, nodeRequestBehind, type NodeRequest } from '../../src/node/request.js';

function adapterVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@hono/node-server');
  const manifest = path.join(path.dirname(entry), '..', 'package.json');
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

/** A request to `port` with the header lines as given (repeats kept), and its answer's text. */
function send(port: number, method: string, lines: string[], body?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port, path: '/', method, agent: false, headers: ['Host', `127.0.0.1:${port}`, ...lines] as unknown as http.OutgoingHttpHeaders }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve(text));
    });
    request.on('error', reject);
    request.end(body);
  });
}

function incomingMessage(rawHeaders: string[]): NodeRequest {
  const message = new http.IncomingMessage(new Socket());
  message.rawHeaders = rawHeaders;
  return message as unknown as NodeRequest;
}

describe('the Node request behind a Web Request (node/request.ts)', () => {
  it('recognises the Request the installed @hono/node-server builds, so the fast path is in use', async () => {
    const app = new Hono();
    app.all('/', (c) => {
      const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
      return c.json({ recognised: incoming !== undefined && nodeRequestBehind(c.req.raw, incoming) === incoming });
    });
    const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 });
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      for (const method of ['GET', 'POST']) {
        const answer = JSON.parse(await send(port, method, ['Content-Length', '3'], method === 'POST' ? 'a=b' : undefined)) as { recognised: boolean };
        assert.equal(
          answer.recognised,
          true,
          `@hono/node-server ${adapterVersion()} is no longer recognised (${method}): the Web Request it hands the app does not carry ` +
            "c.env.incoming under the symbol described 'incomingKey'. context-auth still answers correctly (it reads the Web Request " +
            'instead), but its fast path for request bodies and headers is gone, and refresh grants and guarded routes cost more CPU. ' +
            'Find how this version ties its Request to c.env.incoming and update nodeRequestBehind in src/node/request.ts, or ' +
            'keep @hono/node-server at a version this test passes with.',
        );
      }
    } finally {
      server.close();
      (server as http.Server).closeAllConnections();
    }
  });

  it('answers undefined for any other pairing, so the caller reads the Web Request', () => {
    const incoming = incomingMessage(['Content-Length', '3']);
    const plain = new Request('http://127.0.0.1/', { method: 'POST', body: 'a=b' });
    assert.equal(nodeRequestBehind(plain, undefined), undefined, 'no Node request (app.request(), another runtime)');
    assert.equal(nodeRequestBehind(plain, incoming), undefined, 'a Request not built from it (a middleware replaced it)');

    // A Request carrying a symbol of that description, as the adapter's Requests do.
    const linked = (to: unknown): Request => Object.assign(new Request('http://127.0.0.1/'), { [Symbol('incomingKey')]: to });
    assert.equal(nodeRequestBehind(linked(incoming), incoming), incoming);
    assert.equal(nodeRequestBehind(linked(incomingMessage([])), incoming), undefined, 'built from another Node request');
    assert.equal(nodeRequestBehind(linked({ rawHeaders: [] }), { rawHeaders: [] }), undefined, 'what is beside it is not a Node request');
    const shape = { on() {}, rawHeaders: [] };
    assert.equal(nodeRequestBehind(linked(shape), shape), undefined, 'something that only looks a little like a Node request');
  });

  it('reads one header from the raw headers as Headers.get does: repeats joined, HTTP whitespace trimmed, any case', () => {
    const raw = ['X-Twice', 'one', 'x-twice', ' two', 'X-Spaced', '\tpadded value \t', 'AUTHORIZATION', 'Bearer a', 'X-Empty', '', 'X-Inner', 'a \t b', 'X-Nbsp', '\u00a0kept\u00a0'];
    const headers = new Headers();
    for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
    for (const name of ['x-twice', 'x-spaced', 'authorization', 'x-empty', 'x-inner', 'x-nbsp', 'x-absent']) {
      assert.equal(nodeHeader(incomingMessage(raw), name), headers.get(name), name);
    }
  });

  it('counts a body as framed within the cap only for HTTP/1 with a Content-Length at most the cap and no Transfer-Encoding', () => {
    const node = (httpVersionMajor: number, headers: http.IncomingHttpHeaders): NodeRequest => ({ httpVersionMajor, headers }) as unknown as NodeRequest;
    assert.equal(framedWithin(node(1, { 'content-length': '1000' }), 1000), true);
    assert.equal(framedWithin(node(1, { 'content-length': '1001' }), 1000), false);
    assert.equal(framedWithin(node(1, {}), 1000), false, 'chunked');
    assert.equal(framedWithin(node(1, { 'content-length': '10', 'transfer-encoding': 'chunked' }), 1000), false);
    assert.equal(framedWithin(node(2, { 'content-length': '10' }), 1000), false, 'HTTP/2 frames bodies otherwise');
  });
});
