/**
 * npm run bench:scaling: the refresh_token grant on our server on SQLite by store size, in one run
 * under the same load: an empty store, 100k and 1M stored grants, each its own process pinned to
 * core 0, the load generator on core 1, rounds interleaved and medians as in
 * bench/refresh-peers.ts. Loading and measuring the 1M-grant store takes minutes, so it is not a
 * part of `npm run bench`.
 *
 *   node --import tsx bench/refresh-scaling.ts [--quick]   (--quick: 3 rounds of 2 s; empty and 100k only)
 */
import { chains } from './peers/child.js';
import { closeConnections, refresh, startPeer, stopPeer, type Running } from './peers/process.js';
import { interleaved, mb, pinLoadGenerator, type Operation } from './peers/rounds.js';

const QUICK = process.argv.includes('--quick');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 3 : 5));
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 2 : 5));
const WARMUP_SECONDS = QUICK ? 1 : 2;
/** BENCH_SCALING (comma-separated grant counts) overrides; the full run goes to 1M stored grants. */
const SCALING = process.env.BENCH_SCALING ? process.env.BENCH_SCALING.split(',').map(Number) : QUICK ? [0, 100_000] : [0, 100_000, 1_000_000];
const PIN = pinLoadGenerator();

/** Each request presents its chain's current refresh token and keeps the one it gets back. */
const rotate: Operation = async (server, chain) => {
  server.refreshTokens[chain] = await refresh(server, server.refreshTokens[chain]!);
};

const begun = Date.now();
console.log(
  `\nRefresh grants by store size: ${ROUNDS} rounds × ${SECONDS}s, ${chains()} chains, medians; ${PIN ? 'servers on core 0, load on core 1' : 'not pinned (no taskset or one core)'}`,
);
const sized: Running[] = [];
try {
  for (const grants of SCALING) {
    const loadStarted = Date.now();
    sized.push(
      await startPeer(
        { name: `${grants.toLocaleString('en')} stored grants`, script: 'ours.ts', args: ['sqlite'], env: { BENCH_GRANTS: String(grants) } },
        PIN,
      ),
    );
    if (grants > 0) console.log(`(loaded ${grants.toLocaleString('en')} grants in ${((Date.now() - loadStarted) / 1000).toFixed(0)} s)`);
  }
  const results = await interleaved(sized, rotate, { rounds: ROUNDS, seconds: SECONDS, warmupSeconds: WARMUP_SECONDS });
  const rss = new Map(await Promise.all(sized.map(async (s) => [s.name, (await s.usage()).rss] as const)));
  const empty = results.get(sized[0]!.name)!;
  console.log(`\nOur server on SQLite by store size (each grant stored with a live refresh token and a live access-token expiry; same rounds)\n`);
  console.log('| store | grants/s | vs empty | server CPU/grant (ms) | RSS after (MB) |');
  console.log('|---|---:|---:|---:|---:|');
  for (const server of sized) {
    const r = results.get(server.name)!;
    console.log(
      `| ${server.name} | ${r.opsPerSecond.toFixed(0)} | ${(r.opsPerSecond / empty.opsPerSecond).toFixed(2)} | ${r.cpuMs.toFixed(3)} | ${mb(rss.get(server.name)!)} |`,
    );
  }
  console.log('\nTarget: 1M stored grants ≥ 0.90 × empty.');
} finally {
  await Promise.all(sized.splice(0).map(stopPeer));
}
closeConnections();
console.log(`\n(${((Date.now() - begun) / 1000).toFixed(0)} s)`);
