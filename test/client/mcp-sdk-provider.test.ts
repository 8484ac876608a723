/**
 * McpSdkOAuthProvider with the official MCP SDK client and its Streamable HTTP transport against a
 * Revision B server: the SDK's first connect ends in UnauthorizedError after the provider sent the
 * person to authorize; the code comes back through our loopback (state checked) and the SDK
 * redeems it; a new transport connects and calls tools. Tokens and client land in our store. Two
 * providers on one credentials file whose token the server stops taking: the SDK refreshes after
 * the 401 itself, and still no refresh token is presented twice.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpSdkOAuthProvider } from '../../src/client/mcp-sdk.js';
import { DEFAULT_CLIENT_NAME } from '../../src/client/registration.js';
import { ContextClient } from '../../src/client/session.js';
import { FileTokenStore, MemoryTokenStore } from '../../src/client/token-store.js';
import { clientError, person, recordingFetch, startContextServer, USER, type ContextServer, type Person, type SentRequest } from './setup.js';
import { personGrant } from './selectors.js';

describe('McpSdkOAuthProvider with the MCP SDK client (Revision B)', () => {
  let server: ContextServer;
  const providers: McpSdkOAuthProvider[] = [];
  const clients: Client[] = [];
  before(async () => (server = await startContextServer()));
  after(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
    for (const provider of providers) await provider.close();
    await server.close();
  });

  async function providerFor(
    who: Person,
    store = new MemoryTokenStore(),
    sent: SentRequest[] = [],
    authorizationTimeoutMs = 10_000,
  ): Promise<McpSdkOAuthProvider> {
    const provider = await McpSdkOAuthProvider.create({
      serverUrl: server.serverUrl,
      store,
      clientName: 'SDK test',
      openAuthorizationUrl: who.open,
      authorizationTimeoutMs,
      fetch: recordingFetch(sent),
    });
    providers.push(provider);
    return provider;
  }

  function sdkClient(): Client {
    const client = new Client({ name: 'sdk-provider-test', version: '0' });
    clients.push(client);
    return client;
  }

  it('connect → UnauthorizedError → the person authorizes → finishAuth → connect → tools/call whoami', async () => {
    const who = person();
    const store = new MemoryTokenStore();
    const sent: SentRequest[] = [];
    const provider = await providerFor(who, store, sent);
    const url = new URL(server.serverUrl);

    const first = sdkClient();
    const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await assert.rejects(first.connect(transport), UnauthorizedError);
    assert.equal(who.urls.length, 1, 'the provider sent the person to authorize');
    const authorization = who.urls[0]!;
    assert.equal(authorization.searchParams.get('resource'), server.serverUrl);
    assert.equal(authorization.searchParams.get('redirect_uri'), provider.redirectUrl);
    assert.ok(authorization.searchParams.get('state'));
    assert.equal(server.count('POST', '/register'), 1, 'the SDK registered a client');
    // Our discovery (handed to the SDK as discovery state) found the server.
    assert.ok(sent.some((r) => r.url.pathname === '/.well-known/oauth-protected-resource/mcp'));

    await transport.finishAuth(await provider.waitForAuthorizationCode());
    const token = server.tokenRequests('authorization_code').at(-1);
    assert.equal(token?.form?.get('resource'), server.serverUrl);

    const second = sdkClient();
    await second.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
    const result = await second.callTool({ name: 'whoami', arguments: {} });
    const identity = result.structuredContent as Record<string, unknown>;
    assert.equal(identity.subject, USER.id);
    assert.equal(identity.resource, server.serverUrl);

    // Tokens and client are in our store, shaped as ContextClient keeps them.
    const client = await store.getClient(provider.application, server.issuer);
    assert.ok(client);
    assert.equal(client.tokenEndpointAuthMethod, 'none');
    assert.deepEqual(client.redirectUris, [provider.redirectUrl]);
    const grant = await store.getGrant(personGrant(provider.application, server.serverUrl));
    assert.ok(grant);
    assert.equal(grant.issuer, server.issuer);
    assert.equal(grant.revision, 'B');
    assert.equal(grant.resource, server.serverUrl);
    assert.equal(grant.clientId, client.clientId);
    assert.equal(identity.client_id, client.clientId);
    assert.ok(grant.refreshToken);
    assert.ok(grant.expiresAt && grant.expiresAt > Date.now() / 1000);

    // A ContextClient of the same application on the same store uses what the SDK obtained: no new
    // login, no new registration. Another application finds nothing of it.
    const context = new ContextClient({ serverUrl: server.serverUrl, store, clientName: 'SDK test', interactive: false });
    assert.equal(await context.accessToken(), grant.accessToken);
    assert.equal(server.count('POST', '/register'), 1);
    const another = new ContextClient({ serverUrl: server.serverUrl, store, clientName: 'Another App', interactive: false });
    await assert.rejects(another.accessToken(), clientError('login_required'));
  });

  it('a tampered state: refused at the loopback, waitForAuthorizationCode times out, no tokens stored', async () => {
    const who = person({ tamper: (callback) => callback.searchParams.set('state', 'forged') });
    const store = new MemoryTokenStore();
    const provider = await providerFor(who, store, [], 3_000);
    const transport = new StreamableHTTPClientTransport(new URL(server.serverUrl), { authProvider: provider });
    await assert.rejects(sdkClient().connect(transport), UnauthorizedError);
    assert.deepEqual(who.answers, [400]);
    await assert.rejects(provider.waitForAuthorizationCode(), clientError('authorization_timeout'));
    assert.equal(await store.getGrant(personGrant(provider.application, server.serverUrl)), undefined);
    assert.equal(server.tokenRequests('authorization_code').length, 1, 'only the first test’s code was redeemed');
  });

  it('a foreign iss: waitForAuthorizationCode rejects with issuer_mismatch', async () => {
    const who = person({ tamper: (callback) => callback.searchParams.set('iss', 'https://evil.example') });
    const provider = await providerFor(who);
    await assert.rejects(sdkClient().connect(new StreamableHTTPClientTransport(new URL(server.serverUrl), { authProvider: provider })), UnauthorizedError);
    await assert.rejects(provider.waitForAuthorizationCode(), clientError('issuer_mismatch'));
  });

  it('the person says no: authorization_failed mentioning access_denied', async () => {
    const who = person({ decision: 'deny' });
    const provider = await providerFor(who);
    await assert.rejects(sdkClient().connect(new StreamableHTTPClientTransport(new URL(server.serverUrl), { authProvider: provider })), UnauthorizedError);
    await assert.rejects(provider.waitForAuthorizationCode(), clientError('authorization_failed', /access_denied/));
  });

  it('a grant ContextClient stored for the same application is used by the SDK without any authorization', async () => {
    const who = person();
    const store = new MemoryTokenStore();
    await new ContextClient({ serverUrl: server.serverUrl, store, clientName: 'SDK test', openAuthorizationUrl: who.open }).login();
    const nobody = person();
    const provider = await providerFor(nobody, store);
    const client = sdkClient();
    await client.connect(new StreamableHTTPClientTransport(new URL(server.serverUrl), { authProvider: provider }));
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    assert.equal((result.structuredContent as Record<string, unknown>).subject, USER.id);
    assert.equal(nobody.urls.length, 0);
  });

  it('two providers sharing one credentials file, both refused with 401: the SDK refreshes inside auth(), each refresh token presented once', async () => {
    const own = await startContextServer();
    const folder = mkdtempSync(join(tmpdir(), 'ca-sdk-refresh-'));
    const file = join(folder, 'credentials.json');
    try {
      await new ContextClient({ serverUrl: own.serverUrl, store: new FileTokenStore(file), openAuthorizationUrl: person().open }).login();
      // The server's clock passes the access token's expiry while the stored grant still looks
      // fresh: neither provider refreshes ahead, both learn it from a 401, and the SDK's auth()
      // refreshes with the refresh token the provider hands it.
      own.clock.offset += 3600;
      const nobody = person();
      const providers2 = await Promise.all(
        [1, 2].map(() =>
          McpSdkOAuthProvider.create({
            serverUrl: own.serverUrl,
            store: new FileTokenStore(file),
            openAuthorizationUrl: nobody.open,
            authorizationTimeoutMs: 10_000,
          }),
        ),
      );
      providers.push(...providers2);
      const pair = providers2.map(() => sdkClient());
      const before = own.tokenRequests('refresh_token').length;
      await Promise.all(pair.map((client, i) => client.connect(new StreamableHTTPClientTransport(new URL(own.serverUrl), { authProvider: providers2[i]! }))));

      const presented = own
        .tokenRequests('refresh_token')
        .slice(before)
        .map((r) => r.form?.get('refresh_token'));
      assert.ok(presented.length >= 1, 'the SDK refreshed');
      assert.equal(
        new Set(presented).size,
        presented.length,
        `a refresh token was presented twice: ${presented.length} refreshes, ${new Set(presented).size} tokens`,
      );
      assert.ok(own.count('POST', '/mcp') >= 4, 'both were refused first, then let in');
      for (const client of pair) {
        const result = await client.callTool({ name: 'whoami', arguments: {} });
        assert.equal((result.structuredContent as Record<string, unknown>).subject, USER.id);
      }
      assert.equal(nobody.urls.length, 0, 'nobody was sent to authorize');
      // What the file holds is alive: the grant family was not revoked as a replay.
      const stored = await new FileTokenStore(file).getGrant(personGrant(DEFAULT_CLIENT_NAME, own.serverUrl));
      assert.ok(stored?.refreshToken && !presented.includes(stored.refreshToken), 'the stored refresh token is the newest, not yet spent');
      const after = await new ContextClient({ serverUrl: own.serverUrl, store: new FileTokenStore(file), interactive: false }).refresh({
        ...stored,
        expiresAt: 0,
      });
      assert.notEqual(after.refreshToken, stored.refreshToken);
    } finally {
      await own.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
