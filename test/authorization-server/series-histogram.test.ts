/**
 * The histogram the hot paths observe into reads, in the Prometheus text format, exactly as
 * prom-client's own Histogram given the same observations; a reset zeroes it and the series a
 * caller kept still count.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Histogram, Registry } from 'prom-client';
import { SeriesHistogram } from '../../src/authorization-server/metrics/series-histogram.js';

const BOUNDS = [0.001, 0.01, 0.1, 1];
const OBSERVED: [string, string, number][] = [
  ['getClient', 'ok', 0.0004],
  ['getClient', 'ok', 0.001],
  ['getClient', 'ok', 0.05],
  ['getClient', 'error', 3],
  ['refreshGrant', 'ok', 0.2],
  ['refreshGrant', 'ok', 0.0099],
  ['say "hi"\\', 'ok', 1],
];

describe('SeriesHistogram', () => {
  it("reads as prom-client's Histogram does", async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const histogram = new SeriesHistogram('calls_seconds', 'Time of calls', ['method', 'outcome'], BOUNDS, ours);
    const reference = new Histogram({ name: 'calls_seconds', help: 'Time of calls', labelNames: ['method', 'outcome'], buckets: BOUNDS, registers: [theirs] });
    histogram.series({ method: 'never', outcome: 'ok' }); // made, never observed: not shown
    for (const [method, outcome, value] of OBSERVED) {
      histogram.series({ method, outcome }).observe(value);
      reference.observe({ method, outcome }, value);
    }
    assert.equal(await ours.metrics(), await theirs.metrics());
    const json = async (registry: Registry) => JSON.parse(JSON.stringify(await registry.getMetricsAsJSON())) as unknown;
    assert.deepEqual(await json(ours), await json(theirs));
  });

  it('resets to nothing, and a kept series counts again', async () => {
    const registry = new Registry();
    const histogram = new SeriesHistogram('calls_seconds', 'Time of calls', ['method'], BOUNDS, registry);
    const kept = histogram.series({ method: 'getClient' });
    kept.observe(0.5);
    registry.resetMetrics();
    assert.doesNotMatch(await registry.metrics(), /calls_seconds_count/);
    kept.observe(0.5);
    assert.match(await registry.metrics(), /calls_seconds_count\{method="getClient"\} 1\n/);
  });
});
