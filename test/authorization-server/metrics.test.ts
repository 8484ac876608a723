import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkMetricsAccess, isLoopbackAddress } from '../../src/authorization-server/endpoints/metrics.js';
import { countEvent } from '../../src/authorization-server/metrics/events.js';
import { ServerMetrics } from '../../src/authorization-server/metrics/metrics.js';
import { OAuthError } from '../../src/core/errors.js';
import { createHarness, postAs, registerClient, registerServiceClient, type Harness } from '../helpers/harness.js';
import { prometheusSamples as samples } from '../helpers/prometheus.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { StoreError } from '../../src/store/store.js';
import { requestFromWeb } from '../../src/authorization-server/http/from-web.js';

const TOKEN = 'metrics-token-0123456789';

async function scrape(h: Harness, headers: Record<string, string> = {}): Promise<{ status: number; text: string; type: string | null }> {
  const response = await h.request('/metrics', { headers });
  return { status: response.status, text: await response.text(), type: response.headers.get('content-type') };
}

describe('/metrics', () => {
  it('is 404 without the metrics option, and the server has no registry', async () => {
    const h = createHarness({ clientAddress: () => '127.0.0.1' });
    assert.equal((await scrape(h)).status, 404);
    assert.equal(h.server.metrics, null);
  });

  it('is served to loopback peers in the Prometheus text format, never cached', async () => {
    for (const peer of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) {
      const h = createHarness({ metrics: true, clientAddress: () => peer });
      const response = await h.request('/metrics');
      assert.equal(response.status, 200, peer);
      assert.match(response.headers.get('content-type')!, /^text\/plain; version=0\.0\.4/);
      assert.equal(response.headers.get('cache-control'), 'no-store');
      const text = await response.text();
      assert.match(text, /^# TYPE context_auth_token_requests_total counter$/m);
      assert.match(text, /^# TYPE context_auth_process_cpu_user_seconds_total counter$/m);
      assert.doesNotMatch(text, /^# TYPE (?!context_auth_)/m, 'every metric is prefixed');
    }
  });

  it('is refused (403) to other peers, to an unknown peer, and to requests a proxy forwarded', async () => {
    assert.equal((await scrape(createHarness({ metrics: true, clientAddress: () => '203.0.113.9' }))).status, 403);
    assert.equal((await scrape(createHarness({ metrics: true }))).status, 403);
    const local = createHarness({ metrics: true, clientAddress: () => '127.0.0.1' });
    assert.equal((await scrape(local, { 'x-forwarded-for': '198.51.100.2' })).status, 403);
    assert.equal((await scrape(local, { forwarded: 'for=198.51.100.2' })).status, 403);
  });

  it('with a token, is served to any peer that sends it, and refused (401) without it or with another', async () => {
    const h = createHarness({ metrics: { token: TOKEN }, clientAddress: () => '203.0.113.9' });
    const missing = await scrape(h);
    assert.equal(missing.status, 401);
    assert.equal(JSON.parse(missing.text).error, 'invalid_token');
    assert.equal((await scrape(h, { authorization: `Bearer ${TOKEN}x` })).status, 401);
    assert.equal((await scrape(h, { authorization: `Bearer ${TOKEN.slice(0, -1)}` })).status, 401);
    assert.equal((await scrape(h, { authorization: `Basic ${TOKEN}` })).status, 401);
    // A loopback peer needs it too once it is set.
    assert.equal((await scrape(createHarness({ metrics: { token: TOKEN }, clientAddress: () => '127.0.0.1' }))).status, 401);
    assert.equal((await scrape(h, { authorization: `Bearer ${TOKEN}` })).status, 200);
  });

  it('refuses a metrics token shorter than 16 characters', () => {
    assert.throws(() => createHarness({ metrics: { token: 'short' } }), /metrics\.token must be at least 16 characters/);
  });

  it('counts token requests by grant type and outcome, errors by endpoint and code, store calls; no client id in any label', async () => {
    const h = createHarness({ metrics: true, clientAddress: () => '127.0.0.1' });
    const client = await registerServiceClient(h);
    assert.equal((await postAs(h, '/token', client, { grant_type: 'client_credentials' })).status, 200);
    assert.equal((await postAs(h, '/token', { ...client, client_secret: 'wrong' }, { grant_type: 'client_credentials' })).status, 401);
    assert.equal((await postAs(h, '/token', client, { grant_type: 'urn:made-up:' + client.client_id })).status, 400);
    assert.equal((await postAs(h, '/token', client, { grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange' })).status, 400);
    await registerClient(h);
    const { text } = await scrape(h);
    const values = samples(text);
    assert.equal(values.get('context_auth_token_requests_total{grant_type="client_credentials",outcome="success"}'), 1);
    assert.equal(values.get('context_auth_token_requests_total{grant_type="client_credentials",outcome="invalid_client"}'), 1);
    assert.equal(values.get('context_auth_token_requests_total{grant_type="other",outcome="unsupported_grant_type"}'), 1);
    assert.equal(
      values.get('context_auth_token_requests_total{grant_type="urn:ietf:params:oauth:grant-type:token-exchange",outcome="unsupported_grant_type"}'),
      1,
    );
    assert.equal(values.get('context_auth_token_request_duration_seconds_count{grant_type="client_credentials"}'), 2);
    assert.equal(values.get('context_auth_errors_total{endpoint="/token",error="invalid_client"}'), 1);
    assert.equal(values.get('context_auth_registrations_total{kind="dynamic"}'), 1);
    assert.ok((values.get('context_auth_store_call_duration_seconds_count{method="getClient",outcome="ok"}') ?? 0) >= 3);
    assert.ok(values.has('context_auth_revocation_set_size'));
    assert.ok(!text.includes(client.client_id), 'a client id never becomes a label');
  });

  it('a store outage at the token endpoint: translated once, one store_unavailable line, counted as temporarily_unavailable', async () => {
    // The server times the store's methods as it is given them: the outage is set up before.
    const store = createMemoryStore();
    store.createGrant = () => Promise.reject(new StoreError('unavailable', 'pool exhausted'));
    const h = createHarness({ metrics: true, clientAddress: () => '127.0.0.1', store });
    const client = await registerServiceClient(h);
    const response = await postAs(h, '/token', client, { grant_type: 'client_credentials' });
    assert.equal(response.status, 503);
    assert.equal(response.headers.get('retry-after'), '5');
    assert.deepEqual(h.log.filter((line) => line.event === 'store_unavailable').length, 1);
    assert.ok(!h.log.some((line) => line.event === 'token_refused' || line.event === 'internal_error'), 'the outage is ours, not a refusal');
    const values = samples((await scrape(h)).text);
    assert.equal(values.get('context_auth_token_requests_total{grant_type="client_credentials",outcome="temporarily_unavailable"}'), 1);
    assert.equal(values.get('context_auth_errors_total{endpoint="/token",error="temporarily_unavailable"}'), 1);
  });

  it('counts revocations and rate-limit refusals from the audit events', async () => {
    const h = createHarness({ metrics: true, clientAddress: () => '127.0.0.1', rateLimits: { token: { burst: 1, perMinute: 1 } } });
    const client = await registerServiceClient(h);
    const { access_token } = (await (await postAs(h, '/token', client, { grant_type: 'client_credentials' })).json()) as { access_token: string };
    assert.equal((await postAs(h, '/token', client, { grant_type: 'client_credentials' })).status, 429);
    assert.equal((await postAs(h, '/revoke', client, { token: access_token })).status, 200);
    const values = samples((await scrape(h)).text);
    assert.equal(values.get('context_auth_rate_limited_total{limit="token"}'), 1);
    assert.equal(values.get('context_auth_revocations_total{kind="access_token"}'), 1);
    assert.equal(values.get('context_auth_errors_total{endpoint="/token",error="temporarily_unavailable"}'), 1);
  });

  it('counts sign-ins by method and outcome, throttles and registrations from the events the log is given', async () => {
    const metrics = new ServerMetrics();
    const events = [
      { event: 'login', user_id: 'u1', client_id: 'c1' },
      { event: 'login', user_id: 'u2', client_id: 'c1', provider: 'github' },
      { event: 'login_failed', client_id: 'c1' },
      { event: 'login_throttled', client_id: 'c1' },
      { event: 'user_code_throttled' },
      { event: 'upstream_refused', provider: 'github', client_id: 'c1', step: 'policy', reason: 'no' },
      { event: 'upstream_failed', provider: 'github', client_id: 'c1', error: 'server_error' },
      // A tool's call failing upstream, long after sign-in: no sign-in.
      { event: 'upstream_failed', provider: 'github', grant_id: 'g1', client_id: 'c1', error: 'server_error' },
      { event: 'client_created', client_id: 'https://app.example/client.json', registered_by: 'document' },
      { event: 'client_created', client_id: 'w1', registered_by: 'admin' },
      { event: 'rate_limited', limit: 'signIn', refused: 3 },
      { event: 'rate_limited', limit: 'made up by someone', refused: 1 },
      { event: 'refresh_token_reused', client_id: 'c1', grant_id: 'g1' },
    ];
    for (const event of events) countEvent(metrics, event);
    const text = await metrics.text();
    const values = samples(text);
    assert.equal(values.get('context_auth_sign_ins_total{method="password",outcome="success"}'), 1);
    assert.equal(values.get('context_auth_sign_ins_total{method="upstream",outcome="success"}'), 1);
    assert.equal(values.get('context_auth_sign_ins_total{method="password",outcome="failure"}'), 1);
    assert.equal(values.get('context_auth_sign_ins_total{method="password",outcome="throttled"}'), 1);
    assert.equal(values.get('context_auth_sign_ins_total{method="upstream",outcome="refused"}'), 1);
    assert.equal(values.get('context_auth_sign_ins_total{method="upstream",outcome="failure"}'), 1);
    assert.equal(values.get('context_auth_sign_in_throttled_total{kind="password"}'), 1);
    assert.equal(values.get('context_auth_sign_in_throttled_total{kind="user_code"}'), 1);
    assert.equal(values.get('context_auth_registrations_total{kind="document"}'), 1);
    assert.equal(values.get('context_auth_registrations_total{kind="admin"}'), 1);
    assert.equal(values.get('context_auth_rate_limited_total{limit="signIn"}'), 3);
    assert.equal(values.get('context_auth_rate_limited_total{limit="other"}'), 1);
    assert.equal(values.get('context_auth_revocations_total{kind="refresh_token_reuse"}'), 1);
    assert.doesNotMatch(text, /u1|c1|g1|github|made up|app\.example/, 'no identifier becomes a label');
  });
});

describe('the metrics access rule', () => {
  const request = (authorization?: string) =>
    requestFromWeb(
      new Request('http://127.0.0.1/metrics', authorization ? { headers: { authorization } } : {}),
      { maxBodyBytes: 0, trustedProxies: null },
      () => '203.0.113.9',
    );
  const refusal = (fn: () => void): number | undefined => {
    try {
      fn();
      return undefined;
    } catch (error) {
      assert.ok(error instanceof OAuthError);
      return error.status;
    }
  };

  it('compares the bearer token whole: no prefix, no extension, no other case of it passes', () => {
    assert.equal(
      refusal(() => checkMetricsAccess(TOKEN, request(`Bearer ${TOKEN}`))),
      undefined,
    );
    for (const wrong of [TOKEN.slice(0, -1), `${TOKEN}0`, TOKEN.toUpperCase(), '', `${TOKEN.slice(0, -1)}X`]) {
      assert.equal(
        refusal(() => checkMetricsAccess(TOKEN, request(`Bearer ${wrong}`))),
        401,
        wrong,
      );
    }
  });

  it('knows loopback addresses, IPv4-mapped ones included', () => {
    for (const address of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) assert.ok(isLoopbackAddress(address), address);
    for (const address of ['10.0.0.1', '::ffff:10.0.0.1', '0.0.0.0', '::', '128.0.0.1', 'localhost']) assert.ok(!isLoopbackAddress(address), address);
  });
});
