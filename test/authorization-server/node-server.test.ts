/**
 * The authorization server's HTTP plumbing on its own Node listener, a real server over loopback.
 * Request bodies are read straight from Node's IncomingMessage (http/from-node.ts): the cap
 * whatever Content-Length says, chunked bodies, UTF-8, empty bodies, clients that go away, the
 * web body left untouched, and a Request a middleware replaced read as the replacement rather
 * than as the socket's bytes. route() adds
 * CORS headers to the response it is given, in a way that survives the adapter's lazy Response.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { Hono } from 'hono';
import { OAuthError } from '../../src/core/errors.js';
import { createListener, type Listener } from '../../src/authorization-server/node-server/listener.js';
import { formFields } from '../../src/authorization-server/http/params.js';
import type { EndpointRequest } from '../../src/authorization-server/http/request.js';
import { json, respond, seeOther } from '../../src/authorization-server/http/responses.js';
import { route } from '../../src/authorization-server/http/routes.js';
import { createHarness, registerServiceClient, basic } from '../helpers/harness.js';

const LIMIT = 1000;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/**
 * A POST through a real socket. `chunks` are written one by one (chunked unless `declared` sets
 * Content-Length); with `keepOpen` the request is never ended, so an answer proves the server
 * did not wait for the rest of the body.
 */
function rawPost(
  port: number,
  path: string,
  chunks: (string | Buffer)[],
  options: { declared?: number; keepOpen?: boolean; headers?: Record<string, string> } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', ...options.headers };
    if (options.declared !== undefined) headers['content-length'] = String(options.declared);
    const request = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers, agent: false }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text });
        request.destroy();
      });
    });
    request.on('error', reject);
    request.flushHeaders();
    for (const chunk of chunks) request.write(chunk);
    if (!options.keepOpen) request.end();
  });
}

/** `app` on the server's own listener, which notes the Node request beside each Web Request. */
async function listen(app: Hono): Promise<{ server: Listener; port: number }> {
  const server = createListener({ host: '127.0.0.1', port: 0 }, []);
  await server.listen();
  server.serve(app);
  return { server, port: Number(new URL(server.url).port) };
}

const close = (server: Listener): Promise<void> => server.drain();

const EDGE = { maxBodyBytes: LIMIT, trustedProxies: null };

// A read that waits for bytes that never come fails here rather than hanging the run.
describe('reading a body from the Node request (http/from-node.ts)', { timeout: 300_000 }, () => {
  /** What the echo route's reads ended in, in order, including those whose client had gone. */
  const settled: string[] = [];
  /** The form's fields as the route read them; a refusal as its OAuth error. */
  const echo = (request: EndpointRequest) => {
    try {
      const fields = formFields(request, LIMIT, 'a form');
      settled.push('read');
      return json({ fields });
    } catch (error) {
      settled.push(error instanceof OAuthError ? error.code : 'error');
      throw error;
    }
  };
  const app = new Hono();
  // Which request was read: the Web Request's body is untouched when the Node request's was read.
  app.use('*', async (c, next) => {
    await next();
    c.res.headers.set('x-web-body-used', String(c.req.raw.bodyUsed));
  });
  // Waits until Node's parser has the whole message (as the token endpoint usually finds it, after
  // a microtask or two): the body is then taken from the buffer in one synchronous read.
  app.use('/echo-buffered', async (c, next) => {
    const incoming = (c.env as { incoming: http.IncomingMessage }).incoming;
    for (let i = 0; i < 200 && !incoming.complete; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    const buffered = incoming.complete && incoming.readableFlowing === null;
    await next();
    c.res.headers.set('x-buffered', String(buffered));
  });
  route(app, '/echo', { POST: echo }, { cors: false, log: () => {}, edge: EDGE });
  route(app, '/echo-buffered', { POST: echo }, { cors: false, log: () => {}, edge: EDGE });
  // A middleware that hands the route a different Request (as a decompressing one would), leaving
  // the original's body unread on the socket.
  const replacing = new Hono();
  replacing.use('/echo', async (c, next) => {
    c.req.raw = new Request(c.req.raw.url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'replaced=1' });
    await next();
  });
  replacing.route('/', app);

  let port: number;
  let replacingPort: number;
  let servers: Listener[];
  before(async () => {
    const direct = await listen(app);
    const replaced = await listen(replacing);
    port = direct.port;
    replacingPort = replaced.port;
    servers = [direct.server, replaced.server];
  });
  after(async () => {
    for (const server of servers) await close(server);
  });

  const fieldsOf = (answer: Answer) => (JSON.parse(answer.text) as { fields: [string, string][] }).fields;

  it('reads the body from the socket and leaves the Web Request body untouched', async () => {
    const answer = await rawPost(port, '/echo', ['grant_type=refresh_token', '&refresh_token=abc']);
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(fieldsOf(answer), [
      ['grant_type', 'refresh_token'],
      ['refresh_token', 'abc'],
    ]);
    assert.equal(answer.headers['x-web-body-used'], 'false');
  });

  it('reads a plain Web Request (app.request, no Node request) through its stream', async () => {
    const response = await app.request('/echo', { method: 'POST', body: 'a=b', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    // The header first: headers of @hono/node-server's lazy Response are lost once its body is read.
    assert.equal(response.headers.get('x-web-body-used'), 'true');
    assert.deepEqual(await response.json(), { fields: [['a', 'b']] });
  });

  it('reads the replacement when a middleware replaced the Request, not the bytes on the socket', async () => {
    const answer = await rawPost(replacingPort, '/echo', ['grant_type=a']);
    assert.deepEqual(fieldsOf(answer), [['replaced', '1']]);
    assert.equal(answer.headers['x-web-body-used'], 'true');
  });

  it('takes a body of exactly the cap', async () => {
    const body = 'x'.repeat(LIMIT);
    const chunked = await rawPost(port, '/echo', [body.slice(0, 300), body.slice(300)]);
    assert.equal(chunked.status, 200, chunked.text);
    assert.deepEqual(fieldsOf(chunked), [[body, '']]);
    assert.equal((await rawPost(port, '/echo', [body], { declared: LIMIT })).status, 200);
  });

  it('refuses a declared Content-Length over the cap with 413 before any of the body is sent', async () => {
    const answer = await rawPost(port, '/echo', [], { declared: LIMIT + 1, keepOpen: true });
    assert.equal(answer.status, 413);
    assert.equal(JSON.parse(answer.text).error, 'invalid_request');
  });

  it('refuses a chunked body with 413 once it passes the cap, while the client is still sending', async () => {
    const answer = await rawPost(port, '/echo', ['x'.repeat(600), 'x'.repeat(600)], { keepOpen: true });
    assert.equal(answer.status, 413);
    assert.match(JSON.parse(answer.text).error_description, /larger than 1000 bytes/);
  });

  it('refuses a body that is not UTF-8, and decodes UTF-8 split across chunks afterwards', async () => {
    const bad = await rawPost(port, '/echo', [Buffer.from([0x61, 0x3d, 0xff, 0xfe])]);
    assert.equal(bad.status, 400);
    assert.match(JSON.parse(bad.text).error_description, /UTF-8/);
    const e = Buffer.from('é');
    const split = await rawPost(port, '/echo', [Buffer.from('a='), e.subarray(0, 1), e.subarray(1)]);
    assert.equal(split.status, 200);
    assert.deepEqual(fieldsOf(split), [['a', 'é']]);
  });

  it('reads an empty body, declared or chunked, as no fields', async () => {
    assert.deepEqual(fieldsOf(await rawPost(port, '/echo', [], { declared: 0 })), []);
    assert.deepEqual(fieldsOf(await rawPost(port, '/echo', [])), []);
  });

  it('takes a body Node has wholly buffered in one read, and refuses one over the cap with 413', async () => {
    const atCap = await rawPost(port, '/echo-buffered', ['x'.repeat(LIMIT)]);
    assert.deepEqual(fieldsOf(atCap), [['x'.repeat(LIMIT), '']]);
    assert.equal(atCap.headers['x-buffered'], 'true');
    const declared = await rawPost(port, '/echo-buffered', ['a=b'], { declared: 3 });
    assert.deepEqual(fieldsOf(declared), [['a', 'b']]);
    assert.equal(declared.headers['x-buffered'], 'true');
    // Chunked, so no Content-Length refuses it early: only the count of buffered bytes does.
    const over = await rawPost(port, '/echo-buffered', ['x'.repeat(LIMIT + 1)]);
    assert.equal(over.status, 413);
    assert.equal(over.headers['x-buffered'], 'true');
    const empty = await rawPost(port, '/echo-buffered', []);
    assert.deepEqual(fieldsOf(empty), []);
    assert.equal(empty.headers['x-buffered'], 'true');
  });

  it('gives up on a client that goes away mid-body, and goes on serving others', async () => {
    const before = settled.length;
    await new Promise<void>((resolve, reject) => {
      const request = http.request({
        host: '127.0.0.1',
        port,
        path: '/echo',
        method: 'POST',
        headers: { 'content-length': '500', 'content-type': 'application/x-www-form-urlencoded' },
        agent: false,
      });
      request.on('error', () => resolve());
      request.on('close', () => resolve());
      request.on('response', () => reject(new Error('no answer expected')));
      request.write('x'.repeat(100), () => setTimeout(() => request.destroy(), 50));
    });
    // The read ended (rather than waiting for bytes that never come), as the client's error (a 400
    // no one receives), not one of ours logged as internal.
    for (let i = 0; i < 100 && settled.length === before; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(settled.slice(before), ['invalid_request']);
    assert.equal((await rawPost(port, '/echo', ['a=b'])).status, 200);
  });
});

describe('the authorization server on its own Node listener', { timeout: 300_000 }, () => {
  const h = createHarness({ maxBodyBytes: LIMIT });
  let port: number;
  let server: Listener;
  before(async () => {
    ({ server, port } = await listen(h.server.app));
  });
  after(() => close(server));

  it('answers a token request read from the socket, with its CORS and no-store headers', async () => {
    const client = await registerServiceClient(h);
    const answer = await rawPost(port, '/token', ['grant_type=client_credentials', '&scope=mcp:tools'], {
      headers: { authorization: basic(client.client_id, client.client_secret!) },
    });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(typeof JSON.parse(answer.text).access_token, 'string');
    assert.match(answer.headers['content-type'] ?? '', /^application\/json/);
    assert.equal(answer.headers['cache-control'], 'no-store');
    assert.equal(answer.headers.pragma, 'no-cache');
    assert.equal(answer.headers['access-control-allow-origin'], '*');
    assert.equal(answer.headers['access-control-expose-headers'], 'WWW-Authenticate, DPoP-Nonce');
    assert.equal(answer.headers['content-length'], String(Buffer.byteLength(answer.text)));
  });

  it('refuses a chunked form over the cap with 413 while the client is still sending', async () => {
    const answer = await rawPost(port, '/token', ['a='.padEnd(LIMIT, 'x'), 'xx'], { keepOpen: true });
    assert.equal(answer.status, 413);
    assert.equal(answer.headers['access-control-allow-origin'], '*');
  });

  it('answers HEAD like GET, without the body', async () => {
    const url = `http://127.0.0.1:${port}/.well-known/oauth-authorization-server`;
    const head = await fetch(url, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), '');
    // (No Content-Length: Hono answers HEAD with `new Response(null, getResponse)`, as before.)
    assert.match(head.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(head.headers.get('access-control-allow-origin'), '*');
    assert.equal(head.headers.get('cache-control'), 'public, max-age=300');
  });

  it('answers 405 with Allow and a preflight with 204', async () => {
    const wrong = await fetch(`http://127.0.0.1:${port}/token`);
    assert.equal(wrong.status, 405);
    assert.equal(wrong.headers.get('allow'), 'POST');
    assert.equal(wrong.headers.get('access-control-allow-origin'), '*');
    const preflight = await fetch(`http://127.0.0.1:${port}/token`, { method: 'OPTIONS' });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-methods'), 'POST, OPTIONS');
  });
});

describe('route() turns the answer into a Response, with its CORS headers', () => {
  it('a redirect with cookies, a plain answer and JSON each keep their headers beside CORS', async () => {
    const app = new Hono();
    route(app, '/moved', { GET: () => seeOther('http://127.0.0.1/elsewhere', ['a=1; Path=/', 'b=2; Path=/']) }, { cors: true, log: () => {}, edge: EDGE });
    route(app, '/plain', { GET: () => respond('ok', 200, { 'Content-Type': 'text/plain' }) }, { cors: true, log: () => {}, edge: EDGE });
    route(app, '/json', { GET: () => json({ ok: true }) }, { cors: true, log: () => {}, edge: EDGE });
    const moved = await app.request('/moved');
    assert.equal(moved.status, 303);
    assert.equal(moved.headers.get('location'), 'http://127.0.0.1/elsewhere');
    assert.deepEqual(moved.headers.getSetCookie(), ['a=1; Path=/', 'b=2; Path=/']);
    assert.equal(moved.headers.get('access-control-allow-origin'), '*');
    const plain = await app.request('/plain');
    assert.equal(plain.headers.get('access-control-allow-methods'), 'GET, OPTIONS');
    assert.equal(await plain.text(), 'ok');
    // Headers first: under @hono/node-server (started above, it replaces the global Response)
    // headers set on a response are lost once its body is read.
    const built = await app.request('/json');
    assert.equal(built.headers.get('access-control-allow-origin'), '*');
    assert.equal(built.headers.get('cache-control'), 'no-store');
    assert.deepEqual(await built.json(), { ok: true });
  });
});
