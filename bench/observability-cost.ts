/**
 * npm run bench (observability cost): what metrics and the audit store cost a busy server. Two
 * real `context-auth serve` processes on SQLite, one with `--metrics` and the audit events kept in
 * the store (the default), one with neither (`--audit-retention 0`), both pinned to core 0 (the
 * load generator to core 1), refresh grants in closed loops, rounds interleaved with the order
 * rotated each round. Server CPU per grant is the serve process's own CPU time (all its threads,
 * from /proc) over the grants it answered; the table reports medians and the ratio on / off.
 *
 *   node --import tsx bench/observability-cost.ts [--quick]   (--quick: 3 rounds of 3 s)
 */
import { chains } from './peers/child.js';
import { closeConnections, refresh } from './peers/process.js';
import { interleaved, pinLoadGenerator, type Sample } from './peers/rounds.js';
import { startServePeer } from './peers/serve.js';

const QUICK = process.argv.includes('--quick');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 3 : 7));
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 3 : 8));
const WARMUP_SECONDS = QUICK ? 2 : 3;

const PIN = pinLoadGenerator();

/** `serve` on a new SQLite data folder with `flags` (and --quiet, so only what is measured differs), pinned to core 0. */
const startServer = (name: string, flags: string[]) => startServePeer(name, ['--quiet', ...flags], chains(), PIN);

const on = await startServer('metrics + audit store', ['--metrics']);
const off = await startServer('neither', ['--audit-retention', '0']);
let results: Map<string, Sample>;
try {
  results = await interleaved([on, off], async (server, chain) => void (server.refreshTokens[chain] = await refresh(server, server.refreshTokens[chain]!)), {
    rounds: ROUNDS,
    seconds: SECONDS,
    warmupSeconds: WARMUP_SECONDS,
  });
} finally {
  closeConnections();
  await Promise.all([on.stop(), off.stop()]);
}

const withBoth = results.get(on.name)!;
const without = results.get(off.name)!;
const ratio = withBoth.cpuMs / without.cpuMs;
console.log(
  `\nObservability cost: refresh grants through \`context-auth serve\` on SQLite (${ROUNDS} rounds of ${SECONDS} s, ${chains()} chains, medians${PIN ? '; server on core 0, load on core 1' : ''})\n`,
);
console.log('| serve | grants/s | server CPU per grant (µs) |');
console.log('|---|---:|---:|');
for (const [name, sample] of [
  [on.name, withBoth],
  [off.name, without],
] as const) {
  console.log(`| ${name} | ${sample.opsPerSecond.toFixed(0)} | ${(sample.cpuMs * 1000).toFixed(0)} |`);
}
console.log(`\nCPU per grant, on / off: ${ratio.toFixed(3)} (${((ratio - 1) * 100).toFixed(1)}%)`);
process.exit(0);
