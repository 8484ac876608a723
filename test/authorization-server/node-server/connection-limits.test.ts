/**
 * The listener's connection limits on a real Node HTTP(S) server: at maxConnections a new connection
 * takes the place of the one longest without a request in progress (idle between requests,
 * silent, still sending its head, in its TLS handshake); a connection in a request is never
 * closed, and when every one is in a request the new one is refused; one address holds at most
 * its share. Each step waits for the server's own event (the connection accepted, the request
 * begun), and a connection the limits close is destroyed within that event, so what was closed is
 * read at once.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { afterEach, describe, it } from 'node:test';
import { limitConnections, type ConnectionLimits } from '../../../src/authorization-server/node-server/connection-limits.js';
import { selfSignedCertificate } from '../../helpers/self-signed.js';
import { SLOW_HEADERS } from '../../helpers/sockets.js';

interface Client {
  name: string;
  socket: net.Socket;
  /** The server's side of the connection (the TCP socket, under TLS too). */
  server: net.Socket;
  /** All the client has read, and when its socket has closed. */
  received(): string;
  closed: Promise<unknown>;
}

/** Resolves with the status line of the next complete answer on `socket` (head and Content-Length body), or '' if it closes first. */
function answer(socket: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      const head = text.indexOf('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? 0);
      if (head < 0 || text.length < head + 4 + length) return;
      socket.off('data', onData);
      socket.off('close', onClose);
      resolve(text.slice(0, text.indexOf('\r\n')));
    };
    const onClose = () => resolve('');
    socket.on('data', onData);
    socket.once('close', onClose);
  });
}

const BODY_TO_COME = 'POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n';
const GET = 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';

/** A server with the limits, each answer after the whole request body, and the test's view of its connections. */
async function limitedServer(limits: Partial<ConnectionLimits>, secure = false) {
  const handler = (request: http.IncomingMessage, response: http.ServerResponse) => {
    request.resume();
    request.on('end', () => response.end('ok'));
  };
  const credentials = secure ? selfSignedCertificate() : null;
  const server = credentials
    ? https.createServer({ cert: readFileSync(credentials.certPath), key: readFileSync(credentials.keyPath) }, handler)
    : http.createServer(handler);
  limitConnections(server, { maxConnections: 4, perAddress: 0, trustProxy: [], ...limits });

  // The server's events, by the client's port: the connection accepted, a request begun.
  const accepted = new Map<number, net.Socket>();
  const acceptWaiters = new Map<number, (socket: net.Socket) => void>();
  server.on('connection', (socket: net.Socket) => {
    accepted.set(socket.remotePort!, socket);
    acceptWaiters.get(socket.remotePort!)?.(socket);
  });
  const requestWaiters = new Map<number, () => void>();
  server.on('request', (request: http.IncomingMessage) => requestWaiters.get(request.socket.remotePort!)?.());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  const clients: Client[] = [];

  const serverSide = (port: number) =>
    new Promise<net.Socket>((resolve) => {
      const known = accepted.get(port);
      if (known) resolve(known);
      else acceptWaiters.set(port, resolve);
    });

  /** A connection from `from`, once the server has accepted it (the limits have run), TLS handshaken when `handshake`. */
  async function connect(name: string, from: string, handshake = secure): Promise<Client> {
    const tcp = net.connect({ port, host: '127.0.0.1', localAddress: from });
    const socket = handshake ? tls.connect({ socket: tcp, rejectUnauthorized: false }) : tcp;
    socket.on('error', () => {});
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    const connected = once(socket, handshake ? 'secureConnect' : 'connect').then(() => serverSide(socket.localPort!));
    const server = await Promise.race([connected, once(socket, 'close').then(() => assert.fail(`${name} was closed before it was set up`))]);
    const client = { name, socket, server, received: () => received, closed };
    clients.push(client);
    return client;
  }

  return {
    /** Connected, nothing sent. */
    silent: (name: string, from = '127.0.0.2') => connect(name, from),
    /** Connected over TCP to the TLS server, no handshake begun. */
    handshaking: (name: string, from = '127.0.0.2') => connect(name, from, false),
    /** Part of a request head sent. */
    async sendingHead(name: string, from = '127.0.0.2') {
      const client = await connect(name, from);
      client.socket.write(SLOW_HEADERS);
      return client;
    },
    /** Answered one request, and kept open. */
    async idle(name: string, from = '127.0.0.2') {
      const client = await connect(name, from);
      assert.equal(await this.ask(client), 'HTTP/1.1 200 OK');
      return client;
    },
    /** A request begun (its head read by the server), its body still to come. */
    async inRequest(name: string, from = '127.0.0.2') {
      const client = await connect(name, from);
      const begun = new Promise<void>((resolve) => requestWaiters.set(client.socket.localPort!, resolve));
      client.socket.write(BODY_TO_COME);
      await begun;
      return client;
    },
    /** A whole GET on an open connection: its status line. */
    ask(client: Client) {
      const answered = answer(client.socket);
      client.socket.write(GET);
      return answered;
    },
    /** Sends the body of the request in progress on `client`: its status line. */
    finish(client: Client) {
      const answered = answer(client.socket);
      client.socket.write('ok');
      return answered;
    },
    /** Runs `action` when the next connection from `from` is accepted, before the limits see it. */
    beforeLimits(from: string, action: () => void) {
      const listener = (socket: net.Socket) => {
        if (socket.remoteAddress !== from) return;
        server.off('connection', listener);
        action();
      };
      server.prependListener('connection', listener);
    },
    /** The clients whose connections the server has closed, oldest first. */
    closedByServer: () => clients.filter((c) => c.server.destroyed).map((c) => c.name),
    async close() {
      for (const { socket } of clients) socket.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

describe('connection limits', () => {
  let server: Awaited<ReturnType<typeof limitedServer>> | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('at the cap, a new connection takes the place of the one longest without a request, never one in a request', async () => {
    server = await limitedServer({ maxConnections: 6 });
    const busy = [await server.inRequest('busy 1'), await server.inRequest('busy 2')];
    const idleFirst = await server.idle('idle first');
    const silent = await server.silent('silent');
    await server.idle('idle second');
    const sendingHead = await server.sendingHead('sending its head');
    assert.deepEqual(server.closedByServer(), [], 'six connections, none closed below the cap');

    // A new request puts the first idle connection at the back of the line.
    assert.equal(await server.ask(idleFirst), 'HTTP/1.1 200 OK');
    const gaveWay: string[] = [];
    for (const [newcomer, oldest] of [
      ['new 1', 'silent'],
      ['new 2', 'idle second'],
      ['new 3', 'sending its head'],
      ['new 4', 'idle first'],
      ['new 5', 'new 1'],
    ]) {
      const before = new Set(server.closedByServer());
      await server.silent(newcomer!, '127.0.0.3');
      gaveWay.push(...server.closedByServer().filter((name) => !before.has(name)));
      assert.deepEqual(gaveWay.at(-1), oldest, `${newcomer} took the place of ${oldest}`);
    }
    assert.deepEqual(gaveWay, ['silent', 'idle second', 'sending its head', 'idle first', 'new 1'], 'one place for each newcomer');
    for (const client of [silent, sendingHead]) {
      await client.closed;
      assert.equal(client.received(), '', `${client.name} was closed without an answer`);
    }

    for (const client of busy) assert.equal(await server.finish(client), 'HTTP/1.1 200 OK', `${client.name} finished its request`);
  });

  it('when every connection is in a request, a new one is refused; when one ends, the next new one takes its place', async () => {
    server = await limitedServer({ maxConnections: 3 });
    const busy = [await server.inRequest('busy 1'), await server.inRequest('busy 2'), await server.inRequest('busy 3')];
    await server.silent('refused', '127.0.0.3');
    assert.deepEqual(server.closedByServer(), ['refused']);

    assert.equal(await server.finish(busy[1]!), 'HTTP/1.1 200 OK');
    await server.silent('new', '127.0.0.3');
    assert.deepEqual(server.closedByServer(), ['busy 2', 'refused'], 'busy 2, idle since its answer, gave its place');
    for (const client of [busy[0]!, busy[2]!]) assert.equal(await server.finish(client), 'HTTP/1.1 200 OK');
  });

  it('one address holds at most its share, refused without closing anyone else; a trusted proxy is not limited', async () => {
    server = await limitedServer({ maxConnections: 6, perAddress: 2, trustProxy: ['127.0.0.9'] });
    await server.silent('first', '127.0.0.2');
    await server.silent('second', '127.0.0.2');
    await server.silent('third', '127.0.0.2');
    assert.deepEqual(server.closedByServer(), ['third']);
    await server.silent('other address', '127.0.0.3');
    for (let i = 1; i <= 3; i++) await server.silent(`proxy ${i}`, '127.0.0.9');
    assert.deepEqual(server.closedByServer(), ['third'], 'the proxy holds three, the cap of six is reached');
    await server.silent('fourth', '127.0.0.2');
    assert.deepEqual(server.closedByServer(), ['third', 'fourth'], "at its share, refused before it could take anyone's place");
  });

  it("a connection the server has just closed no longer counts toward its address's share, though its close event is still to come", async () => {
    server = await limitedServer({ maxConnections: 6, perAddress: 1 });
    const first = await server.silent('first', '127.0.0.2');
    // Closed (as a timeout closes it) in the same turn of the event loop as the next one from its address is accepted.
    server.beforeLimits('127.0.0.2', () => first.server.destroy());
    await server.silent('second', '127.0.0.2');
    assert.deepEqual(server.closedByServer(), ['first']);
  });

  it('over TLS: a request in progress keeps its connection, an idle one and a handshake not begun give way', async () => {
    server = await limitedServer({ maxConnections: 3 }, true);
    const busy = await server.inRequest('busy');
    await server.idle('idle');
    await server.handshaking('handshaking');
    await server.silent('new 1', '127.0.0.3');
    assert.deepEqual(server.closedByServer(), ['idle']);
    await server.silent('new 2', '127.0.0.3');
    await server.silent('new 3', '127.0.0.3');
    assert.deepEqual(server.closedByServer(), ['idle', 'handshaking', 'new 1']);
    assert.equal(await server.finish(busy), 'HTTP/1.1 200 OK');
  });
});
