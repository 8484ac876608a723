/**
 * The whole product as a user runs it: `context-auth serve` as a child process on a free port
 * with a temporary data folder, a user added through the CLI, a client registered with DCR, the
 * login and consent forms driven over HTTP, codes and refresh tokens redeemed and replayed, and
 * the server restarted (politely and with SIGKILL) to show the state survived.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { join } from 'node:path';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient } from '../../src/authorization-server/clients.js';
import { DATABASE_FILE } from '../../src/cli/data.js';
import { JWT_BEARER_GRANT_TYPE } from '../../src/core/protocol.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { Browser, pkcePair, signInAndConsent } from '../helpers/harness.js';
import { cli, cliWithEnv, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const USER = { username: 'alice', password: 'correct horse battery staple' };
const CALLBACK = 'http://127.0.0.1:45678/callback';

describe('context-auth serve, end to end', () => {
  const data = tempDataFolder();
  let port: number;
  let server: RunningServer;
  let issuer: string;
  let clientId: string;
  const browser = new Browser((path, init) => fetch(new URL(path, issuer), init));

  const post = (path: string, values: Record<string, string>) =>
    fetch(new URL(path, issuer), { method: 'POST', body: new URLSearchParams(values), headers: { 'content-type': 'application/x-www-form-urlencoded' } });

  /** One authorization in the browser; returns the code and its verifier. */
  async function authorizeOnce(state: string): Promise<{ code: string; verifier: string; callback: URL }> {
    const { verifier, challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: CALLBACK,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state,
      resource: `${issuer}/mcp`,
    });
    const first = await browser.fetch(`/authorize?${query}`);
    const callback = await signInAndConsent(browser, first, USER, 'approve', issuer);
    assert.equal(callback.origin + callback.pathname, CALLBACK);
    assert.equal(callback.searchParams.get('state'), state);
    assert.equal(callback.searchParams.get('iss'), issuer);
    return { code: callback.searchParams.get('code')!, verifier, callback };
  }

  async function redeem(code: string, verifier: string): Promise<Response> {
    return post('/token', {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: CALLBACK,
      client_id: clientId,
      resource: `${issuer}/mcp`,
    });
  }

  async function refresh(token: string): Promise<Response> {
    return post('/token', { grant_type: 'refresh_token', refresh_token: token, client_id: clientId });
  }

  before(async () => {
    port = await freePort();
    const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    server = await startServe(['--port', String(port), '--data', data]);
    issuer = server.issuer;
  });

  after(async () => {
    await server?.stop();
  });

  let liveRefresh: string;
  let kids: string[];

  it('serves metadata for both revisions at the base URL', async () => {
    assert.equal(issuer, `http://127.0.0.1:${port}`);
    for (const header of ['Context-Protocol-Version', 'MCP-Protocol-Version']) {
      const response = await fetch(`${issuer}/.well-known/oauth-authorization-server`, { headers: { [header]: '2025-03-26' } });
      assert.equal(response.status, 200);
      const metadata = (await response.json()) as Record<string, string>;
      assert.equal(metadata.issuer, issuer);
      assert.equal(metadata.authorization_endpoint, `${issuer}/authorize`);
      assert.equal(metadata.token_endpoint, `${issuer}/token`);
      assert.equal(metadata.registration_endpoint, `${issuer}/register`);
    }
  });

  it('registers a client, logs in, consents, exchanges, refreshes and catches replays', async () => {
    const registration = await fetch(`${issuer}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'E2E',
        redirect_uris: [CALLBACK],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
      }),
    });
    assert.equal(registration.status, 201);
    clientId = ((await registration.json()) as { client_id: string }).client_id;

    const { code, verifier } = await authorizeOnce('first');
    const exchanged = await redeem(code, verifier);
    assert.equal(exchanged.status, 200);
    const tokens = (await exchanged.json()) as { access_token: string; refresh_token: string };
    const jwks = (await (await fetch(`${issuer}/jwks`)).json()) as { keys: { kid: string }[] };
    kids = jwks.keys.map((key) => key.kid);
    const { payload } = await jwtVerify(tokens.access_token, createLocalJWKSet(jwks as never), { issuer, audience: `${issuer}/mcp` });
    assert.equal(payload.client_id, clientId);

    const rotated = await refresh(tokens.refresh_token);
    assert.equal(rotated.status, 200);
    const next = (await rotated.json()) as { refresh_token: string };
    assert.notEqual(next.refresh_token, tokens.refresh_token);

    const codeReplay = await redeem(code, verifier);
    assert.equal(codeReplay.status, 400);
    assert.equal(((await codeReplay.json()) as { error: string }).error, 'invalid_grant');
    // The replayed code revoked its grant: the refresh token it led to is dead too.
    assert.equal((await refresh(next.refresh_token)).status, 400);

    // A second authorization: session and consent are remembered, so no page is shown.
    const second = await authorizeOnce('second');
    const secondTokens = (await (await redeem(second.code, second.verifier)).json()) as { refresh_token: string };
    const r1 = (await (await refresh(secondTokens.refresh_token)).json()) as { refresh_token: string };
    const r2 = (await (await refresh(r1.refresh_token)).json()) as { refresh_token: string };
    // Reusing a rotated refresh token revokes the family, the newest token included.
    const reuse = await refresh(secondTokens.refresh_token);
    assert.equal(reuse.status, 400);
    assert.equal((await refresh(r2.refresh_token)).status, 400);

    const third = await authorizeOnce('third');
    liveRefresh = ((await (await redeem(third.code, third.verifier)).json()) as { refresh_token: string }).refresh_token;
  });

  it('keeps users, clients, sessions, keys and tokens across a restart', async () => {
    assert.equal(await server.stop('SIGTERM'), 0);
    server = await startServe(['--port', String(port), '--data', data]);
    const jwks = (await (await fetch(`${issuer}/jwks`)).json()) as { keys: { kid: string }[] };
    assert.deepEqual(
      jwks.keys.map((key) => key.kid),
      kids,
    );
    const refreshed = await refresh(liveRefresh);
    assert.equal(refreshed.status, 200);
    liveRefresh = ((await refreshed.json()) as { refresh_token: string }).refresh_token;
    // The browser's session survived too: no login page this time.
    await authorizeOnce('after-restart');
  });

  it('loses nothing committed when killed with SIGKILL', async () => {
    const before = liveRefresh;
    const refreshed = await refresh(before);
    assert.equal(refreshed.status, 200);
    liveRefresh = ((await refreshed.json()) as { refresh_token: string }).refresh_token;
    await server.stop('SIGKILL');
    server = await startServe(['--port', String(port), '--data', data]);
    // The rotation committed before the kill: the old token is spent, the new one works.
    assert.equal((await refresh(liveRefresh)).status, 200);
    assert.equal((await refresh(before)).status, 400);
  });

  it('picks up a key rotated by the CLI while running', async () => {
    const rotated = await cli(['keys', 'rotate', '--json', '--data', data]);
    assert.equal(rotated.code, 0, rotated.stderr);
    const { kid } = JSON.parse(rotated.stdout) as { kid: string };
    const deadline = Date.now() + 10_000;
    let published: string[] = [];
    while (Date.now() < deadline) {
      published = ((await (await fetch(`${issuer}/jwks`)).json()) as { keys: { kid: string }[] }).keys.map((key) => key.kid);
      if (published.includes(kid)) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.ok(published.includes(kid), 'the new key is published');
    assert.ok(published.includes(kids[0]!), 'the previous key stays published');
  });

  it('revokes a consent from the CLI: its tokens die and the next login asks again', async () => {
    const listed = await cli(['consents', 'list', '--json', '--data', data]);
    assert.equal(listed.code, 0, listed.stderr);
    const consents = JSON.parse(listed.stdout) as { user: string; client_id: string; resource: string }[];
    assert.deepEqual(
      consents.map((c) => [c.user, c.client_id, c.resource]),
      [[USER.username, clientId, `${issuer}/mcp`]],
    );
    const revoked = await cli(['consents', 'revoke', '--user', USER.username, '--client', clientId, '--data', data]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal((await refresh(liveRefresh)).status, 400);
    // The session is still there, so the login page is skipped, but the consent page is back.
    const { challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: CALLBACK,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 's',
    });
    const first = await browser.fetch(`/authorize?${query}`);
    assert.equal(first.status, 303);
    const page = await (await browser.fetch(first.headers.get('location')!)).text();
    assert.match(page, /name="decision" value="approve"/);
  });

  it('gives a machine client only the base scope unless --scope names more', async () => {
    const added = await cli(['clients', 'add', '--name', 'batch', '--grant-type', 'client_credentials', '--data', data]);
    assert.equal(added.code, 0, added.stderr);
    const machine = JSON.parse(added.stdout) as { client_id: string; client_secret: string; scope: string };
    assert.equal(machine.scope, 'mcp:tools');
    const token = (scope: string) =>
      fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${machine.client_id}:${machine.client_secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope }),
      });
    assert.equal((await token('mcp:tools')).status, 200);
    assert.equal(((await (await token('mcp:admin')).json()) as { error: string }).error, 'invalid_scope');
  });

  it('gives a jwt-bearer client only the base scope too, and clients list warns of a machine client with no scope list', async () => {
    const added = await cli(['clients', 'add', '--name', 'assistant', '--grant-type', 'jwt-bearer', '--data', data]);
    assert.equal(added.code, 0, added.stderr);
    assert.equal((JSON.parse(added.stdout) as { scope: string }).scope, 'mcp:tools');
    // A machine client as an earlier version's `clients add` made it: no scope list.
    const store = openSqliteStore({ path: join(data, DATABASE_FILE) });
    try {
      const metadata = validateClientMetadata(
        { client_name: 'old assistant', grant_types: [JWT_BEARER_GRANT_TYPE], token_endpoint_auth_method: 'client_secret_basic' },
        ['mcp:tools', 'mcp:admin'],
      );
      const { client } = await registerClient(store, metadata, Math.floor(Date.now() / 1000), { registeredBy: 'admin' });
      assert.equal(client.scope, null);
      const listed = await cli(['clients', 'list', '--json', '--data', data]);
      assert.equal(listed.code, 0, listed.stderr);
      assert.ok(Array.isArray(JSON.parse(listed.stdout)), 'stdout stays one JSON document');
      assert.equal(
        listed.stderr,
        `warning: client ${client.clientId} has no scope list: its client_credentials and jwt-bearer tokens are limited to the default scope (mcp:tools). To allow more, remove it and add it again with --scope.\n`,
      );
    } finally {
      await store.close();
    }
  });

  it('answers CLI mistakes with one sentence and a non-zero exit', async () => {
    const duplicate = await cli(['users', 'add', USER.username, '--data', data], 'another password\n');
    assert.equal(duplicate.code, 1);
    assert.match(duplicate.stderr, /^context-auth: A user named alice exists already\.\n$/);
    const unknown = await cli(['clients', 'remove', 'nope', '--data', data]);
    assert.equal(unknown.code, 1);
    assert.doesNotMatch(unknown.stderr, /\n\s+at /);
    const refused = await cli(['serve', '--host', '0.0.0.0', '--port', '0', '--data', data]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /Refusing plain http/);
  });
});

describe('what serve says at start and at a stop', () => {
  it('names the account page and the admin console in its banner, where they answer', async () => {
    const server = await startServe(['--port', String(await freePort()), '--data', tempDataFolder(), '--quiet']);
    try {
      const { issuer } = server;
      assert.match(server.output(), new RegExp(`\\n  account +${issuer}/account +\\(each person's approved applications, to revoke\\)\\n`));
      assert.match(server.output(), new RegExp(`\\n  admin +${issuer}/admin +\\(the console, for administrators\\)\\n`));
      for (const page of ['account', 'admin']) assert.equal((await fetch(`${issuer}/${page}`)).status, 200, page);
    } finally {
      await server.stop();
    }
  });

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`on ${signal} (${signal === 'SIGINT' ? 'Ctrl-C' : 'a service manager'}) says it is stopping, then that it stopped`, async () => {
      const server = await startServe(['--port', String(await freePort()), '--data', tempDataFolder(), '--quiet']);
      // 'close' comes once every line serve wrote has been read, after its exit.
      const closed = once(server.process, 'close');
      server.process.kill(signal);
      const [code] = (await closed) as [number];
      assert.equal(code, 0);
      // The banner's last line, then these two, the last on stdout (stderr follows: the note that there are no users).
      assert.match(
        server.output(),
        new RegExp(
          `\\(Ctrl-C to stop\\)\\nStopping \\(${signal}\\): no new connections; finishing the requests in flight, for up to 10 s…\\nStopped\\.\\nNo users yet`,
        ),
      );
    });
  }

  it('a start that fails says why in the words of its flags, and closes the store it opened', async () => {
    const data = tempDataFolder();
    const database = join(data, DATABASE_FILE);
    // On the main thread (node's own heap flags): there, a store left open at exit keeps its
    // write-ahead log, where a worker thread's end would close it.
    const onMainThread = (args: string[]) => cliWithEnv(args, { env: { NODE_OPTIONS: '--max-old-space-size=512' } });
    const taken = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const port = (taken.address() as { port: number }).port;
    try {
      const result = await onMainThread(['serve', '--port', String(port), '--data', data, '--quiet']);
      assert.equal(result.code, 1);
      assert.equal(result.stderr, `context-auth: Port ${port} on 127.0.0.1 is in use; choose another with --port.\n`);
      // The store was opened (its file made) and closed: SQLite removes its write-ahead log then.
      assert.ok(existsSync(database));
      assert.equal(existsSync(`${database}-wal`), false, 'the store was closed');
    } finally {
      taken.close();
    }

    // A client the workload rules name that exists already, and cannot take the jwt-bearer grant.
    const added = await cli(['clients', 'add', '--name', 'batch', '--grant-type', 'client_credentials', '--json', '--data', data]);
    assert.equal(added.code, 0, added.stderr);
    const { client_id: takenId } = JSON.parse(added.stdout) as { client_id: string };
    const rules = join(data, 'workloads.json');
    writeFileSync(rules, JSON.stringify([{ issuer: 'https://platform.example', subject: 'job', client: takenId, scopes: ['mcp:tools'] }]));
    const refused = await onMainThread(['serve', '--port', String(await freePort()), '--data', data, '--quiet', '--workload-config', rules]);
    assert.equal(refused.code, 1);
    assert.equal(
      refused.stderr,
      `context-auth: --workload-config: the workload client ${takenId} exists already and is not registered for the ${JWT_BEARER_GRANT_TYPE} grant; name another client in the workload rules.\n`,
    );
    assert.equal(existsSync(`${database}-wal`), false, 'the store was closed');
  });
});
