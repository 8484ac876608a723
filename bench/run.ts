/**
 * `npm run bench`: every table of bench/parts.ts, one script after another (each in its own
 * process, so no part inherits another's heap or JIT state), then how long each part took. A part
 * that fails does not stop the rest: the run ends with the first failing part's exit code, after
 * all the tables.
 *
 *   node --import tsx bench/run.ts [--smoke]   (--smoke: one round of each table, to see that all run)
 */
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { benchParts } from './parts.js';

const parts = benchParts({ smoke: process.argv.includes('--smoke'), env: process.env });

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
