/**
 * The gateway's rate limit: a budget per gateway path and person (the token's subject), spent by
 * every request the guard lets through; past it, 429 with Retry-After and a JSON-RPC error, and
 * nothing reaches the upstream. The harness clock stands still, so the budget refills only when
 * the test moves it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { prometheusSamples } from '../helpers/prometheus.js';
import { sdkUpstream, type SdkUpstream } from '../helpers/mcp-upstreams.js';
import { MCP_HEADERS, gatewayHarness, initialize, type GatewayHarness } from '../helpers/gateway-harness.js';

describe('gateway rate limit per path and person', () => {
  let upstream: SdkUpstream;
  let h: GatewayHarness;

  before(async () => {
    upstream = await sdkUpstream();
    h = gatewayHarness({ gateway: [`/up=${upstream.url}`, `/other=${upstream.url}`] }, { rateLimits: { gateway: { burst: 2, perMinute: 1 } }, metrics: true });
  });
  after(async () => {
    await h.settings.close();
    await upstream.close();
  });

  it('refuses a person past their budget at a path with 429, Retry-After and a JSON-RPC error; others, and other paths, keep theirs', async () => {
    const alice = await h.client();
    const bob = await h.client();
    const aliceToken = await h.token(alice, '/up');
    const send = async (path: string, token: string): Promise<Response> => {
      const answer = await h.post(path, token, initialize(1));
      await answer.body?.cancel();
      return answer;
    };
    // A request the guard refuses spends nothing.
    assert.equal((await h.request('/up', { method: 'POST', headers: MCP_HEADERS, body: '{}' })).status, 401);
    assert.equal((await send('/up', aliceToken)).status, 200);
    assert.equal((await send('/up', aliceToken)).status, 200);
    const seen = upstream.received.length;
    const refused = await h.post('/up', aliceToken, initialize(1));
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '60');
    assert.deepEqual(await refused.json(), { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Too many requests: retry after 60 seconds' } });
    assert.equal(upstream.received.length, seen, 'nothing reached the upstream');

    assert.equal((await send('/up', await h.token(bob, '/up'))).status, 200, "bob's budget is his own");
    assert.equal((await send('/other', await h.token(alice, '/other'))).status, 200, "alice's budget at another path is another");
    h.clock.now += 60;
    assert.equal((await send('/up', aliceToken)).status, 200, 'refilled a minute later');

    const logged = h.log.filter((record) => record.event === 'gateway_rate_limited').map(({ time: _time, ...event }) => event);
    assert.deepEqual(logged, [{ event: 'gateway_rate_limited', outcome: 'failure', path: '/up', user_id: alice.client_id, refused: 1 }]);
    const samples = prometheusSamples(await h.metricsText());
    assert.equal(samples.get('context_auth_rate_limited_total{limit="gateway"}'), 1);
    assert.equal(samples.get('context_auth_gateway_requests_total{path="/up",outcome="rate_limited"}'), 1);
  });
});
