/**
 * `npm run fuzz -- [--seed N] [--count N] [--store sqlite|postgres|both] [--concurrency N] [--max-failures N]`: the
 * long fuzz run (50,000 requests per store by default) on SQLite and, when
 * CONTEXT_AUTH_TEST_POSTGRES_URL is set, PostgreSQL. Without --seed a random one is chosen and
 * printed. Exits 1 on any failure, after printing each with the command that replays it.
 */
import { randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';
import { POSTGRES, SQLITE, type StoreKind } from '../helpers/stores.js';
import { formatFailure, runFuzz, type FuzzResult } from './run.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    count: { type: 'string' },
    store: { type: 'string' },
    concurrency: { type: 'string' },
    'max-failures': { type: 'string' },
  },
});

const whole = (name: string, value: string | undefined, fallback: number): number => {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed < 0) throw new Error(`--${name} must be a whole number`);
  return parsed;
};

const seed = whole('seed', values.seed, randomInt(2 ** 31));
const count = whole('count', values.count, 50_000);
const concurrency = whole('concurrency', values.concurrency, 6);
const maxFailures = whole('max-failures', values['max-failures'], 5);
const postgres = Boolean(process.env.CONTEXT_AUTH_TEST_POSTGRES_URL);
const wanted = values.store ?? 'both';
if (!['sqlite', 'postgres', 'both'].includes(wanted)) throw new Error('--store must be sqlite, postgres or both');
if (wanted === 'postgres' && !postgres) throw new Error('--store postgres needs CONTEXT_AUTH_TEST_POSTGRES_URL');
const stores: StoreKind[] = [...(wanted !== 'postgres' ? [SQLITE] : []), ...(wanted !== 'sqlite' && postgres ? [POSTGRES] : [])];

const summary = (result: FuzzResult) => {
  const statuses = Object.entries(result.statuses)
    .map(([status, n]) => `${status === '0' ? 'none' : status}×${n}`)
    .join(' ');
  return `${result.store}: ${result.requests} requests in ${result.seconds.toFixed(1)} s (${Math.round(result.requests / result.seconds)}/s); ${statuses}${result.corpusRefreshFailures ? `; corpus refresh failed ${result.corpusRefreshFailures}× (${result.corpusRefreshError})` : ''}`;
};

console.log(
  `fuzz: seed ${seed}, ${count} requests per store on ${stores.map((s) => s.name).join(' and ')}${postgres ? '' : ' (set CONTEXT_AUTH_TEST_POSTGRES_URL for PostgreSQL too)'}`,
);
let failed = false;
for (const store of stores) {
  const result = await runFuzz({
    store,
    seed,
    count,
    concurrency,
    maxFailures,
    progress: (done, r) => process.stderr.isTTY && process.stderr.write(`\r${store.name}: ${done}/${count}, ${r.failures.length} failures`),
  });
  process.stderr.write('\n');
  console.log(summary(result));
  const costly = Object.entries(result.labelMs)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8);
  console.log(`  time by kind: ${costly.map(([label, ms]) => `${label} ${(ms / 1000).toFixed(1)} s/${result.labels[label]}`).join('; ')}`);
  for (const failure of result.failures) console.log(`\n${formatFailure(failure)}`);
  if (result.failures.length > 0) failed = true;
}
process.exitCode = failed ? 1 : 0;
