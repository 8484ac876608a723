/**
 * The peers benches' ratio of two servers' CPU: within each round, so a machine that slows from
 * round to round does not show as a difference between the servers.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cpuRatio, type Sample, type Summary } from '../../bench/peers/rounds.js';

const sample = (cpuMs: number): Sample => ({ opsPerSecond: 1 / cpuMs, cpuMs, loadBusy: 0.5 });
const summary = (cpus: number[]): Summary => ({ ...sample([...cpus].sort((a, b) => a - b)[Math.floor(cpus.length / 2)]!), rounds: cpus.map(sample) });

describe('cpuRatio', () => {
  it('is the median of the rounds’ ratios, with the lowest and highest', () => {
    // The machine doubles its speed over the run; in every round a costs 1.1 × b.
    const b = summary([0.4, 0.3, 0.2, 0.25, 0.35]);
    const a = summary(b.rounds.map((s, i) => s.cpuMs * [1.1, 1.1, 1.05, 1.1, 1.2][i]!));
    assert.deepEqual(Object.fromEntries(Object.entries(cpuRatio(a, b)).map(([k, v]) => [k, Number(v.toFixed(3))])), { median: 1.1, low: 1.05, high: 1.2 });
  });
});
