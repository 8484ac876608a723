/**
 * The short fuzz run of `npm test`: the app `serve` runs, over real HTTP on loopback, on SQLite
 * and PostgreSQL, sent mutated valid requests and garbage from fixed seeds and one random seed
 * (printed, so whatever it finds can be replayed). Every answer must be below 500 and well formed,
 * and the process must not see an unhandled rejection (run.ts, check.ts). `npm run fuzz` is the
 * long run.
 */
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { describe, it } from 'node:test';
import { STORE_KINDS } from '../helpers/stores.js';
import { formatFailure, runFuzz } from './run.js';

/** Seeds that found bugs once (a 5xx each, fixed since), kept as regression runs, and one new seed per run. */
const SEEDS = [1, 2, randomInt(2 ** 31)];
const REQUESTS_PER_SEED = 700;

describe('fuzz: no 5xx, no crash, every error well formed', () => {
  for (const store of STORE_KINDS) {
    for (const seed of SEEDS) {
      it(`${store.name}, seed ${seed}: ${REQUESTS_PER_SEED} requests`, async (t) => {
        const result = await runFuzz({ store, seed, count: REQUESTS_PER_SEED });
        t.diagnostic(`${result.requests} requests in ${result.seconds.toFixed(1)} s; statuses ${JSON.stringify(result.statuses)}`);
        assert.equal(result.failures.length, 0, `\n${result.failures.map(formatFailure).join('\n\n')}`);
        assert.equal(result.requests, REQUESTS_PER_SEED);
        // A fuzz run that never gets past the parsers proves little: real flows must reach the checks behind them.
        assert.ok((result.statuses[200] ?? 0) > 0 && (result.statuses[303] ?? 0) > 0 && (result.statuses[401] ?? 0) > 0, JSON.stringify(result.statuses));
        assert.equal(result.corpusRefreshFailures, 0, result.corpusRefreshError);
      });
    }
  }
});
