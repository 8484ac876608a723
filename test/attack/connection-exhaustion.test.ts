/**
 * Connection exhaustion against `serve` as users run it (the built CLI, default limits): sockets
 * that sit idle or send their headers slowly cost the attacker nothing, and a server that holds
 * them all has no slot left for anyone else. One address may hold a tenth of --max-connections;
 * when many addresses fill the server with idle keep-alive connections, those give way to new
 * clients. Other clients are played by other loopback addresses (127.0.0.0/8).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freePort, startServe, tempDataFolder, type RunningServer } from '../e2e/serve-process.js';
import { getFrom, hold, keepAlive, pause, SLOW_HEADERS, type Held } from '../helpers/sockets.js';

/** 100 requests from 20 other addresses, 20 at a time: each status, and the 99th percentile in ms. */
async function otherClients(port: number): Promise<{ failed: number; p99: number }> {
  const results: Array<{ status: number; ms: number }> = [];
  for (let round = 0; round < 5; round++) {
    results.push(...(await Promise.all(Array.from({ length: 20 }, (_, i) => getFrom(port, `127.0.1.${i + 1}`)))));
  }
  const times = results.map((r) => r.ms).sort((a, b) => a - b);
  return { failed: results.filter((r) => r.status !== 200).length, p99: times[Math.ceil(times.length * 0.99) - 1]! };
}

async function release(sockets: Held[]): Promise<void> {
  for (const { socket } of sockets) socket.destroy();
  await pause(200);
}

describe('connection exhaustion against serve at its default limits', { timeout: 60_000 }, () => {
  let server: RunningServer;
  let port: number;

  before(async () => {
    port = await freePort();
    server = await startServe(['--port', String(port), '--data', tempDataFolder(), '--quiet']);
  });
  after(() => server?.stop());

  it('one address with 1,000 idle and 200 slow-header sockets, more than --max-connections, locks nobody out', async () => {
    const attacker: Held[] = [];
    for (let batch = 0; batch < 12; batch++) {
      attacker.push(...(await Promise.all(Array.from({ length: 100 }, () => hold(port, '127.0.0.2', batch >= 10 ? SLOW_HEADERS : '')))));
    }
    try {
      await pause(200);
      const { failed, p99 } = await otherClients(port);
      assert.equal(failed, 0, `${failed} of 100 requests from other addresses failed`);
      assert.ok(p99 < 2_000, `other clients' p99 was ${p99} ms`);
      const held = attacker.filter((h) => !h.closed()).length;
      assert.ok(held <= 100, `the attacker holds ${held} connections, more than a tenth of the cap`);
    } finally {
      await release(attacker);
    }
  });

  it('ten addresses filling every slot with idle keep-alive connections lock nobody out', async () => {
    const idle: Held[] = [];
    for (let address = 0; address < 10; address++) {
      idle.push(...(await Promise.all(Array.from({ length: 100 }, () => keepAlive(port, `127.0.0.${10 + address}`)))));
    }
    try {
      const { failed, p99 } = await otherClients(port);
      assert.equal(failed, 0, `${failed} of 100 requests from other addresses failed`);
      assert.ok(p99 < 2_000, `other clients' p99 was ${p99} ms`);
    } finally {
      await release(idle);
    }
  });
});
