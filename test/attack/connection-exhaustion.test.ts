/**
 * Connection exhaustion against `serve` as users run it (the built CLI, default limits): sockets
 * that sit idle or send their headers slowly cost the attacker nothing, and a server that holds
 * them all has no slot left for anyone else. One address may hold a tenth of --max-connections;
 * when many addresses fill every slot, a new client takes the place of the oldest connection
 * without a request in progress. Other clients are played by other loopback addresses
 * (127.0.0.0/8), and make their requests while the attacker's sockets are held.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freePort, startServe, tempDataFolder, type RunningServer } from '../e2e/serve-process.js';
import { getFrom, hold, keepAlive, SLOW_HEADERS, type Held } from '../helpers/sockets.js';

interface OtherClients {
  failed: number;
  p50: number;
  p99: number;
}

/** 100 requests from 20 other addresses, 20 at a time: how many failed, and the 50th and 99th percentiles in ms. */
async function otherClients(port: number): Promise<OtherClients> {
  const results: Array<{ status: number; ms: number }> = [];
  for (let round = 0; round < 5; round++) {
    results.push(...(await Promise.all(Array.from({ length: 20 }, (_, i) => getFrom(port, `127.0.1.${i + 1}`)))));
  }
  const times = results.map((r) => r.ms).sort((a, b) => a - b);
  const percentile = (p: number) => times[Math.ceil(times.length * p) - 1]!;
  return { failed: results.filter((r) => r.status !== 200).length, p50: percentile(0.5), p99: percentile(0.99) };
}

async function release(sockets: Held[]): Promise<void> {
  await Promise.all(sockets.map(({ socket }) => new Promise((resolve) => (socket.closed ? resolve(undefined) : socket.once('close', resolve).destroy()))));
}

describe('connection exhaustion against serve at its default limits', { timeout: 300_000 }, () => {
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
      // Accepted after every one of the attacker's (the kernel hands them over in order), so its excess is refused by then.
      const { failed, p99 } = await otherClients(port);
      assert.equal(failed, 0, `${failed} of 100 requests from other addresses failed`);
      assert.ok(p99 < 2_000, `other clients' p99 was ${p99} ms`);
      const held = attacker.filter((h) => !h.closed()).length;
      assert.ok(held <= 100, `the attacker holds ${held} connections, more than a tenth of the cap`);
    } finally {
      await release(attacker);
    }
  });

  it('100 addresses with 20 silent and 4 slow-header sockets each, 2,400 in all and every address within its share, lock nobody out', async (t) => {
    const quiet = await otherClients(port);
    const attacker: Held[] = [];
    for (let address = 1; address <= 100; address++) {
      attacker.push(...(await Promise.all(Array.from({ length: 24 }, (_, i) => hold(port, `127.0.2.${address}`, i < 20 ? '' : SLOW_HEADERS)))));
    }
    try {
      const attacked = await otherClients(port);
      const held = attacker.filter((h) => !h.closed()).length;
      t.diagnostic(
        `other clients without the attack: p50 ${quiet.p50} ms, p99 ${quiet.p99} ms; during it (the attacker holding ${held}): p50 ${attacked.p50} ms, p99 ${attacked.p99} ms`,
      );
      assert.equal(attacked.failed, 0, `${attacked.failed} of 100 requests from other addresses failed`);
      assert.ok(attacked.p99 < 2_000, `other clients' p99 was ${attacked.p99} ms`);
      // The newest thousand of its sockets held the server at its cap, less one for each other client at most.
      assert.ok(held <= 1_000 && held >= 900, `the attacker holds ${held} connections; the cap is 1,000 and 100 requests came in`);
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
