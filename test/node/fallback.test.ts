/**
 * The same answers from the resource server's Hono guard with the fast path as without it. The
 * same app runs on the authorization server's own listener, which notes the Node request beside
 * each Web Request (node/request.ts: headers and the body's framing are read from the Node
 * request); on @hono/node-server's plain `serve`, whose lightweight Web Request is still untouched
 * when the guard sees it (read from the Node request too); and on plain `serve` behind a middleware
 * that put another Request in its place, or one that read the lightweight Request's headers: those
 * are read through their public API. The Authorization header, body caps and 413s are compared;
 * a middleware that rewrites the Authorization header is seen by the guard. The authorization
 * server's own reading of requests is compared the same way in
 * test/authorization-server/edge-request.test.ts.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { createListener, type Listener } from '../../src/authorization-server/node-server/listener.js';
import { untouchedNodeRequestOf } from '../../src/node/request.js';
import { honoBearerAuth, type AuthVariables } from '../../src/resource-server/adapters/hono.js';
import { BodyTooLargeError, bodyTooLargeResponse } from '../../src/resource-server/body-limit.js';
import { accessToken, bearer, createHarness, protect, REVISIONS, VERIFIERS } from '../resource-server/setup.js';

const LIMIT = 1000;
const VALID = '<a valid access token>';

interface Sent {
  path: string;
  chunks?: (string | Buffer)[];
  /** Content-Length to declare (possibly a lie); chunked without it. */
  declared?: number;
  /** Never end the request: an answer proves the server did not wait for the rest. */
  keepOpen?: boolean;
  lines?: [string, string][];
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

function send(port: number, sent: Sent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const lines: string[] = ['Host', `127.0.0.1:${port}`, 'Content-Type', 'application/x-www-form-urlencoded'];
    for (const [name, value] of sent.lines ?? []) lines.push(name, value);
    if (sent.declared !== undefined) lines.push('Content-Length', String(sent.declared));
    const request = http.request(
      { host: '127.0.0.1', port, path: sent.path, method: 'POST', agent: false, headers: lines as unknown as http.OutgoingHttpHeaders },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> });
          request.destroy();
        });
      },
    );
    request.on('error', reject);
    request.flushHeaders();
    for (const chunk of sent.chunks ?? []) request.write(chunk);
    if (!sent.keepOpen) request.end();
  });
}

type Middleware = (c: { req: { raw: Request } }, next: () => Promise<void>) => Promise<void>;

/** What may run before the guard on a user's own server. */
const BEFORE: Record<string, Middleware> = {
  // Another Request in the adapter's one's place, as a decompressing middleware would make.
  replaced: async (c, next) => {
    const raw = c.req.raw;
    c.req.raw = new Request(raw.url, { method: raw.method, headers: raw.headers, body: raw.body, duplex: 'half' } as RequestInit);
    await next();
  },
  // The lightweight Request's headers read (so made), and the Authorization header rewritten from another.
  rewrote: async (c, next) => {
    const moved = c.req.raw.headers.get('x-moved-authorization');
    if (moved !== null) c.req.raw.headers.set('authorization', moved);
    await next();
  },
};

describe('the fast path and the Web Request give the same answers', { timeout: 300_000 }, () => {
  const h = createHarness();
  const servers: ServerType[] = [];
  let authorization: string;
  let listener: Listener;
  let protection: ReturnType<typeof protect>;

  const fast = (c: { req: { raw: Request }; env: unknown }): boolean =>
    untouchedNodeRequestOf(c.req.raw, (c.env as { incoming?: unknown }).incoming) !== undefined;

  function guardedApp(before?: Middleware): Hono<{ Variables: AuthVariables }> {
    const app = new Hono<{ Variables: AuthVariables }>();
    if (before) app.use('/mcp', before);
    // Which way the guard reads the request: set before it, seen by the handler.
    app.post('/mcp', async (c, next) => {
      c.set('fast' as never, fast(c) as never);
      await next();
    });
    // The resource server's Hono guard: the Authorization header and the body cap.
    app.use('/mcp', (c, next) => honoBearerAuth(protection, { maxBodyBytes: LIMIT })(c, next));
    app.post('/mcp', async (c) => {
      const path = c.get('fast' as never) as boolean;
      try {
        return c.json({ fast: path, subject: c.get('auth').subject, text: await c.req.text() });
      } catch (error) {
        const cause = (error as { cause?: unknown }).cause;
        if (error instanceof BodyTooLargeError || cause instanceof BodyTooLargeError) return bodyTooLargeResponse(LIMIT);
        throw error;
      }
    });
    return app;
  }

  const listen = (app: Hono<{ Variables: AuthVariables }>): Promise<number> =>
    new Promise((resolve) => {
      const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => resolve(info.port));
      servers.push(server);
    });

  /** Each server, the way its guard should read the request, and its port. */
  const ports: { name: string; fast: boolean; port: number }[] = [];

  before(async () => {
    protection = protect(h, (await VERIFIERS[0]!.create(h)).verifier);
    authorization = bearer(await accessToken(h, REVISIONS[1]));
    listener = createListener({ host: '127.0.0.1', port: 0 }, []);
    await listener.listen();
    listener.serve(guardedApp());
    ports.push({ name: "the authorization server's listener", fast: true, port: Number(new URL(listener.url).port) });
    ports.push({ name: "@hono/node-server's serve", fast: true, port: await listen(guardedApp()) });
    ports.push({ name: 'serve, the Request replaced', fast: false, port: await listen(guardedApp(BEFORE.replaced)) });
    ports.push({ name: 'serve, its headers read', fast: false, port: await listen(guardedApp(BEFORE.rewrote)) });
  });
  after(async () => {
    await listener.drain();
    for (const server of servers) {
      server.close();
      (server as http.Server).closeAllConnections();
    }
  });

  /** Sends `sent` to every server; asserts each took its path, and returns the answers without that flag. */
  async function toEach(sent: Sent): Promise<Answer[]> {
    const answers: Answer[] = [];
    for (const { name, fast: expected, port } of ports) {
      const { status, body } = await send(port, sent);
      const { fast: path, ...rest } = body;
      // The guard answers 401 and 413 before the handler sends the flag back.
      if (path !== undefined) assert.equal(path, expected, `${name}: ${expected ? 'read from the Node request' : 'read through the Web Request'}`);
      answers.push({ status, body: rest });
    }
    return answers;
  }

  // The valid token is issued in before(): the cases name it by this placeholder.
  const guarded: Array<[string, Sent, number]> = [
    ['a token and a body framed within the cap', { path: '/mcp', chunks: ['{"jsonrpc":"2.0"}'], declared: 17, lines: [['Authorization', VALID]] }, 200],
    ['a token and a chunked body within the cap', { path: '/mcp', chunks: ['{"jsonrpc"', ':"2.0"}'], lines: [['Authorization', VALID]] }, 200],
    ['a token and a declared length over the cap', { path: '/mcp', declared: LIMIT + 1, keepOpen: true, lines: [['Authorization', VALID]] }, 413],
    ['a token and a chunked body past the cap', { path: '/mcp', chunks: ['x'.repeat(600), 'x'.repeat(600)], lines: [['Authorization', VALID]] }, 413],
    ['no token', { path: '/mcp', chunks: ['{}'], declared: 2 }, 401],
    ['a token that is not one', { path: '/mcp', chunks: ['{}'], declared: 2, lines: [['authorization', 'Bearer not-a-jwt']] }, 401],
    [
      'two Authorization headers',
      {
        path: '/mcp',
        chunks: ['{}'],
        declared: 2,
        lines: [
          ['Authorization', VALID],
          ['authorization', 'Bearer x'],
        ],
      },
      400,
    ],
  ];
  for (const [name, sent, status] of guarded) {
    it(`resource server guard: ${name}`, async () => {
      const lines = sent.lines?.map(([header, value]): [string, string] => [header, value === VALID ? authorization : value]);
      const [first, ...others] = await toEach({ ...sent, ...(lines ? { lines } : {}) });
      assert.equal(first!.status, status, JSON.stringify(first!.body));
      for (const other of others) assert.deepEqual(other, first);
    });
  }

  it("a header a middleware rewrote is the one the guard reads, not the Node request's", async () => {
    const rewriting = ports.find((server) => server.name === 'serve, its headers read')!;
    const plain = ports.find((server) => server.name === "@hono/node-server's serve")!;
    const sent: Sent = {
      path: '/mcp',
      chunks: ['{}'],
      declared: 2,
      lines: [
        ['Authorization', 'Bearer not-a-jwt'],
        ['X-Moved-Authorization', authorization],
      ],
    };
    const rewritten = await send(rewriting.port, sent);
    assert.equal(rewritten.status, 200, JSON.stringify(rewritten.body));
    assert.equal(rewritten.body.fast, false);
    assert.equal((await send(plain.port, sent)).status, 401, 'without the middleware, the header sent is the one read');
  });
});
