/**
 * `serve` does not let idle or slow sockets accumulate: a request whose headers do not arrive in
 * time is cut off (--header-timeout), and connections beyond --max-connections are refused.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

/** Opens a socket and resolves when the server closes (or resets) it, with how long that took and what it answered. */
function openAndWait(port: number, send: string): Promise<{ ms: number; answer: string }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let answer = '';
    const socket = net.connect(port, '127.0.0.1', () => socket.write(send));
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
    const held = await Promise.all(
      Array.from({ length: 3 }, () => new Promise<net.Socket>((resolve) => {
        const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
      })),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    const { answer } = await openAndWait(port, 'GET /jwks HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    assert.doesNotMatch(answer, /200 OK/, 'the fourth connection got no answer');
    for (const socket of held) socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const response = await fetch(`${server.issuer}/jwks`);
    assert.equal(response.status, 200, 'served again once they are gone');
  });
});
