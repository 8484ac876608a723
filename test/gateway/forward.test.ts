/**
 * What the gateway does with an HTTP upstream's answers, through serve's app on the authorization
 * server's own listener (as `serve` runs it: the body read from the Node request, the client's
 * going away seen on the Node response) and in-process: answers of known length come whole (and
 * one cut off is 502), an event stream event by event, past the timeout once its headers came; no
 * redirect is followed; a 407 or any 3xx is 502; bodiless statuses and HEAD keep no body; a
 * compressed answer reaches the client decoded; bodies are capped; the query goes on; requests
 * share keep-alive connections; a client that goes away, waiting or mid-stream, ends the upstream
 * request.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http, { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it, mock } from 'node:test';
import { gzipSync } from 'node:zlib';
import { createListener, type Listener } from '../../src/authorization-server/node-server/listener.js';
import { MCP_HEADERS, gatewayHarness, type GatewayHarness } from '../helpers/gateway-harness.js';

const ANSWER = JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} });
const event = (n: number) =>
  `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: n } })}\n\n`;

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The client port of the connection it came on: the same for requests that shared one. */
  port: number;
}

/** Something a test waits for, fired by the upstream. */
function signal(): { promise: Promise<void>; fire(): void } {
  let fire!: () => void;
  const promise = new Promise<void>((resolve) => (fire = resolve));
  return { promise, fire };
}

describe('the gateway over node:http', { timeout: 60_000 }, () => {
  const received: Received[] = [];
  /** Per test: what the upstream does next at a path, and the events it signals. */
  let waiting = signal();
  let releaseEvent = signal();
  let upstreamClosed = signal();
  let upstream: http.Server;
  let listener: Listener;
  let h: GatewayHarness;
  let token: string;

  const routes: Record<string, (request: IncomingMessage, response: ServerResponse) => void> = {
    '/json': (_request, response) => response.writeHead(200, { 'content-type': 'application/json', 'content-length': ANSWER.length }).end(ANSWER),
    // 64 KiB, the most handed back whole, or one byte more.
    '/large': (request, response) => {
      const body = Buffer.alloc(64 * 1024 + (request.url!.endsWith('?over') ? 1 : 0), 0x20);
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length }).end(body);
    },
    // Dies after 10 of the 100 bytes it announced.
    '/cut': (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': 100 });
      response.write(' '.repeat(10), () => response.socket?.destroy());
    },
    '/chunked': (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write(ANSWER.slice(0, 10));
      response.end(ANSWER.slice(10));
    },
    '/events': (request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'mcp-session-id': 'session-1' });
      response.write(event(1));
      // This test's signals: a keep-alive connection outlives the request.
      const [closed, released] = [upstreamClosed, releaseEvent];
      request.socket.once('close', () => closed.fire());
      void released.promise.then(() => response.end(event(2)));
    },
    '/hang': (request) => {
      const closed = upstreamClosed;
      request.socket.once('close', () => closed.fire());
      waiting.fire();
    },
    '/redirect': (_request, response) => response.writeHead(307, { location: '/json' }).end(),
    '/proxy-auth': (_request, response) => response.writeHead(407, { 'proxy-authenticate': 'Basic' }).end(),
    '/no-content': (_request, response) => response.writeHead(204, { 'mcp-session-id': 'gone' }).end(),
    '/not-modified': (_request, response) => response.writeHead(304).end(),
    '/reset-content': (_request, response) => response.writeHead(205).end(),
    '/gzip': (_request, response) => {
      const body = gzipSync(ANSWER);
      response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': body.length }).end(body);
    },
  };

  before(async () => {
    upstream = createServer((request, response) => {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (chunk: string) => (body += chunk));
      request.on('end', () => {
        received.push({ method: request.method!, url: request.url!, headers: request.headers, body, port: request.socket.remotePort! });
        routes[new URL(request.url!, 'http://upstream').pathname]!(request, response);
      });
    });
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    // The longest timeout: a client's going away, not the timeout, must end a request the upstream holds.
    h = gatewayHarness({ gateway: Object.keys(routes).map((path) => `${path}=${base}${path}`), 'gateway-timeout': '600' });
    listener = createListener({ host: '127.0.0.1', port: 0 }, []);
    await listener.listen();
    listener.serve(h.app);
    token = await h.token(await h.client(), '/json');
  });
  after(async () => {
    await h.settings.close();
    await listener.drain();
    upstream.closeAllConnections();
    upstream.close();
  });

  /** A token for a path: each path is its own audience. */
  const tokenFor = async (path: string) => (path === '/json' ? token : h.token(await h.client(), path));

  /** A request through the listener, as a client over a socket of its own sends it. */
  async function send(path: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<Response> {
    return fetch(`${listener.url}${path}`, {
      method: init.method ?? 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${await tokenFor(path.split('?')[0]!)}`, ...init.headers },
      ...(init.method === 'GET' || init.method === 'HEAD' ? {} : { body: init.body ?? ANSWER }),
    });
  }

  it('an answer of known length up to 64 KiB comes whole with its length; a larger one, or one without a length, as it streams; the query goes on', async () => {
    const whole = await send('/json?cursor=abc');
    assert.equal(whole.status, 200);
    assert.equal(whole.headers.get('content-length'), String(ANSWER.length));
    assert.equal(whole.headers.get('access-control-allow-origin'), '*');
    assert.equal(await whole.text(), ANSWER);
    assert.equal(received.at(-1)!.url, '/json?cursor=abc');
    assert.equal(received.at(-1)!.body, ANSWER, 'the body went on as it came');
    const streamed = await send('/chunked');
    assert.equal(streamed.status, 200);
    assert.equal(streamed.headers.get('content-length'), null);
    assert.equal(await streamed.text(), ANSWER);
    const most = await send('/large');
    assert.equal(most.headers.get('content-length'), String(64 * 1024));
    assert.equal((await most.arrayBuffer()).byteLength, 64 * 1024);
    const over = await send('/large?over');
    assert.equal(over.headers.get('content-length'), null, 'past 64 KiB: streamed');
    assert.equal((await over.arrayBuffer()).byteLength, 64 * 1024 + 1);
  });

  it('CORS: the preflight names what a browser client may send; every other answer, a refusal too, what it may read', async () => {
    const preflight = await fetch(`${listener.url}/json`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), '*');
    assert.equal(preflight.headers.get('access-control-allow-methods'), 'GET,POST,DELETE,OPTIONS');
    assert.match(preflight.headers.get('access-control-allow-headers')!, /^Authorization,DPoP,Content-Type,.*Mcp-Session-Id,Last-Event-ID$/);
    const exposed = 'WWW-Authenticate,DPoP-Nonce,Mcp-Session-Id,Mcp-Protocol-Version';
    const refused = await fetch(`${listener.url}/json`, { method: 'POST', headers: { ...MCP_HEADERS, origin: 'https://app.example' }, body: ANSWER });
    const answered = await send('/json', { headers: { origin: 'https://app.example' } });
    for (const answer of [refused, answered]) {
      assert.equal(answer.headers.get('access-control-allow-origin'), '*', String(answer.status));
      assert.equal(answer.headers.get('access-control-expose-headers'), exposed, String(answer.status));
      await answer.body?.cancel();
    }
    assert.equal(refused.status, 401);
  });

  it('a chunked body within the cap goes on whole, with its length; one past the cap is 413 and never forwarded', async () => {
    const post = (bytes: number) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const client = http.request(
          `${listener.url}/json`,
          { method: 'POST', agent: false, headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` } },
          (answer) => {
            let text = '';
            answer.on('data', (chunk: Buffer) => (text += chunk.toString()));
            answer.on('end', () => resolve({ status: answer.statusCode!, text }));
          },
        );
        client.on('error', reject);
        // No Content-Length: chunked, in pieces, as a streaming client sends it.
        for (let sent = 0; sent < bytes; sent += 64 * 1024) client.write(' '.repeat(Math.min(64 * 1024, bytes - sent)));
        client.end();
      });
    const within = await post(200 * 1024);
    assert.equal(within.status, 200, within.text);
    assert.equal(received.at(-1)!.headers['content-length'], String(200 * 1024));
    assert.equal(received.at(-1)!.headers['transfer-encoding'], undefined);
    const before = received.length;
    const past = await post(1024 * 1024 + 1);
    assert.equal(past.status, 413, past.text);
    assert.equal(received.length, before, 'not forwarded');
  });

  it('the upstream gets the headers it reads, a plain answer asked for, and never the person’s token or cookies', async () => {
    await (await send('/json', { headers: { cookie: 'session=secret', 'mcp-protocol-version': '2025-06-18', dpop: 'a proof' } })).text();
    const headers = received.at(-1)!.headers;
    assert.equal(headers['mcp-protocol-version'], '2025-06-18');
    assert.equal(headers['accept-encoding'], 'identity');
    assert.equal(headers['content-length'], String(ANSWER.length));
    for (const name of ['authorization', 'cookie', 'dpop']) assert.equal(headers[name], undefined, name);
  });

  it('requests one after another share one keep-alive connection to the upstream', async () => {
    const before = received.length;
    for (let i = 0; i < 3; i++) await (await send('/json')).text();
    const ports = new Set(received.slice(before).map((request) => request.port));
    assert.equal(ports.size, 1, `connections used: ${[...ports].join(', ')}`);
  });

  it('an answer of known length cut off before its end is 502, not a short answer', async () => {
    const answer = await send('/cut');
    assert.equal(answer.status, 502);
    assert.deepEqual(await answer.json(), { error: 'bad_gateway', error_description: 'the upstream context server could not be reached' });
  });

  it('a redirect is not followed, and neither it, another 3xx nor a 407 is passed on: each is 502, refused', async () => {
    for (const path of ['/redirect', '/not-modified', '/proxy-auth']) {
      const before = received.length;
      const answer = await send(path);
      assert.equal(answer.status, 502, path);
      assert.equal(answer.headers.get('location'), null);
      assert.deepEqual(await answer.json(), { error: 'bad_gateway', error_description: 'the upstream context server refused the gateway' });
      assert.equal(received.length, before + 1, 'only the one request reached the upstream');
    }
  });

  it('204, 205 and an answer to HEAD pass on without a body', async () => {
    const noContent = await send('/no-content', { method: 'DELETE' });
    assert.equal(noContent.status, 204);
    assert.equal(noContent.headers.get('mcp-session-id'), 'gone');
    assert.equal(await noContent.text(), '');
    const reset = await send('/reset-content');
    assert.equal(reset.status, 205);
    assert.equal(await reset.text(), '');
    const head = await send('/json', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-type'), 'application/json');
    assert.equal(await head.text(), '');
    assert.equal(received.at(-1)!.method, 'HEAD');
  });

  it('an answer the upstream compressed anyway reaches the client decoded', async () => {
    const answer = await send('/gzip');
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('content-encoding'), null);
    assert.equal(await answer.text(), ANSWER);
  });

  it('an event stream comes event by event: the first before the upstream writes the second', async () => {
    releaseEvent = signal();
    const answer = await send('/events');
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('content-type'), 'text/event-stream');
    assert.equal(answer.headers.get('mcp-session-id'), 'session-1');
    const reader = answer.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!text.includes(event(1))) text += (await reader.read()).value;
    releaseEvent.fire();
    for (let read = await reader.read(); !read.done; read = await reader.read()) text += read.value;
    assert.equal(text, event(1) + event(2));
  });

  it('a client that goes away while the upstream has not answered ends the upstream request', async () => {
    waiting = signal();
    upstreamClosed = signal();
    const client = http.request(`${listener.url}/hang`, {
      method: 'POST',
      agent: false,
      headers: { ...MCP_HEADERS, authorization: `Bearer ${await tokenFor('/hang')}`, 'content-length': ANSWER.length },
    });
    client.on('error', () => {});
    client.end(ANSWER);
    await waiting.promise;
    client.destroy();
    await upstreamClosed.promise;
  });

  it('a client that goes away in the middle of an event stream ends the upstream request', async () => {
    releaseEvent = signal();
    upstreamClosed = signal();
    const answer = await send('/events');
    const reader = answer.body!.getReader();
    await reader.read();
    await reader.cancel();
    await upstreamClosed.promise;
    releaseEvent.fire();
  });

  it('the timeout covers the wait for the headers: an event stream stays open past it', async () => {
    releaseEvent = signal();
    // In-process, on a clock the test moves: the gateway's timer is the only one asked for.
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const answer = await h.request('/events', {
        method: 'POST',
        headers: { ...MCP_HEADERS, authorization: `Bearer ${await tokenFor('/events')}` },
        body: ANSWER,
      });
      const reader = answer.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      while (!text.includes(event(1))) text += (await reader.read()).value;
      mock.timers.tick(601_000);
      releaseEvent.fire();
      for (let read = await reader.read(); !read.done; read = await reader.read()) text += read.value;
      assert.equal(text, event(1) + event(2));
    } finally {
      mock.timers.reset();
    }
  });
});
