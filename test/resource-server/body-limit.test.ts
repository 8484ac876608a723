/**
 * Bodies sent to a protected route are capped before they are read, in the demo MCP server and in
 * both adapters: a declared length over the cap is 413 at once, a body streamed past it is cut
 * off there, and a request without a valid token is refused before its body is looked at.
 */
import assert from 'node:assert/strict';
import http, { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { Hono } from 'hono';
import { mountDemoMcpServer } from '../../src/demo/mcp-server.js';
import { BodyTooLargeError, bodyTooLargeResponse } from '../../src/resource-server/body-limit.js';
import { honoBearerAuth, type AuthVariables } from '../../src/resource-server/adapters/hono.js';
import { nodeBearerAuth, type AuthenticatedRequest } from '../../src/resource-server/adapters/node.js';
import { accessToken, bearer, close, createHarness, listen, protect, RESOURCE, REVISIONS, VERIFIERS } from './setup.js';
import { createListener } from '../../src/authorization-server/node-server/listener.js';

const LIMIT = 1000;

/** A body that arrives in chunks with no Content-Length, as a streaming client sends it. */
function streamed(bytes: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= bytes) return controller.close();
      const chunk = new Uint8Array(Math.min(256, bytes - sent)).fill(0x20);
      sent += chunk.length;
      controller.enqueue(chunk);
    },
  });
}

/** POST through a real socket: `declared` sets Content-Length (possibly a lie), else chunked. */
function rawPost(url: string, headers: Record<string, string>, body: Buffer, declared?: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers, ...(declared !== undefined ? { 'content-length': String(declared) } : {}) },
      },
      (response) => {
        let text = '';
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      },
    );
    request.on('error', (error: NodeJS.ErrnoException) =>
      error.code === 'ECONNRESET' || error.code === 'EPIPE' ? resolve({ status: 0, text: '' }) : reject(error),
    );
    request.write(body);
    if (declared === undefined || declared <= body.length) request.end();
  });
}

describe('request bodies are capped before they are read', () => {
  const revision = REVISIONS[1];
  const kind = VERIFIERS[0]!;

  it('the demo MCP server: 413 for a declared or streamed body over the cap; 401 first without a token', async () => {
    const h = createHarness();
    const { verifier } = await kind.create(h);
    const app = new Hono();
    mountDemoMcpServer(app, '/mcp', protect(h, verifier), { maxBodyBytes: LIMIT });
    const token = await accessToken(h, revision);
    const post = (body: BodyInit, headers: Record<string, string> = {}) =>
      app.fetch(
        new Request(RESOURCE, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
          duplex: 'half',
        } as RequestInit),
      );

    assert.equal((await post('x'.repeat(LIMIT + 1), { authorization: bearer(token) })).status, 413);
    assert.equal((await post(streamed(LIMIT * 4), { authorization: bearer(token) })).status, 413);
    assert.equal((await post('x'.repeat(LIMIT * 4))).status, 401, 'no token: refused before the body is read');
    const ok = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), { authorization: bearer(token) });
    assert.equal(ok.status, 200, 'a body within the cap is served');
  });

  it('the demo over a real socket answers a lying Content-Length at once, without waiting for the bytes', async () => {
    const h = createHarness();
    const { verifier } = await kind.create(h);
    const app = new Hono();
    mountDemoMcpServer(app, '/mcp', protect(h, verifier), { maxBodyBytes: LIMIT });
    const { serve } = await import('@hono/node-server');
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    try {
      const token = await accessToken(h, revision);
      const started = Date.now();
      // Announces 100 MiB and sends 10 bytes: the answer must not wait for the rest.
      const answer = await rawPost(url, { authorization: bearer(token) }, Buffer.from('{"jsonrpc"'), 100 * 1024 * 1024);
      assert.equal(answer.status, 413, answer.text);
      assert.ok(Date.now() - started < 5000);
    } finally {
      server.close();
    }
  });

  it("Hono adapter on @hono/node-server (the authorization server's listener or a plain serve): a body framed by a Content-Length within the cap is passed on as it came, a chunked one is still cut off; once a middleware has made the Web Request's headers, counted through a wrapper", async () => {
    const h = createHarness();
    const { verifier } = await kind.create(h);
    const app = new Hono<{ Variables: AuthVariables }>();
    // The Requests the adapter built, to tell whether the guard passed on the same one or a wrapper.
    const original = new WeakSet<Request>();
    app.use('/mcp', async (c, next) => {
      original.add(c.req.raw);
      // ?touch: a middleware that reads a header, which makes the lightweight Request's Headers.
      if (c.req.raw.url.endsWith('?touch')) c.req.raw.headers.get('accept');
      await next();
    });
    app.use('/mcp', honoBearerAuth(protect(h, verifier), { maxBodyBytes: LIMIT }));
    app.post('/mcp', async (c) => {
      try {
        return c.json({ length: (await c.req.text()).length, unwrapped: original.has(c.req.raw) });
      } catch (error) {
        const cause = (error as { cause?: unknown }).cause;
        if (error instanceof BodyTooLargeError || cause instanceof BodyTooLargeError) return bodyTooLargeResponse(LIMIT);
        throw error;
      }
    });
    // The listener notes the Node request beside each Web Request; plain serve's is recognized while untouched (node/request.ts).
    const listener = createListener({ host: '127.0.0.1', port: 0 }, []);
    await listener.listen();
    listener.serve(app);
    const { serve } = await import('@hono/node-server');
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    const noted = `${listener.url}/mcp`;
    const plain = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    try {
      const authorization = bearer(await accessToken(h, revision));
      for (const [url, framedUnwrapped] of [
        [noted, true],
        [plain, true],
        [`${plain}?touch`, false],
      ] as const) {
        const framed = await rawPost(url, { authorization }, Buffer.alloc(LIMIT, 0x20), LIMIT);
        assert.deepEqual(JSON.parse(framed.text), { length: LIMIT, unwrapped: framedUnwrapped }, url);
        const chunked = await rawPost(url, { authorization }, Buffer.alloc(LIMIT * 4, 0x20));
        assert.equal(chunked.status, 413, chunked.text);
        const small = await rawPost(url, { authorization }, Buffer.alloc(10, 0x20));
        assert.deepEqual(JSON.parse(small.text), { length: 10, unwrapped: false }, 'a chunked body is counted, through a wrapper');
        assert.equal((await rawPost(url, { authorization }, Buffer.alloc(10), LIMIT + 1)).status, 413);
      }
    } finally {
      server.close();
      (server as http.Server).closeAllConnections();
      await listener.drain();
    }
  });

  it("the demo over a real socket, on a plain @hono/node-server and on the authorization server's listener (its body read from the Node request), serves a body framed within the cap or chunked, and refuses a chunked one past it", async () => {
    const h = createHarness();
    const { verifier } = await kind.create(h);
    const app = new Hono();
    mountDemoMcpServer(app, '/mcp', protect(h, verifier), { maxBodyBytes: LIMIT });
    const { serve } = await import('@hono/node-server');
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    const listener = createListener({ host: '127.0.0.1', port: 0 }, []);
    await listener.listen();
    listener.serve(app);
    try {
      const headers = {
        authorization: bearer(await accessToken(h, revision)),
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      };
      const body = Buffer.from(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
        }),
      );
      for (const url of [`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, `${listener.url}/mcp`]) {
        const framed = await rawPost(url, headers, body, body.length);
        assert.equal(framed.status, 200, framed.text);
        assert.equal(JSON.parse(framed.text).id, 1);
        const chunkedWithin = await rawPost(url, headers, body);
        assert.equal(chunkedWithin.status, 200, chunkedWithin.text);
        assert.equal(JSON.parse(chunkedWithin.text).id, 1);
        const chunked = await rawPost(url, headers, Buffer.concat([body, Buffer.alloc(LIMIT, 0x20)]));
        assert.equal(chunked.status, 413, chunked.text);
      }
    } finally {
      server.close();
      (server as http.Server).closeAllConnections();
      await listener.drain();
    }
  });

  it("Hono adapter: 413 for a declared body over the cap; a streamed one fails the handler's read", async () => {
    const h = createHarness();
    const { verifier } = await kind.create(h);
    const app = new Hono<{ Variables: AuthVariables }>();
    app.use('/mcp', honoBearerAuth(protect(h, verifier), { maxBodyBytes: LIMIT }));
    app.post('/mcp', async (c) => {
      try {
        return c.text(String((await c.req.text()).length));
      } catch (error) {
        const cause = (error as { cause?: unknown }).cause;
        if (error instanceof BodyTooLargeError || cause instanceof BodyTooLargeError) return bodyTooLargeResponse(LIMIT);
        throw error;
      }
    });
    const token = await accessToken(h, revision);
    const post = (body: BodyInit) =>
      app.fetch(new Request(RESOURCE, { method: 'POST', body, headers: { authorization: bearer(token) }, duplex: 'half' } as RequestInit));
    assert.equal((await post('x'.repeat(LIMIT + 1))).status, 413);
    assert.equal((await post(streamed(LIMIT * 4))).status, 413);
    const within = await post('x'.repeat(LIMIT));
    assert.equal(within.status, 200);
    assert.equal(await within.text(), String(LIMIT));
  });

  it('node adapter: 413 for a declared or a streamed body over the cap', async () => {
    const h = createHarness();
    const { verifier } = await kind.create(h);
    const guard = nodeBearerAuth(protect(h, verifier), { maxBodyBytes: LIMIT });
    const server = createServer((req: AuthenticatedRequest, res: ServerResponse) => {
      guard(req, res, () => {
        let size = 0;
        req.on('data', (chunk: Buffer) => (size += chunk.length));
        req.on('end', () => res.writeHead(200).end(String(size)));
      });
    });
    const base = await listen(server);
    try {
      const token = await accessToken(h, revision);
      assert.equal((await rawPost(base, { authorization: bearer(token) }, Buffer.alloc(LIMIT + 1), LIMIT + 1)).status, 413);
      const chunked = await rawPost(base, { authorization: bearer(token) }, Buffer.alloc(LIMIT * 4));
      assert.ok(chunked.status === 413 || chunked.status === 0, `refused (413 or reset), not ${chunked.status}`);
      const within = await rawPost(base, { authorization: bearer(token) }, Buffer.alloc(LIMIT), LIMIT);
      assert.deepEqual(within, { status: 200, text: String(LIMIT) });
    } finally {
      await close(server);
    }
  });
});
