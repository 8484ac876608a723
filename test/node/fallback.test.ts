/**
 * The same answers from the resource server's Hono guard with the fast path as without it. The
 * same app runs on the authorization server's own listener, which notes the Node request beside
 * each Web Request (node/request.ts: headers and the body's framing are read from the Node
 * request), and on @hono/node-server's plain `serve`, whose Web Request carries no note and is
 * read through its public API. The Authorization header, body caps and 413s are compared. The
 * authorization server's own reading of requests is compared the same way in
 * test/authorization-server/edge-request.test.ts.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { createListener, type Listener } from '../../src/authorization-server/node-server/listener.js';
import { nodeRequestOf } from '../../src/node/request.js';
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

describe('the fast path and the Web Request give the same answers', { timeout: 300_000 }, () => {
  const h = createHarness();
  const servers: ServerType[] = [];
  let fastPort: number;
  let fallbackPort: number;
  let authorization: string;
  let listener: Listener;

  const app = new Hono<{ Variables: AuthVariables }>();
  const fast = (c: { req: { raw: Request }; env: unknown }): boolean => nodeRequestOf(c.req.raw, (c.env as { incoming?: unknown }).incoming) !== undefined;
  // The resource server's Hono guard: the Authorization header and the body cap.
  app.post('/mcp', async (c, next) => {
    c.set('fast' as never, fast(c) as never);
    await next();
  });
  let protection: ReturnType<typeof protect>;
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

  const listen = (fetch: (request: Request, env: unknown) => Response | Promise<Response>): Promise<number> =>
    new Promise((resolve) => {
      const server = serve({ fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => resolve(info.port));
      servers.push(server);
    });

  before(async () => {
    protection = protect(h, (await VERIFIERS[0]!.create(h)).verifier);
    authorization = bearer(await accessToken(h, REVISIONS[1]));
    listener = createListener({ host: '127.0.0.1', port: 0 }, []);
    await listener.listen();
    listener.serve(app);
    fastPort = Number(new URL(listener.url).port);
    fallbackPort = await listen((request, env) => app.fetch(request, env));
  });
  after(async () => {
    await listener.drain();
    for (const server of servers) {
      server.close();
      (server as http.Server).closeAllConnections();
    }
  });

  /** Sends `sent` to both servers; asserts each took its path, and returns the answers without that flag. */
  async function both(sent: Sent): Promise<[Answer, Answer]> {
    const answers = [await send(fastPort, sent), await send(fallbackPort, sent)];
    const [onFast, onFallback] = answers.map(({ status, body: { fast: path, ...body } }) => ({ status, body, path }));
    // The guard answers 401 and 413 before the handler sets the flag.
    if (onFast!.path !== undefined) assert.equal(onFast!.path, true, "the listener's request is read from the Node request");
    if (onFallback!.path !== undefined) assert.equal(onFallback!.path, false, 'the second reads the Web Request');
    return [
      { status: onFast!.status, body: onFast!.body },
      { status: onFallback!.status, body: onFallback!.body },
    ];
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
      const [onFast, onFallback] = await both({ ...sent, ...(lines ? { lines } : {}) });
      assert.equal(onFast.status, status, JSON.stringify(onFast.body));
      assert.deepEqual(onFallback, onFast);
    });
  }
});
