/**
 * `serve` limits by the connection's address (never a header, unless --trust-proxy names the
 * peer): a real process, real sockets on loopback, the flags as an operator types them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Browser, authorizeUrl, parseForm, pkcePair } from '../helpers/harness.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const register = (issuer: string, headers: Record<string, string> = {}) =>
  fetch(`${issuer}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'none' }),
  });

describe('serve: rate limits per client address', { timeout: 300_000 }, () => {
  const servers: RunningServer[] = [];
  const serve = async (...flags: string[]) => {
    const server = await startServe(['--port', String(await freePort()), '--data', tempDataFolder(), ...flags]);
    servers.push(server);
    return server;
  };
  after(async () => {
    for (const server of servers) await server.stop();
  });

  let limited: RunningServer;
  before(async () => {
    limited = await serve('--rate-limit', 'register=3/hour', '--rate-limit', 'token=2/minute', '--rate-limit', 'sign-in=2/minute');
  });

  it('--rate-limit register=3/hour: three registrations, then 429 with Retry-After (20 minutes a token) and OAuth JSON', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await register(limited.issuer)).status, 201);
    const refused = await register(limited.issuer);
    assert.equal(refused.status, 429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter > 1190 && retryAfter <= 1200, `Retry-After ${retryAfter}`);
    const body = (await refused.json()) as { error: string; error_description: string };
    assert.equal(body.error, 'temporarily_unavailable');
    assert.match(body.error_description, /too many requests/);
    // The header is the client's to write: without --trust-proxy it buys nothing.
    assert.equal((await register(limited.issuer, { 'x-forwarded-for': '203.0.113.77' })).status, 429);
    assert.match(limited.output(), /rate limits\s+register 0\.05\/min,burst=3, token 2\/min,burst=2, sign-in 2\/min,burst=2 per address \(in memory\)/);
    await limited.waitForOutput(/"event":"rate_limited","outcome":"failure","limit":"register"/);
  });

  it('--rate-limit token=2/minute: the third token request is refused before any work, as OAuth JSON', async () => {
    const token = () =>
      fetch(`${limited.issuer}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'not-a-token', client_id: 'nobody' }),
      });
    assert.equal((await token()).status, 401);
    assert.equal((await token()).status, 401);
    const refused = await token();
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get('retry-after')) >= 29, 'one token every 30 s');
    assert.equal(((await refused.json()) as { error: string }).error, 'temporarily_unavailable');
  });

  it('--rate-limit sign-in=2/minute: the third form post gets a page saying how long to wait', async () => {
    const other = await serve('--rate-limit', 'sign-in=2/minute', '--quiet');
    const { client_id } = (await (await register(other.issuer)).json()) as { client_id: string };
    const browser = new Browser((path, init) => fetch(new URL(path, other.issuer), init));
    const start = await browser.fetch(
      authorizeUrl({
        response_type: 'code',
        client_id,
        redirect_uri: 'http://127.0.0.1:9/cb',
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
      }),
    );
    const { action, csrf } = parseForm(await (await browser.fetch(start.headers.get('location')!)).text());
    for (let i = 0; i < 2; i++) assert.equal((await browser.submit(action, { csrf, step: 'login', username: `nobody-${i}`, password: 'wrong' })).status, 401);
    const refused = await browser.submit(action, { csrf, step: 'login', username: 'nobody', password: 'wrong' });
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get('retry-after')) >= 29);
    assert.match(await refused.text(), /Too many attempts from your network\. Wait \d+ seconds/);
  });

  it("--trust-proxy 127.0.0.1: the proxy's X-Forwarded-For names the client, each with its own budget", async () => {
    const proxied = await serve('--rate-limit', 'register=1/hour', '--trust-proxy', '127.0.0.1,::1', '--quiet');
    assert.equal((await register(proxied.issuer, { 'x-forwarded-for': '203.0.113.1' })).status, 201);
    assert.equal((await register(proxied.issuer, { 'x-forwarded-for': '203.0.113.2' })).status, 201);
    assert.equal((await register(proxied.issuer, { 'x-forwarded-for': '203.0.113.1' })).status, 429);
    assert.equal((await register(proxied.issuer, { 'x-forwarded-for': '198.51.100.9, 203.0.113.1' })).status, 429, 'only the rightmost untrusted hop counts');
  });

  it('the defaults hold without any flag: 30 registrations from one address, then 429', async () => {
    const defaults = await serve('--quiet');
    const statuses = [];
    for (let i = 0; i < 31; i++) statuses.push((await register(defaults.issuer)).status);
    assert.deepEqual(statuses.slice(0, 30), new Array(30).fill(201));
    assert.equal(statuses[30], 429);
  });

  it('a mistyped flag stops serve at start with a usage error', async () => {
    for (const flags of [
      ['--rate-limit', 'register=lots'],
      ['--rate-limit', 'login=1/min'],
      ['--trust-proxy', 'proxy.internal'],
    ]) {
      const result = await cli(['serve', '--port', '0', '--data', tempDataFolder(), ...flags]);
      assert.equal(result.code, 2, `${flags.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, /--rate-limit|--trust-proxy/);
    }
  });
});
