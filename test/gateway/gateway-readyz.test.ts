/**
 * serve's /readyz with gateway paths: each path's upstream state is reported, and a path whose
 * upstream is down does not make the server unready (it still serves its other paths and its
 * authorization server).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sdkUpstream, type SdkUpstream } from '../helpers/mcp-upstreams.js';
import { STDIO_COMMAND, gatewayHarness, nobodyListening, type GatewayHarness } from '../helpers/gateway-harness.js';

describe('/readyz with gateway paths', () => {
  let upstream: SdkUpstream;
  let h: GatewayHarness;

  before(async () => {
    upstream = await sdkUpstream();
    h = gatewayHarness({
      gateway: [`/up=${upstream.url}`, `/down=${await nobodyListening()}`, `/files=${STDIO_COMMAND}`, '/missing=stdio:no-such-context-server --stdio'],
    });
  });
  after(async () => {
    await h.settings.close();
    await upstream.close();
  });

  it("reports each upstream's state and stays ready when one is down", async () => {
    const response = await h.request('/readyz');
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), {
      status: 'ready',
      checks: { store: 'ok', signing_key: 'ok' },
      upstreams: { '/up': 'ok', '/down': 'unreachable', '/files': 'ok', '/missing': 'not_found' },
    });
  });
});
