/**
 * Whose grant a ContextClient uses: the person's (the application's sign-in) or a program's (a
 * machine client with its grant), each stored apart on one store, server and authorization
 * server. A client that names an identity gets that identity's grant or a new one, never another's;
 * a program's token is renewed by its own grant, never by sending anyone to a browser; a client
 * that may not ask a person fails at once. logout revokes what it can and says what happened.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Hono } from 'hono';
import { ContextClient, type ContextClientOptions } from '../../src/client/session.js';
import { MemoryTokenStore } from '../../src/client/token-store.js';
import type { TokenStore } from '../../src/client/types.js';
import { callTool, clientError, clientFor, person, rpc, startContextServer, toolResult, USER, within, type ContextServer } from './setup.js';

/** Long enough for any answer on loopback; a client that waits for a person never gets there. */
const NO_WAIT_MS = 10_000;

const whoami = async (client: ContextClient, server: ContextServer) => toolResult(await callTool(client.fetch, server.serverUrl, 'whoami'));

describe('ContextClient: one grant per identity', () => {
  let server: ContextServer;
  let robot: { clientId: string; clientSecret?: string };
  let otherRobot: { clientId: string; clientSecret?: string };

  before(async () => {
    server = await startContextServer();
    robot = await server.addClient('client_secret_basic', ['client_credentials']);
    otherRobot = await server.addClient('client_secret_basic', ['client_credentials']);
  });
  after(() => server.close());

  const program = (store: TokenStore, who: { clientId: string; clientSecret?: string }, extra: Partial<ContextClientOptions> = {}) =>
    new ContextClient({
      serverUrl: server.serverUrl,
      store,
      grantType: 'client_credentials',
      clientId: who.clientId,
      clientSecret: who.clientSecret!,
      ...extra,
    });

  it('a program never presents the person’s stored grant, and the person never a program’s', async () => {
    const store = new MemoryTokenStore();
    const alice = person();
    const personal = clientFor(server, alice, { store });
    const personClientId = (await whoami(personal, server)).client_id;
    assert.equal((await whoami(personal, server)).subject, USER.id);

    const seen = await whoami(program(store, robot), server);
    assert.deepEqual([seen.client_id, seen.subject], [robot.clientId, robot.clientId]);
    assert.equal((await whoami(program(store, otherRobot), server)).client_id, otherRobot.clientId);

    // The newest grant for the server is a program's; the person's client still uses the person's.
    const again = await whoami(clientFor(server, alice, { store }), server);
    assert.deepEqual([again.subject, again.client_id], [USER.id, personClientId]);
    assert.equal(alice.urls.length, 1, 'one sign-in for the person, reused');
    assert.deepEqual(
      (await store.listGrants())
        .map((grant) => (grant.identity.kind === 'person' ? `person ${grant.clientId}` : `${grant.identity.grantType} ${grant.identity.clientId}`))
        .sort(),
      [`client_credentials ${otherRobot.clientId}`, `client_credentials ${robot.clientId}`, `person ${personClientId}`].sort(),
    );
  });

  it('a program is its client id: client_credentials without one is refused before anything is sent', () => {
    assert.throws(
      () => new ContextClient({ serverUrl: server.serverUrl, store: new MemoryTokenStore(), grantType: 'client_credentials', clientSecret: 'secret' }),
      clientError('registration_unavailable', /needs the clientId it authenticates as/),
    );
    assert.deepEqual(program(new MemoryTokenStore(), robot).identity, { kind: 'program', grantType: 'client_credentials', clientId: robot.clientId });
    assert.deepEqual(clientFor(server, person()).identity, { kind: 'person' });
  });

  it('a person’s grant made with another client is not the one a clientId names: the login with that client replaces it', async () => {
    const store = new MemoryTokenStore();
    const alice = person();
    const registered = clientFor(server, alice, { store });
    const first = await registered.login();
    const preRegistered = await server.addClient('none');
    const named = clientFor(server, alice, { store, clientId: preRegistered.clientId });
    assert.equal(await named.grant(), undefined, 'the stored grant is another client’s');
    assert.equal((await whoami(named, server)).client_id, preRegistered.clientId);
    assert.equal(alice.urls.length, 2);
    assert.equal(alice.urls[1]!.searchParams.get('client_id'), preRegistered.clientId);
    assert.notEqual((await registered.grant())?.accessToken, first.accessToken, 'one person’s grant per application: replaced');
  });

  it('a program’s expired token is renewed by its own grant, even where no person may be asked; nothing is registered', async () => {
    const store = new MemoryTokenStore();
    const nobody = person({ absent: true });
    const bot = program(store, robot, { interactive: false, openAuthorizationUrl: nobody.open });
    const grant = await bot.login();
    await store.saveGrant({ ...grant, expiresAt: Math.floor(Date.now() / 1000) - 5 });
    const registrations = server.count('POST', '/register');
    const requests = server.tokenRequests('client_credentials').length;
    assert.equal((await within(NO_WAIT_MS, whoami(bot, server))).client_id, robot.clientId);
    assert.equal(server.tokenRequests('client_credentials').length, requests + 1);
    assert.equal(server.count('POST', '/register'), registrations);
    assert.deepEqual(nobody.urls, []);
    assert.notEqual((await bot.grant())?.accessToken, grant.accessToken);
  });

  it('a program whose token the server refuses asks its own grant again, once', async () => {
    const store = new MemoryTokenStore();
    const bot = program(store, robot, { interactive: false });
    const grant = await bot.login();
    await store.saveGrant({ ...grant, accessToken: 'garbage' });
    const requests = server.tokenRequests('client_credentials').length;
    assert.equal((await within(NO_WAIT_MS, whoami(bot, server))).client_id, robot.clientId);
    assert.equal(server.tokenRequests('client_credentials').length, requests + 1);
  });

  it('where no person may be asked, a person’s client with nothing stored fails at once (login_required), registering nothing', async () => {
    const store = new MemoryTokenStore();
    // A program's grant for the same server is no stand-in for the person's.
    await program(store, robot).login();
    const nobody = person({ absent: true });
    const client = clientFor(server, nobody, { store, interactive: false });
    const registrations = server.count('POST', '/register');
    await assert.rejects(within(NO_WAIT_MS, client.fetch(server.serverUrl, rpc('tools/list'))), clientError('login_required', /the person/));
    assert.deepEqual(nobody.urls, []);
    assert.equal(server.count('POST', '/register'), registrations);
  });

  it('where no person may be asked, a revoked grant fails at once (login_required)', async () => {
    const store = new MemoryTokenStore();
    const alice = person();
    const grant = await clientFor(server, alice, { store }).login();
    const revoked = await fetch(`${server.issuer}/revoke`, {
      method: 'POST',
      body: new URLSearchParams({ token: grant.refreshToken!, client_id: grant.clientId }),
    });
    assert.equal(revoked.status, 200);
    // Due for a refresh, which the server now refuses.
    await store.saveGrant({ ...grant, expiresAt: Math.floor(Date.now() / 1000) - 5 });
    const client = clientFor(server, alice, { store, interactive: false });
    await assert.rejects(within(NO_WAIT_MS, client.fetch(server.serverUrl, rpc('tools/list'))), clientError('login_required'));
    assert.equal(alice.urls.length, 1, 'nobody was sent to the browser again');
  });
});

describe('ContextClient.logout: revokes the identity’s token and says what happened', () => {
  let server: ContextServer;
  let noRevocation: ContextServer;
  let robot: { clientId: string; clientSecret?: string };

  before(async () => {
    server = await startContextServer();
    robot = await server.addClient('client_secret_basic', ['client_credentials']);
    // An authorization server whose metadata names no revocation endpoint.
    noRevocation = await startContextServer({
      routes: (app: Hono, _origin, as) =>
        app.get('/.well-known/oauth-authorization-server', (c) => {
          const { revocation_endpoint: _gone, ...metadata } = as.metadata;
          return c.json(metadata);
        }),
    });
  });
  after(async () => {
    await server.close();
    await noRevocation.close();
  });

  const bearer = (token: string) =>
    fetch(server.serverUrl, { ...rpc('tools/list'), headers: { ...(rpc('tools/list').headers as Record<string, string>), authorization: `Bearer ${token}` } });

  it('a program’s grant (no refresh token): its access token is revoked, and the resource refuses it at once', async () => {
    const store = new MemoryTokenStore();
    const personal = await clientFor(server, person(), { store }).login();
    const bot = new ContextClient({
      serverUrl: server.serverUrl,
      store,
      grantType: 'client_credentials',
      clientId: robot.clientId,
      clientSecret: robot.clientSecret!,
    });
    const grant = await bot.login();
    assert.equal(grant.refreshToken, undefined);
    assert.equal((await bearer(grant.accessToken)).status, 200);

    const outcomes = await bot.logout();
    assert.deepEqual(outcomes, [
      { issuer: server.issuer, clientId: robot.clientId, token: 'access_token', outcome: 'revoked', accessTokenExpiresAt: grant.expiresAt },
    ]);
    const revocation = server.seen.filter((request) => request.path === '/revoke').at(-1)!;
    assert.equal(revocation.form?.get('token'), grant.accessToken);
    assert.equal(revocation.form?.get('token_type_hint'), 'access_token');
    assert.equal((await bearer(grant.accessToken)).status, 401, 'refused long before it expires');
    assert.ok(server.log.some((event) => event.event === 'token_revoked' && event.kind === 'access_token' && event.client_id === robot.clientId));
    assert.equal(await bot.grant(), undefined);
    assert.equal((await store.listGrants()).length, 1, 'the person’s grant stays');
    assert.equal((await bearer(personal.accessToken)).status, 200);
  });

  it('the person’s grant: its refresh token is revoked', async () => {
    const store = new MemoryTokenStore();
    const client = clientFor(server, person(), { store });
    const grant = await client.login();
    const [outcome] = await client.logout();
    assert.deepEqual([outcome?.token, outcome?.outcome], ['refresh_token', 'revoked']);
    assert.equal(
      server.seen
        .filter((request) => request.path === '/revoke')
        .at(-1)
        ?.form?.get('token'),
      grant.refreshToken,
    );
    assert.equal((await bearer(grant.accessToken)).status, 401);
  });

  it('a revocation the server refuses: failed, with its OAuth error; the grant is forgotten all the same', async () => {
    const store = new MemoryTokenStore();
    const grant = await new ContextClient({
      serverUrl: server.serverUrl,
      store,
      grantType: 'client_credentials',
      clientId: robot.clientId,
      clientSecret: robot.clientSecret!,
    }).login();
    const wrongSecret = new ContextClient({
      serverUrl: server.serverUrl,
      store,
      grantType: 'client_credentials',
      clientId: robot.clientId,
      clientSecret: 'wrong-secret',
    });
    const [outcome] = await wrongSecret.logout();
    assert.deepEqual([outcome?.outcome, outcome?.reason], ['failed', 'invalid_client (client authentication failed)']);
    assert.equal((await bearer(grant.accessToken)).status, 200, 'not revoked');
    assert.deepEqual(await store.listGrants(), []);
  });

  it('a server that offers no revocation: not_offered, and nothing is sent', async () => {
    const client = clientFor(noRevocation, person());
    await client.login();
    const [outcome] = await client.logout();
    assert.equal(outcome?.outcome, 'not_offered');
    assert.equal(noRevocation.count('POST', '/revoke'), 0);
  });

  it('nothing stored: nothing to say', async () => {
    assert.deepEqual(await clientFor(server, person()).logout(), []);
  });
});

describe('the server’s OAuth error, wherever the client meets one', () => {
  let server: ContextServer;
  let robot: { clientId: string; clientSecret?: string };
  before(async () => {
    server = await startContextServer();
    robot = await server.addClient('client_secret_basic', ['client_credentials']);
  });
  after(() => server.close());

  it('a wrong client secret at the token endpoint (401 with a Basic challenge): invalid_client and its description', async () => {
    const client = new ContextClient({
      serverUrl: server.serverUrl,
      store: new MemoryTokenStore(),
      grantType: 'client_credentials',
      clientId: robot.clientId,
      clientSecret: 'wrong-secret',
    });
    await assert.rejects(client.login(), (error: unknown) => {
      clientError('token_request_failed', /^the client credentials grant failed: invalid_client \(client authentication failed\)$/)(error);
      assert.doesNotMatch((error as Error).message, /WWW-Authenticate/);
      return true;
    });
  });

  it('a refresh with a client the server no longer accepts: invalid_client and its description', async () => {
    const store = new MemoryTokenStore();
    const preRegistered = await server.addClient('client_secret_basic');
    const client = clientFor(server, person(), { store, clientId: preRegistered.clientId, clientSecret: preRegistered.clientSecret! });
    const grant = await client.login();
    await store.saveGrant({ ...grant, expiresAt: 0 });
    const wrong = clientFor(server, person(), { store, clientId: preRegistered.clientId, clientSecret: 'wrong-secret', interactive: false });
    await assert.rejects(wrong.refresh((await wrong.grant())!), clientError('login_required', /invalid_client \(client authentication failed\)/));
  });

  it('the device authorization endpoint refusing the client (401 with a Basic challenge): invalid_client and its description', async () => {
    const device = await server.addClient('client_secret_basic', ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token']);
    const client = clientFor(server, person(), { grantType: 'device_code', clientId: device.clientId, clientSecret: 'wrong-secret' });
    await assert.rejects(client.login(), clientError('authorization_failed', /: invalid_client \(client authentication failed\)$/));
  });
});
