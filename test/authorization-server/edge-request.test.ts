/**
 * The edge's two adapters give the same EndpointRequest for the same HTTP message. One app, whose
 * route echoes the request it was handed, runs on two real servers: the server's own listener
 * (the request read from Node's IncomingMessage, http/from-node.ts) and @hono/node-server's
 * `serve` (no note beside its Web Request, so the Web Request is read, http/from-web.ts). The
 * same raw messages go to both: forms, JSON, repeated fields, bodies over the cap (declared, and
 * chunked), bodies that are not UTF-8, cookies sent twice, repeated and padded headers, and a
 * client address forwarded by a trusted proxy.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { trustedProxies } from '../../src/core/client-address.js';
import { createListener, type Listener } from '../../src/authorization-server/node-server/listener.js';
import { json } from '../../src/authorization-server/http/responses.js';
import { route } from '../../src/authorization-server/http/routes.js';
import type { EndpointRequest } from '../../src/authorization-server/http/request.js';

const LIMIT = 100;

/** The request as JSON: the URL as its href, the cookies as pairs. */
const echo = (request: EndpointRequest) => ({ ...request, url: request.url.href, cookies: [...request.cookies] });

function echoApp(peers: WeakMap<Request, string>): Hono {
  const app = new Hono();
  // Which adapter read the body: the Web Request's is untouched when the Node request was read.
  app.use('*', async (c, next) => {
    await next();
    c.res.headers.set('x-web-body-used', String(c.req.raw.bodyUsed));
  });
  const edge = { maxBodyBytes: LIMIT, trustedProxies: trustedProxies(['127.0.0.1']), peerOf: (request: Request) => peers.get(request) };
  const handle = (request: EndpointRequest) => json(echo(request));
  route(app, '/echo', { GET: handle, POST: handle }, { cors: false, log: () => {}, edge });
  return app;
}

interface Answer {
  status: number;
  webBodyUsed: string | null;
  request: Record<string, unknown>;
}

/** Sends `message` as raw bytes (`{port}` replaced by the server's port) and reads the one answer. */
function sendRaw(port: number, message: string | Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const text = Buffer.concat(chunks).toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = text.slice(0, end);
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? NaN);
      const body = text.slice(end + 4);
      if (!(Buffer.byteLength(body) >= length)) return;
      socket.destroy();
      resolve({
        status: Number(head.split(' ')[1]),
        webBodyUsed: /x-web-body-used: (\w+)/i.exec(head)?.[1] ?? null,
        request: JSON.parse(body.slice(0, length)) as Record<string, unknown>,
      });
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`closed before an answer: ${Buffer.concat(chunks).toString('utf8')}`)));
    const bytes = typeof message === 'string' ? Buffer.from(message) : message;
    socket.write(Buffer.from(bytes.toString('latin1').replaceAll('{port}', String(port)), 'latin1'));
  });
}

function post(body: string | Buffer, headers: string[]): Buffer {
  const head = ['POST /echo?x=1 HTTP/1.1', 'Host: 127.0.0.1:{port}', ...headers, '', ''].join('\r\n');
  return Buffer.concat([Buffer.from(head), typeof body === 'string' ? Buffer.from(body) : body]);
}

describe('the edge: one EndpointRequest from the Node request and from the Web Request', { timeout: 300_000 }, () => {
  const peers = new WeakMap<Request, string>();
  let listener: Listener;
  let plain: ServerType;
  let nodePort: number;
  let webPort: number;
  before(async () => {
    listener = createListener({ host: '127.0.0.1', port: 0 }, ['127.0.0.1']);
    await listener.listen();
    listener.serve(echoApp(peers));
    nodePort = Number(new URL(listener.url).port);
    const app = echoApp(peers);
    await new Promise<void>((resolve) => {
      plain = serve(
        {
          hostname: '127.0.0.1',
          port: 0,
          fetch: (request, env: { incoming: { socket: { remoteAddress?: string } } }) => {
            peers.set(request, env.incoming.socket.remoteAddress!);
            return app.fetch(request, env);
          },
        },
        () => resolve(),
      );
    });
    webPort = (plain.address() as AddressInfo).port;
  });
  after(async () => {
    await listener.drain();
    await new Promise<void>((resolve) => plain.close(() => resolve()));
  });

  /** The message to both servers: the same answer, each through its own adapter. */
  async function both(message: string | Buffer, readsBody = true): Promise<Answer> {
    const fromNode = await sendRaw(nodePort, message);
    const fromWeb = await sendRaw(webPort, message);
    if (readsBody) {
      assert.equal(fromNode.webBodyUsed, 'false', "the listener's request is read from the Node request");
      assert.equal(fromWeb.webBodyUsed, 'true', "serve's request is read from the Web Request");
    }
    const port = (answer: Answer, p: number) => ({
      ...answer,
      webBodyUsed: null,
      request: { ...answer.request, url: String(answer.request.url).replace(String(p), 'PORT') },
    });
    assert.deepEqual(port(fromNode, nodePort), port(fromWeb, webPort));
    return port(fromNode, nodePort);
  }

  it('a form: every field decoded, in order, a repeated one kept for the endpoint to refuse', async () => {
    const body = 'grant_type=refresh_token&scope=a+b%20c&resource=x&resource=y&empty=';
    const { request } = await both(post(body, ['Content-Type: application/x-www-form-urlencoded; charset=UTF-8', `Content-Length: ${body.length}`]));
    assert.equal(request.method, 'POST');
    assert.equal(request.url, 'http://127.0.0.1:PORT/echo?x=1');
    assert.deepEqual(request.body, {
      kind: 'form',
      fields: [
        ['grant_type', 'refresh_token'],
        ['scope', 'a b c'],
        ['resource', 'x'],
        ['resource', 'y'],
        ['empty', ''],
      ],
    });
  });

  it('a form sent chunked, without a length', async () => {
    const { request } = await both(
      post('5\r\na=b&c\r\n4\r\n=dé\r\n0\r\n\r\n', ['Content-Type: application/x-www-form-urlencoded', 'Transfer-Encoding: chunked']),
    );
    assert.deepEqual(request.body, {
      kind: 'form',
      fields: [
        ['a', 'b'],
        ['c', 'dé'],
      ],
    });
  });

  it('JSON, parsed; JSON that is not, named', async () => {
    const body = '{"redirect_uris":["http://127.0.0.1/cb"],"n":1}';
    const { request } = await both(post(body, ['Content-Type: application/json', `Content-Length: ${body.length}`]));
    assert.deepEqual(request.body, { kind: 'json', value: { redirect_uris: ['http://127.0.0.1/cb'], n: 1 } });
    const broken = await both(post('{"a":', ['Content-Type: application/json', 'Content-Length: 5']));
    assert.deepEqual(broken.request.body, { kind: 'unreadable', defect: 'not_json' });
  });

  it('a body over the cap: refused by its declared length, or as it streams past the cap, unread beyond it', async () => {
    const declared = await both(post('a=b', ['Content-Type: application/x-www-form-urlencoded', `Content-Length: ${LIMIT + 1}`]), false);
    assert.deepEqual(declared.request.body, { kind: 'unreadable', defect: 'too_large' });
    const chunk = 'a='.padEnd(60, 'x');
    const streamed = await both(
      post(`${(60).toString(16)}\r\n${chunk}\r\n${(60).toString(16)}\r\n${chunk}\r\n0\r\n\r\n`, [
        'Content-Type: application/x-www-form-urlencoded',
        'Transfer-Encoding: chunked',
      ]),
      false,
    );
    assert.deepEqual(streamed.request.body, { kind: 'unreadable', defect: 'too_large' });
    // Exactly the cap is not over it.
    const full = 'a='.padEnd(LIMIT, 'x');
    const atCap = await both(post(full, ['Content-Type: application/x-www-form-urlencoded', `Content-Length: ${LIMIT}`]));
    assert.deepEqual(atCap.request.body, { kind: 'form', fields: [['a', full.slice(2)]] });
  });

  it('a body that is not UTF-8 is refused, not patched', async () => {
    const { request } = await both(post(Buffer.from([0x61, 0x3d, 0xff, 0xfe]), ['Content-Type: application/x-www-form-urlencoded', 'Content-Length: 4']));
    assert.deepEqual(request.body, { kind: 'unreadable', defect: 'not_utf8' });
  });

  it('another media type is named and not read; a GET has no body', async () => {
    const other = await both(post('hello', ['Content-Type: Text/Plain; charset=utf-8', 'Content-Length: 5']), false);
    assert.deepEqual(other.request.body, { kind: 'other', mediaType: 'text/plain' });
    const none = await both(post('a=b', ['Content-Length: 3']), false);
    assert.deepEqual(none.request.body, { kind: 'other', mediaType: '' });
    const get = await both('GET /echo?q=%20 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n', false);
    assert.equal(get.request.method, 'GET');
    assert.equal(get.request.url, 'http://127.0.0.1:PORT/echo?q=%20');
    assert.deepEqual(get.request.body, { kind: 'none' });
  });

  it('cookies: every value of a name, in order, across two Cookie headers', async () => {
    const { request } = await both(
      'GET /echo HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: ca_browser=a; other=b;ca_browser =c\r\nCookie: xca_browser=d; novalue; ca_browser=e\r\n\r\n',
      false,
    );
    assert.deepEqual(request.cookies, [
      ['ca_browser', ['a', 'c', 'e']],
      ['other', ['b']],
      ['xca_browser', ['d']],
    ]);
  });

  it('headers: repeats joined, padding trimmed, case ignored, absent ones null', async () => {
    const { request } = await both(
      'GET /echo HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAUTHORIZATION:   Basic abc  \r\nDPoP: one\r\ndpop: two\r\nOrigin: https://app.example\r\nSec-Fetch-Site: cross-site\r\nForwarded: for=1.2.3.4\r\n\r\n',
      false,
    );
    assert.deepEqual(request.headers, {
      authorization: 'Basic abc',
      dpop: 'one, two',
      contentType: null,
      origin: 'https://app.example',
      secFetchSite: 'cross-site',
      forwarded: 'for=1.2.3.4',
      xForwardedFor: null,
    });
  });

  it('the client address: the peer, or what the trusted proxy forwarded for; the peer kept beside it', async () => {
    const direct = await both('GET /echo HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n', false);
    assert.equal(direct.request.clientAddress, '127.0.0.1');
    assert.equal(direct.request.peerAddress, '127.0.0.1');
    const forwarded = await both(
      'GET /echo HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Forwarded-For: 203.0.113.9, 198.51.100.7\r\nX-Forwarded-For: 127.0.0.1\r\n\r\n',
      false,
    );
    assert.equal(forwarded.request.clientAddress, '198.51.100.7');
    assert.equal(forwarded.request.peerAddress, '127.0.0.1');
  });
});
