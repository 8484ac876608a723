/**
 * The database goes away under a running `serve --store postgres://…`: every request that needs
 * it is answered 503 temporarily_unavailable with Retry-After (JSON, no stack trace), the process
 * stays up, and it serves again, unrestarted, once PostgreSQL is back. A database that cannot be
 * reached at start is one sentence and exit 1, without the password.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Browser, pkcePair, signInAndConsent } from '../helpers/harness.js';
import { startPostgresServer, type PostgresServer } from '../helpers/postgres.js';
import { cli, freePort, startServe, type RunningServer } from './serve-process.js';

const USER = { username: 'alice', password: 'correct horse battery staple' };
const CALLBACK = 'http://127.0.0.1:45678/callback';
/** In every connection string; the test server trusts 127.0.0.1, so any password is accepted. */
const SECRET = 'pg-Secret-5ab1e';
const STACK = /\n\s+at |\.ts:\d+|\.js:\d+/;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Asks until `attempt` is satisfied or `timeoutMs` passes; returns the last response and how long it took. */
async function poll(attempt: () => Promise<Response>, done: (response: Response) => boolean, timeoutMs: number): Promise<{ response: Response; ms: number }> {
  const started = Date.now();
  for (;;) {
    const response = await attempt();
    if (done(response) || Date.now() - started > timeoutMs) return { response, ms: Date.now() - started };
    await response.body?.cancel();
    await sleep(250);
  }
}

/** Asserts the 503 an outage must produce, and returns the body. */
async function expectUnavailable(response: Response, what: string): Promise<Record<string, unknown>> {
  const text = await response.text();
  assert.equal(response.status, 503, `${what}: expected 503, got ${response.status}: ${text.slice(0, 300)}`);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/, what);
  assert.ok(Number(response.headers.get('retry-after')) > 0, `${what}: Retry-After`);
  const body = JSON.parse(text) as Record<string, unknown>;
  assert.equal(body.error, 'temporarily_unavailable', what);
  assert.equal(typeof body.error_description, 'string', what);
  assert.doesNotMatch(text, STACK, `${what}: no stack trace`);
  assert.doesNotMatch(text, /postgres|ECONNREFUSED|127\.0\.0\.1:\d+\//i, `${what}: nothing about the database`);
  assert.ok(!text.includes(SECRET), `${what}: no password`);
  return body;
}

describe('serve --store postgres://… when the database goes away', () => {
  let postgres: PostgresServer | undefined;
  let server: RunningServer | undefined;
  let issuer: string;
  let clientId: string;
  let refreshToken: string;
  let accessToken: string;
  const browser = new Browser((path, init) => fetch(new URL(path, issuer), init));

  const register = () =>
    fetch(`${issuer}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Outage',
        redirect_uris: [CALLBACK],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
      }),
    });
  const token = (values: Record<string, string>) =>
    fetch(`${issuer}/token`, { method: 'POST', body: new URLSearchParams(values), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  const refresh = (refresh_token: string) => token({ grant_type: 'refresh_token', refresh_token, client_id: clientId });
  const alive = () => server?.process.exitCode === null && server.process.signalCode === null;

  before(async () => {
    postgres = await startPostgresServer();
    const database = await postgres.createDatabase();
    // The same database, with a password in the URL (ignored by the trusting test server) that must never be printed.
    const url = new URL(database);
    url.password = SECRET;
    const store = url.href;
    const added = await cli(['users', 'add', USER.username, '--store', store], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    server = await startServe(['--port', String(await freePort()), '--store', store]);
    issuer = server.issuer;

    const registered = await register();
    assert.equal(registered.status, 201);
    clientId = ((await registered.json()) as { client_id: string }).client_id;
    const { verifier, challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: CALLBACK,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 's',
    });
    const callback = await signInAndConsent(browser, await browser.fetch(`/authorize?${query}`), USER, 'approve', issuer);
    const exchanged = await token({
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      code_verifier: verifier,
      redirect_uri: CALLBACK,
      client_id: clientId,
    });
    assert.equal(exchanged.status, 200);
    ({ refresh_token: refreshToken, access_token: accessToken } = (await exchanged.json()) as { refresh_token: string; access_token: string });
    // Deliberately not shown to /mcp yet: its verifier has fetched no keys so far.
  });

  after(async () => {
    await server?.stop();
    await postgres?.stop();
  });

  it('answers 503 temporarily_unavailable while PostgreSQL is stopped, and stays up', async (t) => {
    await postgres!.pause();
    const stoppedAt = Date.now();

    await expectUnavailable(await register(), 'POST /register');
    await expectUnavailable(await refresh(refreshToken), 'POST /token (refresh_token)');
    await expectUnavailable(
      await token({ grant_type: 'authorization_code', code: 'x'.repeat(43), code_verifier: 'y'.repeat(43), redirect_uri: CALLBACK, client_id: clientId }),
      'POST /token (authorization_code)',
    );
    await expectUnavailable(
      await fetch(`${issuer}/revoke`, { method: 'POST', body: new URLSearchParams({ token: refreshToken, client_id: clientId }) }),
      'POST /revoke',
    );

    // The signing keys are cached for 5 s; after that /jwks needs the database too.
    const jwks = await poll(
      () => fetch(`${issuer}/jwks`),
      (response) => response.status !== 200,
      10_000,
    );
    await expectUnavailable(jwks.response, 'GET /jwks');
    t.diagnostic(`/jwks turned 503 ${Date.now() - stoppedAt} ms after the stop`);

    // Static: still served.
    const metadata = await fetch(`${issuer}/.well-known/oauth-authorization-server`);
    assert.equal(metadata.status, 200);
    assert.equal(((await metadata.json()) as { issuer: string }).issuer, issuer);

    // The context server cannot fetch the keys to check a token it has not seen: 503, not 401 (the token is fine) nor 500.
    const mcp = await fetch(`${issuer}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    await expectUnavailable(mcp, 'POST /mcp');
    assert.equal(mcp.headers.get('www-authenticate'), null, 'no challenge: the client should retry, not re-authorize');

    // The browser pages: an error page, no trace.
    const { challenge } = pkcePair();
    const page = await browser.fetch(
      `/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: CALLBACK, code_challenge: challenge, code_challenge_method: 'S256', state: 's' })}`,
    );
    const html = await page.text();
    assert.equal(page.status, 503, html.slice(0, 300));
    assert.doesNotMatch(html, STACK);

    // Still up, and its log says what happened in one line per request, without the password or a trace.
    await sleep(100);
    assert.ok(alive(), `serve is still running:\n${server!.output()}`);
    const output = server!.output();
    assert.match(output, /"event":"store_unavailable"/);
    assert.doesNotMatch(output, /\n\s+at /);
    assert.ok(!output.includes(SECRET), 'the password is never printed');
  });

  it('serves again, without a restart, once PostgreSQL is back', async (t) => {
    await postgres!.resume();
    const registered = await poll(register, (response) => response.status === 201, 15_000);
    assert.equal(registered.response.status, 201, await registered.response.clone().text());
    t.diagnostic(`POST /register answered 201 ${registered.ms} ms after PostgreSQL was started again`);
    // The refresh refused during the outage changed nothing: the token is still good, once.
    const refreshed = await refresh(refreshToken);
    assert.equal(refreshed.status, 200);
    assert.equal((await fetch(`${issuer}/jwks`)).status, 200);
    const mcp = await fetch(`${issuer}/mcp`, { headers: { authorization: `Bearer ${accessToken}` } });
    assert.equal(mcp.status, 405, 'past the bearer check: the token is accepted');
    assert.ok(alive());
    assert.ok(!server!.output().includes(SECRET));
  });

  it('exits 1 at once, in one sentence and without the password, when the database cannot be reached', async () => {
    const closed = await freePort();
    const started = Date.now();
    const result = await cli(['serve', '--port', '0', '--store', `postgres://context:${SECRET}@127.0.0.1:${closed}/x`]);
    const ms = Date.now() - started;
    assert.equal(result.code, 1);
    assert.ok(ms < 10_000, `took ${ms} ms`);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /^context-auth: Cannot open the database [^\n]*\n$/);
    assert.match(result.stderr, new RegExp(`127\\.0\\.0\\.1:${closed}`), 'says which database');
    assert.ok(!result.stderr.includes(SECRET), `no password in: ${result.stderr}`);
    assert.doesNotMatch(result.stderr, STACK);
  });
});
