/**
 * `serve` does not let idle or slow sockets accumulate: a request whose headers do not arrive in
 * time is cut off (--header-timeout), connections beyond --max-connections are refused, one client
 * address cannot hold more than --max-connections-per-address, and near the cap idle keep-alive
 * connections make room for new ones. Other clients are played by other loopback addresses.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { getFrom, hold, keepAlive, pause, SLOW_HEADERS, type Held } from '../helpers/sockets.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

/** Opens a socket and resolves when the server closes (or resets) it, with how long that took and what it answered. */
function openAndWait(port: number, send: string, localAddress = '127.0.0.1'): Promise<{ ms: number; answer: string }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let answer = '';
    const socket = net.connect({ port, host: '127.0.0.1', localAddress }, () => socket.write(send));
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('close', () => resolve({ ms: Date.now() - started, answer }));
    // A reset is the server dropping the connection: an answer of nothing.
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? undefined : reject(error)));
    socket.setTimeout(20_000, () => reject(new Error('the server never closed the socket')));
  });
}

describe('serve: connection limits', { timeout: 60_000 }, () => {
  let server: RunningServer;
  let port: number;

  before(async () => {
    port = await freePort();
    server = await startServe(['--port', String(port), '--data', tempDataFolder(), '--quiet', '--header-timeout', '1', '--max-connections', '3']);
  });
  after(() => server?.stop());

  it('a request whose headers never finish is cut off after --header-timeout', async () => {
    const { ms, answer } = await openAndWait(port, 'GET /jwks HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    assert.ok(ms < 10_000, `closed after ${ms} ms`);
    assert.match(answer, /^$|408/, 'closed, or answered 408 Request Timeout');
  });

  it('connections beyond --max-connections are refused while the first ones are held', async () => {
    // From three addresses, so that the cap reached is the global one, not one address's.
    const held = await Promise.all(['127.0.0.2', '127.0.0.3', '127.0.0.4'].map((address) => hold(port, address)));
    await pause(200);
    assert.ok(held.every((h) => !h.closed()), 'all three are held');
    const { answer } = await openAndWait(port, 'GET /jwks HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n', '127.0.0.5');
    assert.doesNotMatch(answer, /200 OK/, 'the fourth connection got no answer');
    for (const { socket } of held) socket.destroy();
    await pause(200);
    const response = await fetch(`${server.issuer}/jwks`);
    assert.equal(response.status, 200, 'served again once they are gone');
  });
});

describe('serve: one client address cannot hold every connection', { timeout: 60_000 }, () => {
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
    await pause(300);
    try {
      const others = Array.from({ length: 10 }, (_, i) => `127.0.0.${10 + i}`);
      const results = await Promise.all(others.flatMap((address) => [getFrom(port, address), getFrom(port, address), getFrom(port, address)]));
      assert.deepEqual(results.filter((r) => r.status !== 200), [], 'every other client is served');
      const slowest = Math.max(...results.map((r) => r.ms));
      assert.ok(slowest < 2_000, `the slowest took ${slowest} ms`);
      const stillOpen = attacker.filter((h) => !h.closed()).length;
      assert.ok(stillOpen <= 4, `the attacker still holds ${stillOpen} connections`);
    } finally {
      for (const { socket } of attacker) socket.destroy();
    }
  });

  it('a --trust-proxy peer, carrying many clients, is not limited per address', async () => {
    const proxy = await Promise.all(Array.from({ length: 10 }, () => keepAlive(port, '127.0.0.9')));
    await pause(100);
    assert.equal(proxy.filter((h) => h.closed()).length, 0, 'all ten of the proxy\'s connections stay open');
    for (const { socket } of proxy) socket.destroy();
  });

  it('--max-connections-per-address takes a whole number, 0 for no limit', async () => {
    const result = await cli(['serve', '--data', tempDataFolder(), '--max-connections-per-address', '1.5']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--max-connections-per-address must be a whole number from 0 to 100000/);
  });
});

describe('serve: near --max-connections, idle keep-alive connections make room', { timeout: 60_000 }, () => {
  let server: RunningServer;
  let port: number;

  before(async () => {
    port = await freePort();
    // Keep-alive lasts 5 s (--header-timeout 10): long after this test has made its point.
    server = await startServe(['--port', String(port), '--data', tempDataFolder(), '--quiet', '--max-connections', '10', '--max-connections-per-address', '0']);
  });
  after(() => server?.stop());

  it('a new client is served by closing idle connections, never one whose request is in progress', async () => {
    const slow = await Promise.all(Array.from({ length: 4 }, () => hold(port, '127.0.0.2', SLOW_HEADERS)));
    const idle: Held[] = [];
    for (let i = 0; i < 4; i++) idle.push(await keepAlive(port, '127.0.0.3'));
    await pause(100);
    assert.equal([...slow, ...idle].filter((h) => h.closed()).length, 0, 'below nine tenths of the cap, nothing is closed');
    // Two more idle ones fill all ten slots; the third connection beyond would be dropped.
    for (let i = 0; i < 2; i++) idle.push(await keepAlive(port, '127.0.0.3'));
    await pause(100);
    try {
      const { status, ms } = await getFrom(port, '127.0.0.4');
      assert.equal(status, 200, 'the new client is served');
      assert.ok(ms < 2_000, `in ${ms} ms`);
      assert.ok(idle.some((h) => h.closed()), 'idle keep-alive connections were closed');
      assert.equal(slow.filter((h) => h.closed()).length, 0, 'requests in progress were left alone');
    } finally {
      for (const { socket } of [...slow, ...idle]) socket.destroy();
    }
  });
});
