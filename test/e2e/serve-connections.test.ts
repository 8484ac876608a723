/**
 * `serve` does not let idle or slow sockets accumulate: a connection whose request head does not
 * arrive in time is cut off (--header-timeout, checked every second), a TLS handshake too; at
 * --max-connections a new connection takes the place of the oldest one without a request in
 * progress, and is refused only when every one is in a request; one client address cannot hold
 * more than --max-connections-per-address. Other clients are played by other loopback addresses.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { selfSignedCertificate } from '../helpers/self-signed.js';
import { answerTo, getFrom, hold, inRequest, keepAlive, REST_OF_BODY, REST_OF_HEADERS, SLOW_HEADERS, type Held } from '../helpers/sockets.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

/** Opens a socket and resolves when the server closes (or resets) it, with how long that took and what it answered. */
function openAndWait(port: number, send: string, localAddress = '127.0.0.1'): Promise<{ ms: number; answer: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let answer = '';
    const socket = net.connect({ port, host: '127.0.0.1', localAddress }, () => socket.write(send));
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('close', () => resolve({ ms: performance.now() - started, answer }));
    // A reset is the server dropping the connection: an answer of nothing.
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? undefined : reject(error)));
    socket.setTimeout(20_000, () => reject(new Error('the server never closed the socket')));
  });
}

/**
 * Node closes a connection whose head is late at its next check after --header-timeout; serve
 * checks every second (Node's default is every 30 s). The second of margin is for a busy machine.
 */
const HEADER_TIMEOUT_MS = 1_000;
const CLOSED_BY_MS = HEADER_TIMEOUT_MS + 1_000 + 1_000;

describe('serve: header timeouts', { timeout: 300_000 }, () => {
  let server: RunningServer;
  let port: number;

  before(async () => {
    port = await freePort();
    server = await startServe(['--port', String(port), '--data', tempDataFolder(), '--quiet', '--header-timeout', '1', '--max-connections', '3']);
  });
  after(() => server?.stop());

  it('a connection whose head never finishes, or never starts, is closed within a second of --header-timeout', async () => {
    const [partial, silent] = await Promise.all([openAndWait(port, SLOW_HEADERS, '127.0.0.2'), openAndWait(port, '', '127.0.0.3')]);
    for (const { ms, answer } of [partial, silent]) {
      assert.ok(ms >= HEADER_TIMEOUT_MS && ms < CLOSED_BY_MS, `closed after ${Math.round(ms)} ms`);
      assert.match(answer, /^HTTP\/1\.1 408 /, 'answered 408 Request Timeout');
    }
  });

  it('when every connection is in a request, a new one is refused; once one ends, a new client is served', async () => {
    // From three addresses, so that the cap reached is the global one, not one address's.
    const busy = await Promise.all(['127.0.0.2', '127.0.0.3', '127.0.0.4'].map((address) => inRequest(port, address)));
    try {
      assert.equal((await getFrom(port, '127.0.0.5')).status, 0, 'the fourth connection got no answer');
      assert.equal(await answerTo(busy[0]!, REST_OF_BODY), 401, 'the first request, finished, is answered');
      assert.equal((await getFrom(port, '127.0.0.5')).status, 200, 'its connection, now idle, makes room');
      for (const held of busy.slice(1)) assert.equal(await answerTo(held, REST_OF_BODY), 401, 'the others were left to finish');
    } finally {
      for (const { socket } of busy) socket.destroy();
    }
  });
});

describe('serve --tls-cert: a TLS handshake that never starts', { timeout: 300_000 }, () => {
  let server: RunningServer;
  let port: number;

  before(async () => {
    port = await freePort();
    const { certPath, keyPath } = selfSignedCertificate();
    server = await startServe([
      '--port',
      String(port),
      '--data',
      tempDataFolder(),
      '--quiet',
      '--header-timeout',
      '1',
      '--tls-cert',
      certPath,
      '--tls-key',
      keyPath,
    ]);
  });
  after(() => server?.stop());

  it('is closed after --header-timeout, as a late head is', async () => {
    const { ms } = await openAndWait(port, '');
    assert.ok(ms >= HEADER_TIMEOUT_MS && ms < CLOSED_BY_MS, `closed after ${Math.round(ms)} ms`);
  });

  it('while a handshake that finishes goes on to its request', async () => {
    const socket = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false });
    const answer = await new Promise<string>((resolve, reject) => {
      let text = '';
      socket.on('secureConnect', () => socket.write('GET /jwks HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'));
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    assert.match(answer, /^HTTP\/1\.1 200 /);
  });
});

describe('serve: one client address cannot hold every connection', { timeout: 300_000 }, () => {
  let server: RunningServer;
  let port: number;

  before(async () => {
    port = await freePort();
    // The default share: a tenth of --max-connections, 4 connections per address.
    server = await startServe(['--port', String(port), '--data', tempDataFolder(), '--quiet', '--max-connections', '40', '--trust-proxy', '127.0.0.9']);
  });
  after(() => server?.stop());

  it('an address holding idle and slow sockets gets a tenth of the slots, and other addresses are served at once', async () => {
    const attacker = await Promise.all([
      ...Array.from({ length: 30 }, () => hold(port, '127.0.0.2')),
      ...Array.from({ length: 30 }, () => hold(port, '127.0.0.2', SLOW_HEADERS)),
    ]);
    try {
      // Accepted after every one of the attacker's (the kernel hands them over in order), so its excess is refused by then.
      const others = Array.from({ length: 10 }, (_, i) => `127.0.0.${10 + i}`);
      const results = await Promise.all(others.flatMap((address) => [getFrom(port, address), getFrom(port, address), getFrom(port, address)]));
      assert.deepEqual(
        results.filter((r) => r.status !== 200),
        [],
        'every other client is served',
      );
      const slowest = Math.max(...results.map((r) => r.ms));
      assert.ok(slowest < 2_000, `the slowest took ${slowest} ms`);
      const stillOpen = attacker.filter((h) => !h.closed()).length;
      assert.ok(stillOpen <= 4, `the attacker still holds ${stillOpen} connections`);
    } finally {
      for (const { socket } of attacker) socket.destroy();
    }
  });

  it('a --trust-proxy peer, carrying many clients, is not limited per address', async () => {
    // Each one answered: none was refused (that closes a connection before it is read).
    const proxy = await Promise.all(Array.from({ length: 10 }, () => keepAlive(port, '127.0.0.9')));
    assert.equal(proxy.filter((h) => h.closed()).length, 0, "all ten of the proxy's connections stay open");
    for (const { socket } of proxy) socket.destroy();
  });

  it('--max-connections-per-address takes a whole number, 0 for no limit', async () => {
    const result = await cli(['serve', '--data', tempDataFolder(), '--max-connections-per-address', '1.5']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--max-connections-per-address must be a whole number from 0 to 100000/);
  });
});

describe('serve: at --max-connections, a new connection takes the place of the oldest one without a request', { timeout: 300_000 }, () => {
  let server: RunningServer;
  let port: number;

  before(async () => {
    port = await freePort();
    // Idle keep-alive connections last 5 s: long after this test has made its point.
    server = await startServe(['--port', String(port), '--data', tempDataFolder(), '--quiet', '--max-connections', '10', '--max-connections-per-address', '0']);
  });
  after(() => server?.stop());

  it('idle ones go first, then those still sending a head; one in a request is never closed', async () => {
    const busy = await Promise.all(Array.from({ length: 4 }, () => inRequest(port, '127.0.0.2')));
    const idle: Held[] = [];
    for (let i = 0; i < 3; i++) idle.push(await keepAlive(port, '127.0.0.3'));
    // Connected after the idle ones were answered: younger than them.
    const sendingHead = await Promise.all(Array.from({ length: 3 }, () => hold(port, '127.0.0.4', SLOW_HEADERS)));
    const newcomers: Held[] = [];
    try {
      // All ten slots are taken: each newcomer, served, took the place of one connection.
      for (let i = 0; i < 3; i++) newcomers.push(await keepAlive(port, '127.0.0.5'));
      for (const held of sendingHead) assert.equal(await answerTo(held, REST_OF_HEADERS), 200, 'younger than the idle ones, a head still coming was kept');
      for (const held of busy) assert.equal(await answerTo(held, REST_OF_BODY), 401, 'a request in progress was kept');
    } finally {
      for (const { socket } of [...busy, ...idle, ...sendingHead, ...newcomers]) socket.destroy();
    }
  });

  it('connections that have sent nothing, or part of a head, give way too: they hold nothing begun', async () => {
    const busy = await Promise.all(Array.from({ length: 4 }, () => inRequest(port, '127.0.0.6')));
    const silent = await Promise.all(Array.from({ length: 3 }, () => hold(port, '127.0.0.7')));
    const sendingHead = await Promise.all(Array.from({ length: 3 }, () => hold(port, '127.0.0.7', SLOW_HEADERS)));
    const newcomers: Held[] = [];
    try {
      for (let i = 0; i < 6; i++) newcomers.push(await keepAlive(port, '127.0.0.8'));
      for (const held of busy) assert.equal(await answerTo(held, REST_OF_BODY), 401, 'a request in progress was kept');
    } finally {
      for (const { socket } of [...busy, ...silent, ...sendingHead, ...newcomers]) socket.destroy();
    }
  });
});
