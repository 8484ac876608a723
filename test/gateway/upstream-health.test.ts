/**
 * What /readyz says of an upstream: for HTTP, what the last forward found while it is fresh, else
 * a probe (any answer is `ok`); for stdio, whether the command can be run, found as spawn finds it.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { commandHealth, HttpUpstreamHealth } from '../../src/gateway/upstream-health.js';
import { nobodyListening } from '../helpers/gateway-harness.js';
import { sdkUpstream, type SdkUpstream } from '../helpers/mcp-upstreams.js';

describe('HTTP upstream health', () => {
  let upstream: SdkUpstream;
  before(async () => {
    upstream = await sdkUpstream();
  });
  after(() => upstream.close());

  it('a probe: ok when the upstream answers anything (a HEAD, no token), unreachable when nothing listens', async () => {
    const seen = upstream.received.length;
    assert.equal(await new HttpUpstreamHealth(new URL(upstream.url)).state(), 'ok');
    assert.deepEqual(
      upstream.received.slice(seen).map((request) => [request.method, request.headers.authorization]),
      [['HEAD', undefined]],
    );
    assert.equal(await new HttpUpstreamHealth(new URL(await nobodyListening())).state(), 'unreachable');
  });

  it('what a forward found stands for 10 s, with no probe; then a probe, whose finding stands as long', async () => {
    const clock = { ms: 1_000_000 };
    const health = new HttpUpstreamHealth(new URL(await nobodyListening()), () => clock.ms);
    // Nothing listens there: a probe would say unreachable, so each answer below is the forward's.
    health.forwarded({ kind: 'answered', status: 200, sessionId: null });
    assert.equal(await health.state(), 'ok');
    health.forwarded({ kind: 'failed', failure: 'refused' });
    assert.equal(await health.state(), 'refused');
    health.forwarded({ kind: 'failed', failure: 'timeout' });
    assert.equal(await health.state(), 'timeout');
    // A client gone says nothing of the upstream.
    health.forwarded({ kind: 'failed', failure: 'cancelled' });
    assert.equal(await health.state(), 'timeout');
    clock.ms += 10_000;
    assert.equal(await health.state(), 'unreachable', 'stale: probed');
    health.forwarded({ kind: 'answered', status: 200, sessionId: null });
    assert.equal(await health.state(), 'ok');
  });
});

describe('stdio command health', () => {
  const folder = mkdtempSync(join(tmpdir(), 'ca-command-health-'));
  const runnable = join(folder, 'runnable-server');
  const notRunnable = join(folder, 'not-runnable-server');
  writeFileSync(runnable, '#!/bin/sh\n');
  chmodSync(runnable, 0o755);
  writeFileSync(notRunnable, '#!/bin/sh\n');
  chmodSync(notRunnable, 0o644);

  it('a bare name is looked for in the PATH the process gets; a path is taken as it is', async () => {
    assert.equal(await commandHealth('runnable-server', ['/nonexistent', folder].join(delimiter)), 'ok');
    assert.equal(await commandHealth('runnable-server', '/nonexistent'), 'not_found', 'not in that PATH');
    assert.equal(await commandHealth('not-runnable-server', folder), 'not_executable');
    assert.equal(await commandHealth(runnable, undefined), 'ok');
    assert.equal(await commandHealth(notRunnable, undefined), 'not_executable');
    assert.equal(await commandHealth(join(folder, 'absent'), folder), 'not_found');
    assert.equal(await commandHealth('node', process.env.PATH), 'ok');
  });
});
