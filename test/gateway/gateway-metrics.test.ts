/**
 * The gateway's metrics on serve's /metrics: requests per path and outcome, the upstream's answer
 * time per path, stdio sessions per path. The upstreams are real: the MCP SDK's server over HTTP,
 * a port nobody listens on, and the SDK's stdio server run per session.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { prometheusSamples } from '../helpers/prometheus.js';
import { hangingUpstream, sdkUpstream, type HangingUpstream, type SdkUpstream } from '../helpers/mcp-upstreams.js';
import { MCP_HEADERS, STDIO_COMMAND, gatewayHarness, initialize, nobodyListening, toolCall, type GatewayHarness } from '../helpers/gateway-harness.js';

describe('gateway metrics', () => {
  let upstream: SdkUpstream;
  let hanging: HangingUpstream;
  let h: GatewayHarness;

  before(async () => {
    upstream = await sdkUpstream();
    hanging = await hangingUpstream();
    h = gatewayHarness(
      { gateway: [`/up=${upstream.url}`, `/down=${await nobodyListening()}`, `/files=${STDIO_COMMAND}`, `/hanging=${hanging.url}`] },
      { metrics: true },
    );
  });
  after(async () => {
    await h.settings.close();
    await upstream.close();
    await hanging.close();
  });

  it('count requests by path and outcome, time the upstream, and count stdio sessions; no label names a person, token, session or tool', async () => {
    const alice = await h.client();
    const bob = await h.client();
    const token = await h.token(alice, '/up');

    // Refused by the guard: no token.
    assert.equal((await h.request('/up', { method: 'POST', headers: MCP_HEADERS, body: '{}' })).status, 401);
    // Forwarded: a session opened, a tool called in it.
    const opened = await h.post('/up', token, initialize(1));
    assert.equal(opened.status, 200);
    await opened.text();
    const sessionId = opened.headers.get('mcp-session-id')!;
    const session = { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' };
    const called = await h.post('/up', token, toolCall(2, 'echo', { text: 'counted' }), session);
    assert.equal(called.status, 200);
    await called.text();
    // Someone else's session: refused by the gateway.
    assert.equal((await h.post('/up', await h.token(bob, '/up'), toolCall(3, 'echo', { text: 'x' }), session)).status, 404);
    // An upstream nobody listens on.
    assert.equal((await h.post('/down', await h.token(alice, '/down'), initialize(1))).status, 502);
    // A stdio session, running.
    const stdio = await h.post('/files', await h.token(alice, '/files'), initialize(1));
    assert.equal(stdio.status, 200);
    await stdio.text();

    const text = await h.metricsText();
    const samples = prometheusSamples(text);
    assert.equal(samples.get('context_auth_gateway_requests_total{path="/up",outcome="denied"}'), 2);
    assert.equal(samples.get('context_auth_gateway_requests_total{path="/up",outcome="2xx"}'), 2);
    assert.equal(samples.get('context_auth_gateway_requests_total{path="/down",outcome="unreachable"}'), 1);
    assert.equal(samples.get('context_auth_gateway_requests_total{path="/files",outcome="2xx"}'), 1);
    // The upstream's answer time: once per answer it gave, none for the one that could not be reached.
    assert.equal(samples.get('context_auth_gateway_upstream_duration_seconds_count{path="/up"}'), 2);
    assert.ok(samples.get('context_auth_gateway_upstream_duration_seconds_sum{path="/up"}')! > 0);
    assert.equal(samples.get('context_auth_gateway_upstream_duration_seconds_count{path="/down"}'), undefined);
    assert.equal(samples.get('context_auth_gateway_stdio_sessions{path="/files"}'), 1);
    assert.equal(samples.get('context_auth_gateway_stdio_sessions{path="/up"}'), undefined, 'an HTTP upstream keeps its own sessions');

    const gatewayLines = text.split('\n').filter((line) => line.startsWith('context_auth_gateway_'));
    for (const secret of [token, alice.client_id, bob.client_id, sessionId, 'echo', 'counted']) {
      assert.ok(!gatewayLines.some((line) => line.includes(secret)), `no gateway metric carries ${secret.slice(0, 12)}…`);
    }
  });

  it('a request whose client goes away before the upstream answers is cancelled: the upstream is not called unreachable', async () => {
    const robot = await h.client();
    const token = await h.token(robot, '/hanging');
    const leaving = new AbortController();
    const answer = h.request('/hanging', {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
      body: JSON.stringify(toolCall(1, 'echo', { text: 'x' })),
      signal: leaving.signal,
    });
    await hanging.arrived;
    leaving.abort();
    await answer;
    const samples = prometheusSamples(await h.metricsText());
    assert.equal(samples.get('context_auth_gateway_requests_total{path="/hanging",outcome="cancelled"}'), 1);
    assert.equal(samples.get('context_auth_gateway_requests_total{path="/hanging",outcome="unreachable"}'), undefined);
    assert.deepEqual(
      h.log.filter((record) => record.path === '/hanging').map((record) => [record.event, record.failure]),
      [['gateway_tool_failed', 'cancelled']],
    );
  });
});
