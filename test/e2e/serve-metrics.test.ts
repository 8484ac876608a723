/**
 * `serve --metrics` and the health endpoints, on the built CLI: a client an operator added gets a
 * token with client_credentials, and the scrape shows it counted; /metrics is 404 without the flag
 * and needs the token when --metrics-token is set.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';
import { prometheusSamples as samples } from '../helpers/prometheus.js';

const TOKEN = 'scrape-token-0123456789abcdef';

describe('serve --metrics', () => {
  const data = tempDataFolder();
  let server: RunningServer;
  let plain: RunningServer;
  let withToken: RunningServer;

  before(async () => {
    [server, plain, withToken] = await Promise.all([
      startServe(['--port', String(await freePort()), '--data', data, '--quiet', '--metrics']),
      startServe(['--port', String(await freePort()), '--data', tempDataFolder(), '--quiet']),
      startServe(['--port', String(await freePort()), '--data', tempDataFolder(), '--quiet', '--metrics', '--metrics-token', TOKEN]),
    ]);
  });
  after(async () => {
    await Promise.all([server, plain, withToken].map((s) => s?.stop()));
  });

  it('counts a client_credentials grant in the scrape, with no client id in it', async () => {
    const added = await cli(['clients', 'add', '--data', data, '--grant-type', 'client_credentials', '--name', 'scraped robot']);
    assert.equal(added.code, 0, added.stderr);
    const { client_id: clientId, client_secret: secret } = JSON.parse(added.stdout) as { client_id: string; client_secret: string };
    const token = await fetch(`${server.issuer}/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    assert.equal(token.status, 200);
    const scrape = await fetch(`${server.issuer}/metrics`);
    assert.equal(scrape.status, 200);
    assert.match(scrape.headers.get('content-type')!, /^text\/plain/);
    const text = await scrape.text();
    const values = samples(text);
    assert.equal(values.get('context_auth_token_requests_total{grant_type="client_credentials",outcome="success"}'), 1);
    assert.equal(values.get('context_auth_token_request_duration_seconds_count{grant_type="client_credentials"}'), 1);
    assert.ok((values.get('context_auth_store_call_duration_seconds_count{method="getClient",outcome="ok"}') ?? 0) >= 1);
    assert.ok(values.has('context_auth_process_resident_memory_bytes'));
    assert.ok(!text.includes(clientId));
    assert.match(server.output(), /metrics\s+\S+\/metrics\s+\(this machine only\)/);
  });

  it('answers /healthz and /readyz', async () => {
    const health = await fetch(`${server.issuer}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });
    const ready = await fetch(`${server.issuer}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(await ready.json(), { status: 'ready', checks: { store: 'ok', signing_key: 'ok' } });
    // Served without --metrics too.
    assert.equal((await fetch(`${plain.issuer}/readyz`)).status, 200);
  });

  it('is 404 without --metrics', async () => {
    assert.equal((await fetch(`${plain.issuer}/metrics`)).status, 404);
  });

  it('with --metrics-token, needs Authorization: Bearer TOKEN even from this machine', async () => {
    assert.equal((await fetch(`${withToken.issuer}/metrics`)).status, 401);
    assert.equal((await fetch(`${withToken.issuer}/metrics`, { headers: { authorization: `Bearer ${TOKEN}-` } })).status, 401);
    assert.equal((await fetch(`${withToken.issuer}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status, 200);
  });

  it('refuses --metrics-token without --metrics, and a short token', async () => {
    const alone = await cli(['serve', '--data', tempDataFolder(), '--metrics-token', TOKEN]);
    assert.notEqual(alone.code, 0);
    assert.match(alone.stderr, /--metrics-token goes with --metrics/);
    const short = await cli(['serve', '--data', tempDataFolder(), '--metrics', '--metrics-token', 'short']);
    assert.notEqual(short.code, 0);
    assert.match(short.stderr, /--metrics-token must be at least 16 characters/);
  });
});
