/**
 * Revocation that takes effect: on a real `context-auth serve` (SQLite), the access tokens of a
 * grant revoked by a replayed code, a reused refresh token, a logout (RFC 7009 with the refresh
 * token) or `context-auth consents revoke` (another process on the same data folder) are refused
 * at the co-hosted /mcp long before they expire: at once for the first three, within about a
 * second for the CLI.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Browser, pkcePair, signInAndConsent } from '../helpers/harness.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const USER = { username: 'alice', password: 'correct horse battery staple' };
const CALLBACK = 'http://127.0.0.1:45678/callback';

interface Tokens {
  access_token: string;
  refresh_token: string;
}

describe('revocation reaches the co-hosted /mcp', () => {
  const data = tempDataFolder();
  let server: RunningServer;
  let issuer: string;
  let clientId: string;
  const browser = new Browser((path, init) => fetch(new URL(path, issuer), init));

  const post = (path: string, values: Record<string, string>) =>
    fetch(new URL(path, issuer), { method: 'POST', body: new URLSearchParams(values), headers: { 'content-type': 'application/x-www-form-urlencoded' } });

  /** One request to the demo MCP server with the token: 200 when it is accepted. */
  const mcpStatus = async (accessToken: string): Promise<number> => {
    const response = await fetch(`${issuer}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    await response.body?.cancel();
    return response.status;
  };

  async function authorizeOnce(): Promise<{ code: string; verifier: string }> {
    const { verifier, challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: CALLBACK,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 's',
      resource: `${issuer}/mcp`,
    });
    const callback = await signInAndConsent(browser, await browser.fetch(`/authorize?${query}`), USER, 'approve', issuer);
    return { code: callback.searchParams.get('code')!, verifier };
  }

  const redeem = (code: string, verifier: string) =>
    post('/token', { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: CALLBACK, client_id: clientId, resource: `${issuer}/mcp` });

  async function freshTokens(): Promise<Tokens & { code: string; verifier: string }> {
    const { code, verifier } = await authorizeOnce();
    const response = await redeem(code, verifier);
    assert.equal(response.status, 200);
    const tokens = (await response.json()) as Tokens;
    // The token works first, so a refusal later is the revocation's doing (and the verifier has it cached).
    assert.equal(await mcpStatus(tokens.access_token), 200);
    return { ...tokens, code, verifier };
  }

  before(async () => {
    const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    server = await startServe(['--port', String(await freePort()), '--data', data]);
    issuer = server.issuer;
    const registration = await fetch(`${issuer}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Revocation',
        redirect_uris: [CALLBACK],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
      }),
    });
    clientId = ((await registration.json()) as { client_id: string }).client_id;
  });

  after(async () => {
    await server?.stop();
  });

  it('a replayed code: its access token is refused on the very next request', async () => {
    const tokens = await freshTokens();
    assert.equal((await redeem(tokens.code, tokens.verifier)).status, 400);
    assert.equal(await mcpStatus(tokens.access_token), 401);
  });

  it('a reused refresh token: every access token of the family is refused at once', async () => {
    const tokens = await freshTokens();
    const rotated = await post('/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId });
    const next = (await rotated.json()) as Tokens;
    // The token it was rotated to is used, so presenting it again is no retry of a lost answer.
    const newest = (await (await post('/token', { grant_type: 'refresh_token', refresh_token: next.refresh_token, client_id: clientId })).json()) as Tokens;
    assert.equal(await mcpStatus(newest.access_token), 200);
    assert.equal((await post('/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId })).status, 400);
    for (const access of [tokens, next, newest].map((t) => t.access_token)) assert.equal(await mcpStatus(access), 401);
  });

  it('a logout (the refresh token revoked at /revoke): refused at once', async () => {
    const tokens = await freshTokens();
    const revoked = await post('/revoke', { token: tokens.refresh_token, token_type_hint: 'refresh_token', client_id: clientId });
    assert.equal(revoked.status, 200);
    assert.equal(await mcpStatus(tokens.access_token), 401);
  });

  it('one access token revoked by itself: that one refused, its grant untouched', async () => {
    const tokens = await freshTokens();
    const rotated = (await (await post('/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId })).json()) as Tokens;
    assert.equal((await post('/revoke', { token: tokens.access_token, token_type_hint: 'access_token', client_id: clientId })).status, 200);
    assert.equal(await mcpStatus(tokens.access_token), 401);
    assert.equal(await mcpStatus(rotated.access_token), 200);
  });

  it('consents revoke from another process: refused within about a second, and the CLI says so', async () => {
    const tokens = await freshTokens();
    const revoked = await cli(['consents', 'revoke', '--user', USER.username, '--client', clientId, '--data', data]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stdout, /access tokens are refused within about a second by serve/);
    const started = Date.now();
    while ((await mcpStatus(tokens.access_token)) === 200) {
      assert.ok(Date.now() - started < 2500, 'still accepted 2.5 s after the revocation');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(await mcpStatus(tokens.access_token), 401);
  });
});
