/**
 * Credentials bound to their issuer (SEP-2352): a stored grant or client registration is used only
 * with the authorization server that issued it. Real servers on loopback: a context server A whose
 * resource metadata lists whatever `listed` says, A's own authorization server (which can be
 * "down"), and a second context server B whose authorization server also issues tokens for A.
 * Every assertion is on what the servers received.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpSdkOAuthProvider } from '../../src/client/mcp-sdk.js';
import { DEFAULT_CLIENT_NAME } from '../../src/client/registration.js';
import { ContextClient } from '../../src/client/session.js';
import { FileTokenStore, MemoryTokenStore } from '../../src/client/token-store.js';
import type { StoredGrant, TokenStore } from '../../src/client/types.js';
import { clientError, person, recordingFetch, startContextServer, USER, type ContextServer, type SeenRequest } from './setup.js';
import { personGrant } from './selectors.js';
import { PERSON } from '../../src/client/grants.js';

/** Paths of A's authorization server, which answer 503 while it is down. */
const AS_PATHS = ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration', '/authorize', '/token', '/register', '/revoke'];

function inHeaders(headers: Headers, token: string): boolean {
  let found = false;
  headers.forEach((value) => (found ||= value.includes(token)));
  return found;
}

/** The requests the server received that carried `token` (form, JSON body, header or URL). */
function received(server: ContextServer, token: string): SeenRequest[] {
  return server.seen.filter(
    (r) =>
      (r.form !== undefined && r.form.toString().includes(new URLSearchParams({ t: token }).toString().slice(2))) ||
      (r.json !== undefined && JSON.stringify(r.json).includes(token)) ||
      inHeaders(r.headers, token) ||
      `${r.path}${r.search}`.includes(token),
  );
}

describe('credentials bound to their issuer (SEP-2352)', () => {
  let a: ContextServer;
  let b: ContextServer;
  /** What A's protected resource metadata lists; A's own issuer unless a test says otherwise. */
  let listed: string[] = [];
  let aDown = false;
  let aRegistrationFails = false;

  before(async () => {
    a = await startContextServer({
      routes: (app, origin, as) => {
        app.use('*', async (c, next) => {
          const path = new URL(c.req.url).pathname;
          if (aDown && AS_PATHS.some((p) => path === p || path.startsWith(`${p}/`))) return c.json({ error: 'temporarily_unavailable' }, 503);
          if (aRegistrationFails && path === '/register') return c.json({ error: 'server_error', error_description: 'registration is broken' }, 500);
          await next();
        });
        app.get('/.well-known/oauth-protected-resource/mcp', (c) =>
          c.json({
            resource: `${origin}/mcp`,
            authorization_servers: listed,
            scopes_supported: as.metadata.scopes_supported,
            bearer_methods_supported: ['header'],
          }),
        );
      },
    });
    b = await startContextServer({ extraResources: [a.serverUrl] });
  });
  after(async () => {
    await a.close();
    await b.close();
  });
  beforeEach(() => {
    listed = [a.issuer];
    aDown = false;
    aRegistrationFails = false;
  });

  function contextClient(store: TokenStore, extra: { interactive?: boolean } = {}) {
    const who = person();
    const client = new ContextClient({
      serverUrl: a.serverUrl,
      store,
      openAuthorizationUrl: who.open,
      authorizationTimeoutMs: 10_000,
      fetch: recordingFetch([]),
      ...extra,
    });
    return { client, who };
  }

  /** Marks the stored grant as expired, so the next use refreshes it. */
  async function expire(store: TokenStore, grant: StoredGrant): Promise<void> {
    await store.saveGrant({ ...(await store.getGrant(personGrant(DEFAULT_CLIENT_NAME, grant.serverUrl, grant.issuer)))!, expiresAt: 0 });
  }

  it('the reproduction: a stored grant from another issuer is never sent to the discovered server; it is dropped and a fresh login follows', async () => {
    const store = new MemoryTokenStore();
    const foreign: StoredGrant = {
      application: DEFAULT_CLIENT_NAME,
      identity: PERSON,
      serverUrl: a.serverUrl,
      issuer: b.issuer,
      resource: a.serverUrl,
      revision: 'B',
      clientId: 'client-at-b',
      accessToken: 'access-token-from-b',
      refreshToken: 'refresh-token-from-b',
      expiresAt: 0,
      updatedAt: 1,
    };
    await store.saveGrant(foreign);
    const { client, who } = contextClient(store);

    const token = await client.accessToken();

    assert.deepEqual(received(a, 'refresh-token-from-b'), [], 'A never saw B’s refresh token');
    assert.deepEqual(received(b, 'refresh-token-from-b'), [], 'nor did B: the resource does not list it');
    assert.equal(who.urls.length, 1, 'a fresh login');
    assert.equal(who.urls[0]!.origin, a.origin);
    assert.equal(await store.getGrant(personGrant(DEFAULT_CLIENT_NAME, a.serverUrl, b.issuer)), undefined, 'the foreign grant is dropped');
    const grant = await store.getGrant(personGrant(DEFAULT_CLIENT_NAME, a.serverUrl));
    assert.equal(grant?.issuer, a.issuer);
    assert.equal(grant?.accessToken, token);
  });

  it('two authorization servers listed, the first down: neither refresh token goes to the other server', async () => {
    listed = [a.issuer, b.issuer];
    const store = new MemoryTokenStore();
    const atA = await contextClient(store).client.login();
    assert.equal(atA.issuer, a.issuer);
    assert.ok(atA.refreshToken);

    // A goes down; A's grant expires. The refresh cannot happen at A, and must not happen at B.
    aDown = true;
    await expire(store, atA);
    const second = contextClient(store);
    await second.client.accessToken();
    assert.deepEqual(received(b, atA.refreshToken), [], 'B never saw A’s refresh token');
    assert.equal(second.who.urls[0]?.origin, b.origin, 'logged in at B instead');
    const atB = await store.getGrant(personGrant(DEFAULT_CLIENT_NAME, a.serverUrl, b.issuer));
    assert.ok(atB?.refreshToken);
    assert.ok(await store.getGrant(personGrant(DEFAULT_CLIENT_NAME, a.serverUrl, a.issuer)), 'A’s grant is kept for when A is back');

    // A is back (discovery now picks A first); B's grant expires: it is refreshed at B, not at A.
    aDown = false;
    await expire(store, atB);
    // B's is the grant in use (the most recent one; both logins may fall in the same second).
    await store.saveGrant({ ...(await store.getGrant(personGrant(DEFAULT_CLIENT_NAME, a.serverUrl, a.issuer)))!, updatedAt: 1 });
    const refreshesAtB = b.tokenRequests('refresh_token').length;
    const third = contextClient(store);
    const token = await third.client.accessToken();
    assert.deepEqual(received(a, atB.refreshToken!), [], 'A never saw B’s refresh token');
    assert.equal(b.tokenRequests('refresh_token').length, refreshesAtB + 1, 'refreshed at B');
    assert.equal(b.tokenRequests('refresh_token').at(-1)?.form?.get('refresh_token'), atB.refreshToken);
    assert.equal(third.who.urls.length, 0, 'no login');
    assert.equal((await store.getGrant(personGrant(DEFAULT_CLIENT_NAME, a.serverUrl, b.issuer)))?.accessToken, token);
  });

  it('the server moved to a new authorization server: the old grant is not sent to the new one, it is dropped, and login goes to the new one', async () => {
    const store = new MemoryTokenStore();
    const old = await contextClient(store).client.login();
    assert.equal(old.issuer, a.issuer);
    const refreshesAtA = a.tokenRequests('refresh_token').length;

    listed = [b.issuer];
    await expire(store, old);
    const { client, who } = contextClient(store);
    await client.accessToken();

    assert.deepEqual(received(b, old.refreshToken!), [], 'the new server never saw the old refresh token');
    assert.equal(a.tokenRequests('refresh_token').length, refreshesAtA, 'nor was it used at the old one');
    assert.equal(await store.getGrant(personGrant(DEFAULT_CLIENT_NAME, a.serverUrl, a.issuer)), undefined, 'the old grant is dropped');
    assert.equal(who.urls[0]?.origin, b.origin);
    assert.equal((await store.getGrant(personGrant(DEFAULT_CLIENT_NAME, a.serverUrl)))?.issuer, b.issuer);
  });

  it('logout revokes each grant at the server that issued it, and sends a grant whose server is no longer listed nowhere', async () => {
    listed = [a.issuer, b.issuer];
    aDown = true;
    const store = new MemoryTokenStore();
    const atB = await contextClient(store).client.login();
    assert.equal(atB.issuer, b.issuer);
    aDown = false;

    // Discovery now picks A; B's grant is revoked at B, and A never sees it.
    const revocationsAtB = b.count('POST', '/revoke');
    assert.equal((await contextClient(store).client.logout()).length, 1);
    assert.deepEqual(received(a, atB.refreshToken!), []);
    assert.equal(b.count('POST', '/revoke'), revocationsAtB + 1);
    assert.equal(
      b.seen
        .filter((r) => r.path === '/revoke')
        .at(-1)
        ?.form?.get('token'),
      atB.refreshToken,
    );

    // A grant from a server the resource no longer lists is forgotten without being sent anywhere.
    const atA = await contextClient(store).client.login();
    assert.equal(atA.issuer, a.issuer);
    listed = [b.issuer];
    const revocationsAtA = a.count('POST', '/revoke');
    assert.equal((await contextClient(store).client.logout()).length, 1);
    assert.deepEqual(received(b, atA.refreshToken!), []);
    assert.equal(a.count('POST', '/revoke'), revocationsAtA);
    assert.equal(await store.getGrant(personGrant(DEFAULT_CLIENT_NAME, a.serverUrl)), undefined);
  });

  it('invalid_client on refresh forgets the grant and the client registration, so the next run does not repeat it', async () => {
    const store = new MemoryTokenStore();
    const grant = await contextClient(store).client.login();
    const registered = await store.getClient(DEFAULT_CLIENT_NAME, a.issuer);
    assert.ok(registered);
    // The authorization server no longer knows the client we registered.
    await store.saveClient({ ...registered, clientId: 'forgotten-by-the-server' });
    await store.saveGrant({ ...grant, clientId: 'forgotten-by-the-server', expiresAt: 0 });
    const before = a.tokenRequests('refresh_token').length;

    const { client } = contextClient(store, { interactive: false });
    await assert.rejects(client.accessToken(), clientError('login_required', /invalid_client|401/));
    assert.equal(a.tokenRequests('refresh_token').length, before + 1);
    assert.equal(a.tokenRequests('refresh_token').at(-1)?.status, 401);
    assert.equal(await store.getGrant(personGrant(DEFAULT_CLIENT_NAME, a.serverUrl)), undefined, 'the grant is gone');
    assert.equal(await store.getClient(DEFAULT_CLIENT_NAME, a.issuer), undefined, 'the registration is gone');

    await assert.rejects(contextClient(store, { interactive: false }).client.accessToken(), clientError('login_required'));
    assert.equal(a.tokenRequests('refresh_token').length, before + 1, 'the dead refresh token is not presented again');

    // Interactively, the next run registers anew and logs in.
    const registrations = a.count('POST', '/register');
    await contextClient(store).client.accessToken();
    assert.equal(a.count('POST', '/register'), registrations + 1);
  });

  it('registration sends application_type "native"', async () => {
    await contextClient(new MemoryTokenStore()).client.login();
    const registration = a.seen.filter((r) => r.method === 'POST' && r.path === '/register').at(-1);
    assert.equal((registration?.json as Record<string, unknown> | undefined)?.application_type, 'native');
  });

  it('registration failing at the first of two listed authorization servers falls back to the second', async () => {
    listed = [a.issuer, b.issuer];
    aRegistrationFails = true;
    const store = new MemoryTokenStore();
    const attemptsAtA = a.count('POST', '/register');
    const { client, who } = contextClient(store);
    const grant = await client.login();

    assert.equal(a.count('POST', '/register'), attemptsAtA + 1, 'A was tried first');
    assert.equal(grant.issuer, b.issuer);
    assert.equal(who.urls[0]?.origin, b.origin);
    assert.equal(await store.getClient(DEFAULT_CLIENT_NAME, a.issuer), undefined);
    assert.equal((await store.getClient(DEFAULT_CLIENT_NAME, b.issuer))?.clientId, grant.clientId);
    const registration = b.seen.filter((r) => r.method === 'POST' && r.path === '/register').at(-1);
    assert.equal((registration?.json as Record<string, unknown> | undefined)?.application_type, 'native');
  });

  describe('McpSdkOAuthProvider sharing one credentials file', () => {
    let folder: string;
    const providers: McpSdkOAuthProvider[] = [];
    const clients: Client[] = [];
    before(async () => (folder = await mkdtemp(join(tmpdir(), 'issuer-binding-'))));
    after(async () => {
      for (const client of clients) await client.close().catch(() => undefined);
      for (const provider of providers) await provider.close();
      await rm(folder, { recursive: true, force: true });
      a.clock.offset = 0;
    });

    it('two providers (two processes’ stores) refreshing at once present the refresh token once', async () => {
      const file = join(folder, 'credentials.json');
      const grant = await contextClient(new FileTokenStore(file)).client.login();
      // The access token has expired, for the server and for the stored grant.
      a.clock.offset = 2 * 3600;
      await expire(new FileTokenStore(file), grant);
      const before = a.tokenRequests('refresh_token').length;

      const nobody = person();
      const connect = async (): Promise<Record<string, unknown>> => {
        const provider = await McpSdkOAuthProvider.create({
          serverUrl: a.serverUrl,
          store: new FileTokenStore(file),
          openAuthorizationUrl: nobody.open,
          authorizationTimeoutMs: 10_000,
        });
        providers.push(provider);
        const client = new Client({ name: 'issuer-binding', version: '0' });
        clients.push(client);
        await client.connect(new StreamableHTTPClientTransport(new URL(a.serverUrl), { authProvider: provider }));
        return (await client.callTool({ name: 'whoami', arguments: {} })).structuredContent as Record<string, unknown>;
      };
      const outcomes = await Promise.allSettled([connect(), connect()]);

      const refreshes = a.tokenRequests('refresh_token').slice(before);
      assert.deepEqual(
        refreshes.map((r) => [r.form?.get('refresh_token'), r.status]),
        [[grant.refreshToken, 200]],
        'the refresh token was presented once, and accepted',
      );
      assert.equal(nobody.urls.length, 0, 'no authorization');
      for (const outcome of outcomes) {
        assert.equal(outcome.status, 'fulfilled', outcome.status === 'rejected' ? String(outcome.reason) : '');
        if (outcome.status === 'fulfilled') assert.equal(outcome.value.subject, USER.id);
      }
    });
  });
});
