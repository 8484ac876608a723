/**
 * `npm run bench`: every table, one script after another (each in its own process, so no part
 * inherits another's heap or JIT state), then how long each part took. A part that fails does not
 * stop the rest: the run ends with the first failing part's exit code, after all the tables.
 *
 *   node --import tsx bench/run.ts [--quick]   (--quick is handed to every part)
 *
 * The sweep bench runs one round per store here (BENCH_SWEEP_ROUNDS, unless set): a PostgreSQL
 * sweep of 1M rows takes minutes by design, and three of them would triple the whole run.
 * `npm run bench:sweep` runs its three rounds.
 */
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';

const quick = process.argv.includes('--quick') ? ['--quick'] : [];
const parts: { script: string; args: string[]; env?: Record<string, string> }[] = [
  { script: 'protected-route.ts', args: [] },
  { script: 'storage.ts', args: [] },
  { script: 'observability-cost.ts', args: quick },
  { script: 'refresh-peers.ts', args: quick },
  { script: 'flows-peers.ts', args: quick },
  { script: 'machine-grants.ts', args: quick },
  // The full 300,000 registrations take many minutes alone: `npm run bench:memory` runs them.
  { script: 'memory.ts', args: ['--quick'] },
  { script: 'sweep-latency.ts', args: quick, env: { BENCH_SWEEP_ROUNDS: process.env.BENCH_SWEEP_ROUNDS ?? '1' } },
];

const took: { script: string; minutes: number; code: number }[] = [];
for (const part of parts) {
  const started = performance.now();
  const run = spawnSync(process.execPath, ['--import', 'tsx', `bench/${part.script}`, ...part.args], {
    stdio: 'inherit',
    env: { ...process.env, ...part.env },
  });
  took.push({ script: part.script, minutes: (performance.now() - started) / 60_000, code: run.status ?? 1 });
}

console.log('\n| part | minutes | exit |\n|---|---:|---:|');
for (const { script, minutes, code } of took) console.log(`| bench/${script} | ${minutes.toFixed(1)} | ${code} |`);
console.log(`| all | ${took.reduce((sum, part) => sum + part.minutes, 0).toFixed(1)} | |`);
process.exit(took.find((part) => part.code !== 0)?.code ?? 0);
