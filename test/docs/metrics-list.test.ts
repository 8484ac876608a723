/**
 * docs/metrics.md lists every metric the server keeps: an operator reads there what each one
 * means, so a metric added in code without its row there fails here.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ServerMetrics } from '../../src/authorization-server/metrics/metrics.js';
import { GatewayMetrics } from '../../src/gateway/index.js';

const DOC = readFileSync(join(import.meta.dirname, '../../docs/metrics.md'), 'utf8');

describe('docs/metrics.md', () => {
  it("has a row for each of the server's own metrics and the gateway's", async () => {
    const metrics = new ServerMetrics({ revocationSetSize: () => 0, auditEventsPending: () => 0 });
    // The gateway's join the server's registry, as serve --gateway puts them there.
    new GatewayMetrics(metrics.registry);
    const names = (await metrics.registry.getMetricsAsJSON())
      .map((metric) => metric.name)
      // prom-client's process and Node.js defaults, documented as one row.
      .filter((name) => !/^context_auth_(process_|nodejs_)/.test(name));
    assert.ok(names.includes('context_auth_sweep_last_completed_timestamp_seconds'));
    assert.ok(names.includes('context_auth_gateway_requests_total'));
    const missing = names.filter((name) => !DOC.includes(`| \`${name}\` |`));
    assert.deepEqual(missing, [], `docs/metrics.md has no row for ${missing.join(', ')}`);
  });
});
