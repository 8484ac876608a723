/**
 * The same answers with the fast path as without it. Two real @hono/node-server servers run the
 * same app: one hands it the adapter's own Request (the body and headers are read from the Node
 * request), the other a public copy of it beside the same `c.env.incoming`, which is what the app
 * would see from a version of the adapter node/request.ts does not recognise (the Web Request is
 * read). Bodies, caps and 413s, malformed UTF-8 and headers are compared for the authorization
 * server's form reading and the resource server's Hono guard.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { OAuthError } from '../../src/core/errors.js';
import { attachNodeRequest, readText, requestHeader } from '../../src/authorization-server/http/body.js';
import { nodeRequestBehind } from '../../src/node/request.js';
import { honoBearerAuth, type AuthVariables } from '../../src/resource-server/adapters/hono.js';
import { BodyTooLargeError, bodyTooLargeResponse } from '../../src/resource-server/body-limit.js';
import { accessToken, bearer, createHarness, protect, REVISIONS, VERIFIERS } from '../resource-server/setup.js';

const LIMIT = 1000;
const VALID = '<a valid access token>';
const HEADER_NAMES = ['authorization', 'content-type', 'content-length', 'x-twice', 'x-spaced', 'x-absent'];

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
    const request = http.request({ host: '127.0.0.1', port, path: sent.path, method: 'POST', agent: false, headers: lines as unknown as http.OutgoingHttpHeaders }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> });
        request.destroy();
      });
    });
    request.on('error', reject);
    request.flushHeaders();
    for (const chunk of sent.chunks ?? []) request.write(chunk);
    if (!sent.keepOpen) request.end();
  });
}

/** The Request as a version of the adapter that keeps its Node request otherwise would look to us: a Web Request and nothing more. */
function unlinked(request: Request): Request {
  return new Request(request.url, { method: request.method, headers: request.headers, body: request.body, duplex: 'half' } as RequestInit);
}

describe('the fast path and the Web Request give the same answers', { timeout: 20_000 }, () => {
  const h = createHarness();
  const servers: ServerType[] = [];
  let fastPort: number;
  let fallbackPort: number;
  let authorization: string;

  const app = new Hono<{ Variables: AuthVariables }>();
  const fast = (c: { req: { raw: Request }; env: unknown }): boolean => nodeRequestBehind(c.req.raw, (c.env as { incoming?: unknown }).incoming) !== undefined;
  // The authorization server's form reading (http/body.ts), as its routes use it.
  app.post('/form', async (c) => {
    const path = fast(c);
    attachNodeRequest(c.req.raw, (c.env as { incoming?: unknown }).incoming);
    const headers = Object.fromEntries(HEADER_NAMES.map((name) => [name, requestHeader(c.req.raw, name)]));
    try {
      return c.json({ fast: path, text: await readText(c.req.raw, LIMIT), headers });
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      return c.json({ fast: path, error: error.code, description: error.description, headers }, error.status as 400);
    }
  });
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
    fastPort = await listen((request, env) => app.fetch(request, env));
    fallbackPort = await listen((request, env) => app.fetch(unlinked(request), env));
  });
  after(() => {
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
    if (onFast!.path !== undefined) assert.equal(onFast!.path, true, 'the first server reads the Node request (test/node/request.test.ts says why not)');
    if (onFallback!.path !== undefined) assert.equal(onFallback!.path, false, 'the second reads the Web Request');
    return [{ status: onFast!.status, body: onFast!.body }, { status: onFallback!.status, body: onFallback!.body }];
  }

  const form: Array<[string, Sent, number]> = [
    ['a form with a Content-Length', { path: '/form', chunks: ['grant_type=refresh_token&refresh_token=abc'], declared: 42 }, 200],
    ['a chunked form, in pieces', { path: '/form', chunks: ['grant_type=refresh_token', '&refresh_token=abc'] }, 200],
    ['a body of exactly the cap, chunked', { path: '/form', chunks: ['x'.repeat(300), 'x'.repeat(LIMIT - 300)] }, 200],
    ['an empty body', { path: '/form', declared: 0 }, 200],
    ['UTF-8 split across chunks', { path: '/form', chunks: [Buffer.from('a='), Buffer.from('é').subarray(0, 1), Buffer.from('é').subarray(1)] }, 200],
    ['a body that is not UTF-8', { path: '/form', chunks: [Buffer.from([0x61, 0x3d, 0xff, 0xfe])] }, 400],
    ['a declared length over the cap, before the body is sent', { path: '/form', declared: LIMIT + 1, keepOpen: true }, 413],
    ['a chunked body past the cap, while the client is still sending', { path: '/form', chunks: ['x'.repeat(600), 'x'.repeat(600)], keepOpen: true }, 413],
    ['repeated and padded headers', { path: '/form', declared: 0, lines: [['X-Twice', 'one'], ['x-twice', 'two'], ['X-Spaced', '\tpadded \t'], ['Authorization', 'Basic a'], ['authorization', 'Basic b']] }, 200],
  ];
  for (const [name, sent, status] of form) {
    it(`authorization server form: ${name}`, async () => {
      const [onFast, onFallback] = await both(sent);
      assert.equal(onFast.status, status, JSON.stringify(onFast.body));
      assert.deepEqual(onFallback, onFast);
    });
  }

  // The valid token is issued in before(): the cases name it by this placeholder.
  const guarded: Array<[string, Sent, number]> = [
    ['a token and a body framed within the cap', { path: '/mcp', chunks: ['{"jsonrpc":"2.0"}'], declared: 17, lines: [['Authorization', VALID]] }, 200],
    ['a token and a chunked body within the cap', { path: '/mcp', chunks: ['{"jsonrpc"', ':"2.0"}'], lines: [['Authorization', VALID]] }, 200],
    ['a token and a declared length over the cap', { path: '/mcp', declared: LIMIT + 1, keepOpen: true, lines: [['Authorization', VALID]] }, 413],
    ['a token and a chunked body past the cap', { path: '/mcp', chunks: ['x'.repeat(600), 'x'.repeat(600)], lines: [['Authorization', VALID]] }, 413],
    ['no token', { path: '/mcp', chunks: ['{}'], declared: 2 }, 401],
    ['a token that is not one', { path: '/mcp', chunks: ['{}'], declared: 2, lines: [['authorization', 'Bearer not-a-jwt']] }, 401],
    ['two Authorization headers', { path: '/mcp', chunks: ['{}'], declared: 2, lines: [['Authorization', VALID], ['authorization', 'Bearer x']] }, 400],
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
