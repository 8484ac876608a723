/**
 * `npm run bench` runs the parts of bench/parts.ts; the long ones have scripts of their own. A part
 * list that quietly dropped a peers table, or let a 1M-row sweep back in, would make the run
 * either incomplete or far longer than its ten minutes. Nothing here runs a bench.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { benchParts } from '../../bench/parts.js';

const root = join(import.meta.dirname, '..', '..');
const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

describe('bench parts', () => {
  it('runs every side-by-side table, each part a script that exists', () => {
    const parts = benchParts();
    assert.deepEqual(
      parts.map((p) => p.script),
      [
        'protected-route.ts',
        'dpop-check.ts',
        'gateway.ts',
        'storage.ts',
        'observability-cost.ts',
        'refresh-peers.ts',
        'flows-peers.ts',
        'machine-grants.ts',
        'memory.ts',
      ],
    );
    for (const part of parts) assert.ok(existsSync(join(root, 'bench', part.script)), part.script);
  });

  it('keeps the long parts out: short rounds for the tables, no sweep, no scaling, the quick memory run', () => {
    const parts = benchParts();
    assert.ok(!parts.some((p) => p.script === 'sweep-latency.ts' || p.script === 'refresh-scaling.ts'));
    for (const script of ['observability-cost.ts', 'refresh-peers.ts', 'flows-peers.ts', 'machine-grants.ts', 'memory.ts']) {
      assert.deepEqual(parts.find((p) => p.script === script)!.args, ['--quick'], script);
    }
    assert.deepEqual(parts[0]!.env, { BENCH_ROUNDS: '3', BENCH_SECONDS: '2' });
    assert.deepEqual(parts.find((p) => p.script === 'storage.ts')!.env, { BENCH_SECONDS: '3' });
  });

  it('leaves a knob the caller set alone, and --smoke runs one round of each table', () => {
    assert.deepEqual(benchParts({ env: { BENCH_ROUNDS: '5' } })[0]!.env, { BENCH_SECONDS: '2' });
    const smoke = benchParts({ smoke: true });
    for (const script of [
      'protected-route.ts',
      'dpop-check.ts',
      'gateway.ts',
      'observability-cost.ts',
      'refresh-peers.ts',
      'flows-peers.ts',
      'machine-grants.ts',
    ]) {
      assert.equal(smoke.find((p) => p.script === script)!.env.BENCH_ROUNDS, '1', script);
    }
  });

  it('has an npm script for each long part and for the whole run', () => {
    assert.match(scripts.bench!, /bench\/run\.ts/);
    assert.match(scripts['bench:sweep']!, /bench\/sweep-latency\.ts/);
    assert.match(scripts['bench:scaling']!, /bench\/refresh-scaling\.ts/);
    assert.match(scripts['bench:memory']!, /bench\/memory\.ts/);
    assert.match(scripts['bench:peers']!, /bench\/refresh-peers\.ts/);
  });
});
