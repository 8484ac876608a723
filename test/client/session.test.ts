/**
 * ContextClient end to end against a real context server on a real port, in the three shapes a
 * client meets (Revision B; Revision A with metadata; Revision A without): login, what the
 * requests carry, fetch of MCP tools, where the bearer goes, registration, refresh and step-up.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_CLIENT_NAME } from '../../src/client/registration.js';
import { ContextClient } from '../../src/client/session.js';
import { FileTokenStore, MemoryTokenStore } from '../../src/client/token-store.js';
import { REVISION_A_VERSION } from '../../src/client/discovery.js';
import { hashSecret } from '../../src/core/secrets.js';
import {
  callTool,
  clientError,
  clientFor,
  MODES,
  person,
  recordingFetch,
  rpc,
  serveHandler,
  startContextServer,
  toolResult,
  USER,
  type ContextServer,
  type SeenRequest,
  type SentRequest,
  type ServedApp,
} from './setup.js';
import { personGrant } from './selectors.js';

/** Every URL a request used, client side and server side: a token must appear in none. */
function assertNotInAnyUrl(token: string, sent: SentRequest[], seen: SeenRequest[]): void {
  for (const request of sent) assert.ok(!request.url.href.includes(token), `token in ${request.url.href}`);
  for (const request of seen) assert.ok(!`${request.path}${request.search}`.includes(token), `token in ${request.path}${request.search}`);
}

for (const mode of MODES) {
  const revision = mode === 'B' ? 'B' : 'A';
  describe(`ContextClient against a ${mode === 'B' ? 'Revision B' : mode === 'A' ? 'Revision A' : 'Revision A, metadata 404'} server`, () => {
    let server: ContextServer;
    let elsewhere: ServedApp;
    const elsewhereSeen: Headers[] = [];

    before(async () => {
      elsewhere = await serveHandler((request) => {
        elsewhereSeen.push(new Headers(request.headers));
        return new Response('elsewhere');
      });
      server = await startContextServer({
        mode,
        // A same-origin page that redirects to another origin: the bearer must not follow it.
        routes: (app) => app.get('/away', (c) => c.redirect(`${elsewhere.origin}/landing`, 302)),
      });
    });
    after(async () => {
      await server.close();
      await elsewhere.close();
    });

    it(`login() saves the grant (issuer, client, revision ${revision}${revision === 'B' ? ', resource' : ', no resource'})`, async () => {
      const sent: SentRequest[] = [];
      const who = person();
      const client = clientFor(server, who, {}, sent);
      const grant = await client.login();

      assert.equal(grant.serverUrl, server.serverUrl);
      assert.equal(grant.issuer, server.issuer);
      assert.equal(grant.revision, revision);
      if (revision === 'B') assert.equal(grant.resource, server.serverUrl);
      else assert.equal(grant.resource, undefined);
      const registered = await client.store.getClient(DEFAULT_CLIENT_NAME, server.issuer);
      assert.ok(registered, 'the dynamically registered client is stored');
      assert.equal(registered.source, 'dynamic');
      assert.equal(grant.clientId, registered.clientId);
      assert.ok(grant.refreshToken);
      assert.deepEqual(await client.grant(), grant);
      assert.equal(server.count('POST', '/register'), 1);

      // The authorization request (what the person opened) and the token request.
      assert.equal(who.urls.length, 1);
      const authorization = who.urls[0]!;
      assert.equal(authorization.origin + authorization.pathname, `${server.origin}/authorize`);
      assert.equal(authorization.searchParams.get('code_challenge_method'), 'S256');
      assert.ok(authorization.searchParams.get('state'));
      const [token] = server.tokenRequests('authorization_code');
      assert.ok(token?.form, 'the server saw the token request');
      assert.ok(token.form.get('code_verifier'));
      const clientToken = sent.find((r) => r.method === 'POST' && r.url.pathname === '/token');
      assert.ok(clientToken?.body);
      if (revision === 'B') {
        assert.equal(authorization.searchParams.get('resource'), server.serverUrl);
        assert.equal(token.form.get('resource'), server.serverUrl);
        assert.equal(new URLSearchParams(clientToken.body).get('resource'), server.serverUrl);
        assert.deepEqual(
          server.log.filter((e) => e.event === 'code_issued').map((e) => e.resource),
          [server.serverUrl],
        );
      } else {
        assert.equal(authorization.searchParams.has('resource'), false);
        assert.equal(token.form.has('resource'), false);
        assert.equal(new URLSearchParams(clientToken.body).has('resource'), false);
      }

      // Discovery: Revision A asks the base URL for metadata, announcing its protocol version.
      const metadataRequests = sent.filter((r) => r.url.pathname === '/.well-known/oauth-authorization-server');
      assert.ok(metadataRequests.length >= 1);
      if (revision === 'A') {
        for (const request of metadataRequests) assert.equal(request.headers.get('context-protocol-version'), REVISION_A_VERSION);
        const seen = server.seen.filter((r) => r.path === '/.well-known/oauth-authorization-server');
        assert.ok(seen.every((r) => r.headers.get('context-protocol-version') === REVISION_A_VERSION));
        assert.equal(
          server.seen.filter((r) => r.path.startsWith('/.well-known/oauth-protected-resource')).every((r) => r.status === 404),
          true,
        );
      } else {
        assert.ok(
          sent.some((r) => r.url.pathname === '/.well-known/oauth-protected-resource/mcp'),
          'the PRM named by the 401',
        );
      }
      if (mode === 'metadata-404') {
        assert.equal(metadataRequests.length, 1);
        assert.equal(server.seen.find((r) => r.path === '/.well-known/oauth-authorization-server')?.status, 404);
      }
      assertNotInAnyUrl(grant.accessToken, sent, server.seen);
    });

    it('fetch: an MCP tools/call whoami answers with the person’s identity, the bearer on every request', async () => {
      const sent: SentRequest[] = [];
      const client = clientFor(server, person(), {}, sent);
      const before = server.seen.length;
      const identity = await toolResult(await callTool(client.fetch, server.serverUrl, 'whoami'));
      const grant = await client.grant();
      assert.ok(grant);
      assert.equal(identity.subject, USER.id);
      assert.equal(identity.client_id, grant.clientId);
      assert.deepEqual(identity.scopes, ['mcp:tools']);

      // The first MCP request went without a token (nothing stored), got 401 and was repeated with one.
      const mcp = server.seen.slice(before).filter((r) => r.path === '/mcp' && r.method === 'POST');
      const withToken = mcp.filter((r) => r.headers.get('authorization') === `Bearer ${grant.accessToken}`);
      assert.ok(withToken.length >= 2, 'initialize and tools/call both carried the token');
      const tokenless = mcp.filter((r) => !r.headers.has('authorization'));
      assert.equal(tokenless.length, 1);
      assert.equal(tokenless[0]!.status, 401);
      // Every request the client sent to the server's origin after the token existed carried it.
      const afterLogin = sent.slice(sent.findIndex((r) => r.url.pathname === '/token') + 1);
      assert.ok(afterLogin.length >= 2);
      for (const request of afterLogin) {
        if (request.url.origin === server.origin) assert.equal(request.headers.get('authorization'), `Bearer ${grant.accessToken}`);
      }
      assertNotInAnyUrl(grant.accessToken, sent, server.seen);
    });

    it('never sends the bearer to another origin, not even through a redirect', async () => {
      const client = clientFor(server, person());
      await client.login();
      elsewhereSeen.length = 0;

      const direct = await client.fetch(`${elsewhere.origin}/api`, { headers: { 'x-test': '1' } });
      assert.equal(await direct.text(), 'elsewhere');
      const redirected = await client.fetch(`${server.origin}/away`);
      assert.equal(await redirected.text(), 'elsewhere');
      const away = server.seen.filter((r) => r.path === '/away');
      assert.ok(away.at(-1)?.headers.get('authorization')?.startsWith('Bearer '), 'the same-origin request carried the token');

      assert.equal(elsewhereSeen.length, 2);
      for (const headers of elsewhereSeen) assert.equal(headers.get('authorization'), null);
      assert.equal(elsewhereSeen[0]!.get('x-test'), '1');
    });
  });
}

describe('ContextClient: registration', () => {
  let server: ContextServer;
  before(async () => (server = await startContextServer()));
  after(() => server.close());

  it('registers once per authorization server: a second client on the same store reuses it', async () => {
    const store = new MemoryTokenStore();
    const registrations = server.count('POST', '/register');
    const first = clientFor(server, person(), { store });
    await first.login();
    const second = clientFor(server, person(), { store });
    await second.login();
    const third = clientFor(server, person(), { store });
    await toolResult(await callTool(third.fetch, server.serverUrl, 'whoami'));
    assert.equal(server.count('POST', '/register') - registrations, 1);
    const grant = await store.getGrant(personGrant(DEFAULT_CLIENT_NAME, server.serverUrl));
    assert.equal(grant?.clientId, (await store.getClient(DEFAULT_CLIENT_NAME, server.issuer))?.clientId);
  });

  it('uses a pre-registered public client id without /register', async () => {
    const { clientId } = await server.addClient('none');
    const registrations = server.count('POST', '/register');
    const who = person();
    const client = clientFor(server, who, { clientId });
    const grant = await client.login();
    assert.equal(grant.clientId, clientId);
    assert.equal(who.urls[0]?.searchParams.get('client_id'), clientId);
    assert.equal(server.count('POST', '/register'), registrations);
    const token = server.tokenRequests('authorization_code').at(-1);
    assert.equal(token?.form?.get('client_id'), clientId);
    assert.equal(token?.headers.get('authorization'), null);
    assert.equal((await toolResult(await callTool(client.fetch, server.serverUrl, 'whoami'))).client_id, clientId);
  });

  it('uses a pre-registered confidential client (id and secret) without /register, authenticating at /token', async () => {
    const { clientId, clientSecret } = await server.addClient('client_secret_basic');
    assert.ok(clientSecret);
    const registrations = server.count('POST', '/register');
    const client = clientFor(server, person(), { clientId, clientSecret });
    const grant = await client.login();
    assert.equal(grant.clientId, clientId);
    assert.equal(server.count('POST', '/register'), registrations);
    const token = server.tokenRequests('authorization_code').at(-1);
    assert.match(token?.headers.get('authorization') ?? '', /^Basic /);
    assert.equal(token?.form?.has('client_secret'), false, 'the secret is not in the body');

    // The refresh authenticates the same way.
    await client.store.saveGrant({ ...grant, expiresAt: 0 });
    const refreshed = await client.accessToken();
    assert.notEqual(refreshed, grant.accessToken);
    assert.match(server.tokenRequests('refresh_token').at(-1)?.headers.get('authorization') ?? '', /^Basic /);
  });

  describe('a server without dynamic registration', () => {
    let closed: ContextServer;
    before(async () => (closed = await startContextServer({ registration: 'closed' })));
    after(() => closed.close());

    it('without a client id: registration_unavailable, and the person is never sent anywhere', async () => {
      const who = person();
      const client = clientFor(closed, who);
      await assert.rejects(client.login(), clientError('registration_unavailable', /client id/));
      assert.equal(who.urls.length, 0);
      assert.equal(closed.count('POST', '/register'), 0);
      assert.equal(await client.grant(), undefined);
    });

    it('askForClient supplies one: it is used and remembered', async () => {
      const { clientId } = await closed.addClient('none');
      const asked: string[] = [];
      const client = clientFor(closed, person(), {
        askForClient: async (issuer) => {
          asked.push(issuer);
          return { clientId };
        },
      });
      const grant = await client.login();
      assert.deepEqual(asked, [closed.issuer]);
      assert.equal(grant.clientId, clientId);
      assert.equal((await client.store.getClient(DEFAULT_CLIENT_NAME, closed.issuer))?.source, 'prompt');
      assert.equal(closed.count('POST', '/register'), 0);
    });

    it('askForClient giving nothing: registration_unavailable', async () => {
      const client = clientFor(closed, person(), { askForClient: async () => undefined });
      await assert.rejects(client.login(), clientError('registration_unavailable'));
    });
  });
});

describe('ContextClient: refresh', () => {
  let server: ContextServer;
  before(
    async () =>
      (server = await startContextServer({
        refreshTokenTtl: 3600,
        // Refuses every token as invalid.
        routes: (app) => app.all('/refuses', (c) => c.json({ error: 'invalid_token' }, 401, { 'WWW-Authenticate': 'Bearer error="invalid_token"' })),
      })),
  );
  after(() => server.close());

  /** A client logged in on its own store, with the grant's access token marked expired. */
  async function expiredClient(extra: Parameters<typeof clientFor>[2] = {}) {
    const who = person();
    const client = clientFor(server, who, extra);
    const grant = await client.login();
    await client.store.saveGrant({ ...grant, expiresAt: Math.floor(Date.now() / 1000) - 5 });
    return { client, who, grant };
  }

  it('refreshes an expired access token before using it, and saves the rotated refresh token', async () => {
    const { client, who, grant } = await expiredClient();
    const refreshes = server.tokenRequests('refresh_token').length;
    const before = server.seen.length;
    const identity = await toolResult(await callTool(client.fetch, server.serverUrl, 'whoami'));
    assert.equal(identity.subject, USER.id);
    assert.equal(server.tokenRequests('refresh_token').length - refreshes, 1);
    const refresh = server.tokenRequests('refresh_token').at(-1)!;
    assert.equal(refresh.form?.get('refresh_token'), grant.refreshToken);
    assert.equal(refresh.form?.get('resource'), server.serverUrl, 'Revision B: resource on the refresh too');

    const now = await client.grant();
    assert.ok(now?.refreshToken);
    assert.notEqual(now.accessToken, grant.accessToken);
    assert.notEqual(now.refreshToken, grant.refreshToken, 'the rotated refresh token is stored');
    assert.ok(now.expiresAt! > Date.now() / 1000 + 60);
    // No MCP request went out with the old token: the refresh came first.
    const mcp = server.seen.slice(before).filter((r) => r.path === '/mcp');
    assert.ok(mcp.every((r) => r.headers.get('authorization') === `Bearer ${now.accessToken}`));
    assert.equal(who.urls.length, 1, 'no new authorization');

    // The old refresh token is spent: once the rotated one is used, the server refuses it.
    const present = (refreshToken: string) =>
      fetch(`${server.origin}/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: grant.clientId }),
      });
    assert.equal((await present(now.refreshToken)).status, 200);
    assert.equal((await present(grant.refreshToken!)).status, 400);
  });

  it('accessToken() refreshes ahead of expiry (within the leeway)', async () => {
    const who = person();
    const client = clientFor(server, who, { refreshLeewaySeconds: 60 });
    const grant = await client.login();
    await client.store.saveGrant({ ...grant, expiresAt: Math.floor(Date.now() / 1000) + 30 });
    const token = await client.accessToken();
    assert.notEqual(token, grant.accessToken);
    assert.equal(who.urls.length, 1);
  });

  it('two concurrent fetches needing a refresh make exactly one refresh request', async () => {
    const { client } = await expiredClient();
    const refreshes = server.tokenRequests('refresh_token').length;
    const reuses = server.log.filter((e) => e.event === 'refresh_token_reused').length;
    const [a, b, c] = await Promise.all([
      client.fetch(server.serverUrl, rpc('tools/call', { name: 'whoami', arguments: {} })),
      client.fetch(server.serverUrl, rpc('tools/call', { name: 'whoami', arguments: {} })),
      client.fetch(server.serverUrl, rpc('tools/list')),
    ]);
    assert.equal((await toolResult(a)).subject, USER.id);
    assert.equal((await toolResult(b)).subject, USER.id);
    assert.equal(c.status, 200);
    await c.body?.cancel();
    assert.equal(server.tokenRequests('refresh_token').length - refreshes, 1);
    assert.equal(server.log.filter((e) => e.event === 'refresh_token_reused').length, reuses, 'no refresh token spent twice');
  });

  describe('two ContextClients sharing one FileTokenStore file', () => {
    let dir: string;
    before(async () => (dir = await mkdtemp(join(tmpdir(), 'context-auth-client-'))));
    after(() => rm(dir, { recursive: true, force: true }));

    it('refresh concurrently: exactly one refresh request, both get the new token', async () => {
      const file = join(dir, 'credentials.json');
      const who = person();
      const one = clientFor(server, who, { store: new FileTokenStore(file) });
      const grant = await one.login();
      await one.store.saveGrant({ ...grant, expiresAt: 0 });
      const two = clientFor(server, who, { store: new FileTokenStore(file) });

      const refreshes = server.tokenRequests('refresh_token').length;
      const [a, b] = await Promise.all([one.accessToken(), two.accessToken()]);
      assert.equal(a, b);
      assert.notEqual(a, grant.accessToken);
      assert.equal(server.tokenRequests('refresh_token').length - refreshes, 1);
      const stored = await new FileTokenStore(file).getGrant(personGrant(DEFAULT_CLIENT_NAME, server.serverUrl));
      assert.equal(stored?.accessToken, a);
      assert.notEqual(stored?.refreshToken, grant.refreshToken);

      // And through fetch, with the access token expired again.
      await one.store.saveGrant({ ...stored!, expiresAt: 0 });
      const before = server.tokenRequests('refresh_token').length;
      const [x, y] = await Promise.all([
        one.fetch(server.serverUrl, rpc('tools/call', { name: 'whoami', arguments: {} })),
        two.fetch(server.serverUrl, rpc('tools/call', { name: 'whoami', arguments: {} })),
      ]);
      await toolResult(x);
      await toolResult(y);
      assert.equal(server.tokenRequests('refresh_token').length - before, 1);
      assert.equal(who.urls.length, 1);
    });
  });

  it('across processes sharing the file: exactly one refresh request', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'context-auth-client-'));
    try {
      const file = join(dir, 'credentials.json');
      const who = person();
      const mine = clientFor(server, who, { store: new FileTokenStore(file) });
      const grant = await mine.login();
      await mine.store.saveGrant({ ...grant, expiresAt: 0 });
      const refreshes = server.tokenRequests('refresh_token').length;

      // Two other processes and this one, all at once: each child loads, says "ready" and waits
      // for "go" on stdin, so that the three refreshes really race.
      const script = [
        `import { ContextClient } from ${JSON.stringify(new URL('../../src/client/session.ts', import.meta.url).href)};`,
        `import { FileTokenStore } from ${JSON.stringify(new URL('../../src/client/token-store.ts', import.meta.url).href)};`,
        'const [serverUrl, file] = process.argv.slice(1);',
        'const client = new ContextClient({ serverUrl, store: new FileTokenStore(file), interactive: false });',
        "process.stderr.write('ready');",
        "await new Promise((resolve) => process.stdin.once('data', resolve));",
        'process.stdout.write(await client.accessToken());',
        'process.exit(0);',
      ].join('\n');
      const children = [0, 1].map(() => {
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, server.serverUrl, file], { stdio: 'pipe' });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
        const ready = new Promise<void>((resolve, reject) => {
          child.stderr.on('data', (chunk: Buffer) => {
            stderr += chunk.toString();
            if (stderr.includes('ready')) resolve();
          });
          child.once('exit', () => reject(new Error(`the child exited early: ${stderr}`)));
        });
        const done = new Promise<string>((resolve, reject) =>
          child.once('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`the child failed (${code}): ${stderr}`)))),
        );
        done.catch(() => undefined);
        return { child, ready, done };
      });
      await Promise.all(children.map((c) => c.ready));
      for (const { child } of children) child.stdin.end('go');
      const [a, b, c] = await Promise.all([children[0]!.done, children[1]!.done, mine.accessToken()]);
      assert.equal(a, c);
      assert.equal(b, c);
      assert.notEqual(c, grant.accessToken);
      assert.equal(server.tokenRequests('refresh_token').length - refreshes, 1);
      assert.equal(who.urls.length, 1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a revoked refresh token (invalid_grant), not interactive: the grant is deleted and login_required thrown', async () => {
    const { client: loggedIn, who, grant } = await expiredClient();
    const client = new ContextClient({ serverUrl: server.serverUrl, store: loggedIn.store, interactive: false, openAuthorizationUrl: who.open });
    const record = await server.store.getRefreshToken(hashSecret(grant.refreshToken!));
    assert.ok(record);
    await server.store.revokeGrant(record.grantId, Math.floor(Date.now() / 1000));

    await assert.rejects(client.accessToken(), clientError('login_required', /log in again/));
    assert.equal(await client.grant(), undefined, 'the dead grant is forgotten');
    assert.equal(who.urls.length, 1, 'no browser');
    // fetch says the same, and the person is never sent to the browser.
    await assert.rejects(client.fetch(server.serverUrl, rpc('tools/list')), clientError('login_required'));
    assert.equal(who.urls.length, 1);
  });

  it('an expired refresh token (invalid_grant), interactive: the grant is deleted and a new authorization runs', async () => {
    const { client, who, grant } = await expiredClient();
    server.clock.offset += 3700; // past the refresh token's lifetime (and the access token's)
    try {
      const identity = await toolResult(await callTool(client.fetch, server.serverUrl, 'whoami'));
      assert.equal(identity.subject, USER.id);
      assert.equal(who.urls.length, 2, 'exactly one new authorization');
      assert.equal(server.tokenRequests('refresh_token').at(-1)?.status, 400);
      const now = await client.grant();
      assert.ok(now);
      assert.notEqual(now.refreshToken, grant.refreshToken);
    } finally {
      server.clock.offset -= 3700;
    }
  });

  it('a dead grant, then a failed new authorization: the person is asked once and the failure reported', async () => {
    const { client: loggedIn, grant } = await expiredClient();
    const record = await server.store.getRefreshToken(hashSecret(grant.refreshToken!));
    await server.store.revokeGrant(record!.grantId, Math.floor(Date.now() / 1000));
    // (Consent is remembered, so the person cannot refuse: the answer is forged on the way instead.)
    const forged = person({ tamper: (callback) => callback.searchParams.set('iss', 'https://evil.example') });
    const client = clientFor(server, forged, { store: loggedIn.store });
    await assert.rejects(client.fetch(server.serverUrl, rpc('tools/list')), clientError('issuer_mismatch'));
    assert.equal(forged.urls.length, 1, 'one authorization, not a second one after the first failed');
    assert.equal(await client.grant(), undefined);
  });

  it('a 401 invalid_token on a request: one refresh and one retry', async () => {
    const who = person();
    const client = clientFor(server, who);
    const grant = await client.login();
    // The server's clock moves past the token's exp; the client still thinks it valid.
    server.clock.offset += 700;
    try {
      const refreshes = server.tokenRequests('refresh_token').length;
      const before = server.seen.length;
      const response = await client.fetch(server.serverUrl, rpc('tools/call', { name: 'whoami', arguments: {} }));
      assert.equal((await toolResult(response)).subject, USER.id);
      assert.equal(server.tokenRequests('refresh_token').length - refreshes, 1);
      const mcp = server.seen.slice(before).filter((r) => r.path === '/mcp');
      assert.deepEqual(
        mcp.map((r) => r.status),
        [401, 200],
      );
      assert.equal(mcp[0]!.headers.get('authorization'), `Bearer ${grant.accessToken}`);
      assert.notEqual(mcp[1]!.headers.get('authorization'), `Bearer ${grant.accessToken}`);
      assert.equal(who.urls.length, 1, 'no new authorization');
    } finally {
      server.clock.offset -= 700;
    }
  });

  it('a 401 invalid_token that persists after the refresh is returned, not retried again', async () => {
    const who = person();
    const client = clientFor(server, who);
    await client.login();
    const refreshes = server.tokenRequests('refresh_token').length;
    const response = await client.fetch(`${server.origin}/refuses`, { method: 'POST' });
    assert.equal(response.status, 401);
    await response.body?.cancel();
    assert.equal(server.tokenRequests('refresh_token').length - refreshes, 1);
    assert.equal(server.seen.filter((r) => r.path === '/refuses').length, 2);
    assert.equal(who.urls.length, 1);
  });
});

describe('ContextClient: step-up', () => {
  let server: ContextServer;
  before(
    async () =>
      (server = await startContextServer({
        // Refuses every request for insufficient scope, asking for what it granted.
        routes: (app) =>
          app.all('/stubborn', (c) =>
            c.json({ error: 'insufficient_scope' }, 403, { 'WWW-Authenticate': 'Bearer error="insufficient_scope", scope="mcp:tools mcp:admin"' }),
          ),
      })),
  );
  after(() => server.close());

  it('403 insufficient_scope: a new authorization for the union of scopes, then the call is retried and succeeds', async () => {
    const who = person();
    const client = clientFor(server, who);
    await toolResult(await callTool(client.fetch, server.serverUrl, 'whoami'));
    assert.equal((await client.grant())?.scope, 'mcp:tools');
    assert.equal(who.urls.length, 1);

    const before = server.seen.length;
    const report = await toolResult(await client.fetch(server.serverUrl, rpc('tools/call', { name: 'admin_report', arguments: {} })));
    assert.equal(typeof report.uptime_seconds, 'number');
    assert.equal(who.urls.length, 2);
    assert.deepEqual(who.urls[1]!.searchParams.get('scope')?.split(' ').sort(), ['mcp:admin', 'mcp:tools']);
    assert.equal(who.urls[1]!.searchParams.get('resource'), server.serverUrl);
    assert.deepEqual(
      server.seen
        .slice(before)
        .filter((r) => r.path === '/mcp')
        .map((r) => r.status),
      [403, 200],
    );
    assert.deepEqual((await client.grant())?.scope?.split(' ').sort(), ['mcp:admin', 'mcp:tools']);

    // Now held: no further authorization.
    await toolResult(await client.fetch(server.serverUrl, rpc('tools/call', { name: 'admin_report', arguments: {} })));
    assert.equal(who.urls.length, 2);
  });

  it('not interactive: the 403 is returned as it is', async () => {
    const who = person();
    const client = clientFor(server, who);
    await client.login();
    const quiet = new ContextClient({ serverUrl: server.serverUrl, store: client.store, interactive: false, fetch: recordingFetch([]) });
    const response = await quiet.fetch(server.serverUrl, rpc('tools/call', { name: 'admin_report', arguments: {} }));
    assert.equal(response.status, 403);
    await response.body?.cancel();
    assert.equal(who.urls.length, 1);
  });

  it('a server that keeps answering 403 for scopes already held does not loop', async () => {
    const who = person();
    const client = clientFor(server, who);
    await client.login();
    assert.equal(who.urls.length, 1);

    // Held: mcp:tools; asked: mcp:tools mcp:admin → one step-up, then the (still) 403 comes back.
    const first = await client.fetch(`${server.origin}/stubborn`, { method: 'POST' });
    assert.equal(first.status, 403);
    await first.body?.cancel();
    assert.equal(who.urls.length, 2);
    // Everything asked for is held now: no more authorizations, however often it refuses.
    for (let i = 0; i < 3; i++) {
      const again = await client.fetch(`${server.origin}/stubborn`, { method: 'POST' });
      assert.equal(again.status, 403);
      await again.body?.cancel();
    }
    assert.equal(who.urls.length, 2);
  });
});

describe('ContextClient: applications sharing a store', () => {
  let server: ContextServer;
  before(async () => (server = await startContextServer()));
  after(() => server.close());

  it('files its registrations and tokens under applicationId, else clientMetadataUrl, else clientName', () => {
    const serverUrl = 'https://context.example/mcp';
    assert.equal(new ContextClient({ serverUrl }).application, DEFAULT_CLIENT_NAME);
    assert.equal(new ContextClient({ serverUrl, clientName: 'My App' }).application, 'My App');
    assert.equal(
      new ContextClient({ serverUrl, clientName: 'My App', clientMetadataUrl: 'https://app.example/client.json' }).application,
      'https://app.example/client.json',
    );
    assert.equal(new ContextClient({ serverUrl, clientName: 'My App', applicationId: 'com.example.app' }).application, 'com.example.app');
    assert.throws(() => new ContextClient({ serverUrl, applicationId: ' ' }), clientError('registration_unavailable', /application id/));
  });

  it('a second application on the store registers as itself and gets its own tokens; the first keeps its own', async () => {
    const store = new MemoryTokenStore();
    const registrations = server.count('POST', '/register');
    const first = clientFor(server, person(), { store, clientName: 'First App' });
    const firstGrant = await first.login();
    const who = person();
    const second = clientFor(server, who, { store, clientName: 'Second App' });
    assert.equal(await second.grant(), undefined, 'the first application’s grant is not the second’s');
    const secondGrant = await second.login();
    assert.equal(server.count('POST', '/register') - registrations, 2);
    const registered = server.seen
      .filter((r) => r.method === 'POST' && r.path === '/register')
      .slice(-2)
      .map((r) => (r.json as { client_name: string }).client_name);
    assert.deepEqual(registered, ['First App', 'Second App']);
    assert.notEqual(secondGrant.clientId, firstGrant.clientId);
    assert.equal(who.urls[0]!.searchParams.get('client_id'), secondGrant.clientId);
    assert.equal((await first.grant())?.accessToken, firstGrant.accessToken);
    assert.equal((await store.getClient('Second App', server.issuer))?.clientId, secondGrant.clientId);
  });
});
