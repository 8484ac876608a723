/**
 * What the client refuses, each with its ClientError code and nothing stored: forged or foreign
 * authorization responses, metadata about another server or issuer, servers with nothing to
 * offer, insecure URLs, a person who never comes back or says no.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Hono } from 'hono';
import { ContextClient } from '../../src/client/session.js';
import { MemoryTokenStore } from '../../src/client/token-store.js';
import {
  clientError,
  clientFor,
  person,
  recordingFetch,
  serveHandler,
  startContextServer,
  within,
  type ContextServer,
  type SentRequest,
  type ServedApp,
} from './setup.js';

/** Whether anything still listens on the port of `url`. */
function isListening(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('forged or foreign authorization responses', () => {
  let server: ContextServer;
  before(async () => (server = await startContextServer()));
  after(() => server.close());

  it('a tampered state: refused at the callback, the sign-in waits on until stopped; the code is not redeemed, nothing stored', async () => {
    // Stopped once the tampered callback was answered: a sign-in that ended there would not see the stop.
    const stop = new AbortController();
    const who = person({ tamper: (callback) => callback.searchParams.set('state', 'forged-state'), delivered: () => stop.abort() });
    const client = clientFor(server, who);
    const exchanges = server.tokenRequests('authorization_code').length;
    await assert.rejects(client.login({ signal: stop.signal }), clientError('authorization_aborted'));
    assert.deepEqual(who.answers, [400]);
    assert.equal(await client.grant(), undefined);
    assert.deepEqual(await client.store.listGrants(), []);
    assert.equal(server.tokenRequests('authorization_code').length, exchanges, 'the code was never sent to /token');
    assert.equal(await isListening(who.callbacks[0]!.href), false);
  });

  it('a missing state: refused at the callback, the sign-in waits on until stopped', async () => {
    const stop = new AbortController();
    const who = person({ tamper: (callback) => callback.searchParams.delete('state'), delivered: () => stop.abort() });
    const client = clientFor(server, who);
    await assert.rejects(client.login({ signal: stop.signal }), clientError('authorization_aborted'));
    assert.deepEqual(who.answers, [400]);
    assert.equal(await client.grant(), undefined);
  });

  it('forged callbacks sent before the real one (an error, a code with a wrong state) do not end the sign-in', async () => {
    const forged = (callback: URL): URL[] => {
      const error = new URL(callback.origin + callback.pathname);
      error.searchParams.set('error', 'x');
      const code = new URL(callback);
      code.searchParams.set('code', 'forged-code');
      code.searchParams.set('state', 'wrong');
      return [error, code];
    };
    const who = person({ forged });
    const client = clientFor(server, who);
    const grant = await client.login();
    assert.deepEqual(who.answers, [400, 400, 200]);
    assert.deepEqual(await client.grant(), grant);
  });

  it('a foreign iss: issuer_mismatch, nothing stored', async () => {
    const who = person({ tamper: (callback) => callback.searchParams.set('iss', 'https://evil.example') });
    const client = clientFor(server, who);
    await assert.rejects(client.login(), clientError('issuer_mismatch'));
    assert.equal(await client.grant(), undefined);
    assert.equal(who.callbacks[0]!.searchParams.get('iss'), 'https://evil.example');
  });

  it('a missing iss where the server promises one (RFC 9207): issuer_mismatch', async () => {
    const client = clientFor(server, person({ tamper: (callback) => callback.searchParams.delete('iss') }));
    await assert.rejects(client.login(), clientError('issuer_mismatch'));
  });

  it('a forged code: token_request_failed naming invalid_grant, nothing stored', async () => {
    const client = clientFor(server, person({ tamper: (callback) => callback.searchParams.set('code', 'forged-code') }));
    await assert.rejects(client.login(), clientError('token_request_failed', /invalid_grant/));
    assert.equal(await client.grant(), undefined);
  });

  it('the person says no: authorization_failed saying so, and nothing about exchanging a code', async () => {
    const who = person({ decision: 'deny' });
    const progress: string[] = [];
    const client = clientFor(server, who, { onProgress: (line) => progress.push(line) });
    await assert.rejects(client.login(), clientError('authorization_failed', /^you denied access in the browser \(access_denied/));
    assert.ok(
      progress.some((line) => line.startsWith('Waiting for the browser')),
      progress.join('\n'),
    );
    assert.ok(!progress.some((line) => /exchang/i.test(line)), progress.join('\n'));
    assert.equal(who.callbacks[0]!.searchParams.get('error'), 'access_denied');
    assert.equal(await client.grant(), undefined);
  });

  it('the person never comes back: authorization_timeout, and the callback stops listening', async () => {
    const who = person({ absent: true });
    const client = clientFor(server, who, { authorizationTimeoutMs: 300 });
    const started = Date.now();
    await assert.rejects(within(5_000, client.login()), clientError('authorization_timeout'));
    assert.ok(Date.now() - started < 3_000);
    const redirectUri = who.urls[0]!.searchParams.get('redirect_uri')!;
    assert.equal(await isListening(redirectUri), false);
    assert.equal(await client.grant(), undefined);
  });
});

describe('metadata about something else', () => {
  const servers: ContextServer[] = [];
  after(async () => {
    for (const server of servers) await server.close();
  });
  async function start(...args: Parameters<typeof startContextServer>): Promise<ContextServer> {
    const server = await startContextServer(...args);
    servers.push(server);
    return server;
  }

  it('protected resource metadata whose resource is another server: metadata_mismatch, nobody asked to log in', async () => {
    const server = await start({
      routes: (app, origin) =>
        app.get('/.well-known/oauth-protected-resource/mcp', (c) => c.json({ resource: 'https://other.example/mcp', authorization_servers: [origin] })),
    });
    const who = person();
    const sent: SentRequest[] = [];
    await assert.rejects(clientFor(server, who, {}, sent).login(), clientError('metadata_mismatch', /other\.example/));
    assert.equal(who.urls.length, 0);
    assert.equal(server.count('POST', '/register'), 0);
  });

  it('protected resource metadata for a sibling path on the same origin: metadata_mismatch', async () => {
    const server = await start({
      routes: (app, origin) =>
        app.get('/.well-known/oauth-protected-resource/mcp', (c) => c.json({ resource: `${origin}/mcp-other`, authorization_servers: [origin] })),
    });
    await assert.rejects(clientFor(server, person()).login(), clientError('metadata_mismatch'));
  });

  it('Revision B: authorization server metadata naming another issuer: metadata_mismatch', async () => {
    const server = await start({
      routes: (app, _origin, as) => app.get('/.well-known/oauth-authorization-server', (c) => c.json({ ...as.metadata, issuer: 'https://evil.example' })),
    });
    const who = person();
    await assert.rejects(clientFor(server, who).login(), clientError('metadata_mismatch', /evil\.example/));
    assert.equal(who.urls.length, 0);
  });

  it('Revision A: base URL metadata naming an issuer on another origin: metadata_mismatch', async () => {
    const server = await start({
      mode: 'A',
      routes: (app) =>
        app.get('/.well-known/oauth-authorization-server', (c) =>
          c.json({
            issuer: 'https://evil.example',
            authorization_endpoint: 'https://evil.example/authorize',
            token_endpoint: 'https://evil.example/token',
            registration_endpoint: 'https://evil.example/register',
          }),
        ),
    });
    const who = person();
    await assert.rejects(clientFor(server, who).login(), clientError('metadata_mismatch', /evil\.example/));
    assert.equal(who.urls.length, 0);
  });

  it('a resource naming an http authorization server off this machine: insecure_url, never contacted', async () => {
    const server = await start({
      routes: (app, origin) =>
        app.get('/.well-known/oauth-protected-resource/mcp', (c) => c.json({ resource: `${origin}/mcp`, authorization_servers: ['http://auth.example'] })),
    });
    const sent: SentRequest[] = [];
    await assert.rejects(clientFor(server, person(), {}, sent).login(), clientError('insecure_url', /auth\.example/));
    assert.ok(sent.every((r) => r.url.hostname === '127.0.0.1'));
  });

  it('a 401 pointing at http resource metadata off this machine: insecure_url, never contacted', async () => {
    const server = await start({
      routes: (app) =>
        app.post('/mcp', (c) => c.json({ error: 'unauthorized' }, 401, { 'WWW-Authenticate': 'Bearer resource_metadata="http://evil.example/prm"' })),
    });
    const sent: SentRequest[] = [];
    await assert.rejects(clientFor(server, person(), {}, sent).login(), clientError('insecure_url', /evil\.example/));
    assert.ok(sent.every((r) => r.url.hostname === '127.0.0.1'));
  });
});

describe('a server with nothing to offer', () => {
  let bare: ServedApp;
  const seen: string[] = [];
  before(async () => {
    // 401 without any challenge parameters on /mcp, 404 everywhere else: no resource metadata,
    // no authorization server metadata, no /authorize, /token or /register.
    const app = new Hono();
    app.use('*', async (c, next) => {
      seen.push(`${c.req.method} ${new URL(c.req.url).pathname}`);
      await next();
    });
    app.all('/mcp', (c) => c.json({ error: 'unauthorized' }, 401, { 'WWW-Authenticate': 'Bearer' }));
    app.notFound((c) => c.json({ error: 'not_found' }, 404));
    bare = await serveHandler((request) => app.fetch(request));
  });
  after(() => bare.close());

  it('every discovery URL 404 and the default endpoints missing: a ClientError, promptly, the person never sent anywhere', async () => {
    const who = person();
    const client = new ContextClient({
      serverUrl: `${bare.origin}/mcp`,
      store: new MemoryTokenStore(),
      openAuthorizationUrl: who.open,
      authorizationTimeoutMs: 10_000,
    });
    const error = await within(5_000, client.login()).then(
      () => assert.fail('login succeeded'),
      (e: unknown) => e,
    );
    assert.ok(clientError('registration_failed', /\/register/)(error));
    assert.match((error as Error).message, /not_found|404/);
    assert.equal(who.urls.length, 0);
    assert.ok(seen.includes('GET /.well-known/oauth-protected-resource/mcp'));
    assert.ok(seen.includes('GET /.well-known/oauth-protected-resource'));
    assert.ok(seen.includes('GET /.well-known/oauth-authorization-server'));
    assert.ok(seen.includes('POST /register'));
  });

  it('fetch through it reports the same error rather than hanging or answering 401', async () => {
    const client = new ContextClient({ serverUrl: `${bare.origin}/mcp`, store: new MemoryTokenStore(), openAuthorizationUrl: person().open });
    await assert.rejects(within(5_000, client.fetch(`${bare.origin}/mcp`, { method: 'POST', body: '{}' })), clientError('registration_failed'));
  });

  it('a metadata endpoint that fails (500): discovery_failed, not the default paths', async () => {
    const failing = await serveHandler((request) => {
      const path = new URL(request.url).pathname;
      if (path === '/.well-known/oauth-authorization-server') return new Response('boom', { status: 500 });
      if (path === '/mcp') return new Response('{}', { status: 401, headers: { 'WWW-Authenticate': 'Bearer' } });
      return new Response('not found', { status: 404 });
    });
    try {
      const client = new ContextClient({ serverUrl: `${failing.origin}/mcp`, store: new MemoryTokenStore(), openAuthorizationUrl: person().open });
      await assert.rejects(within(5_000, client.login()), clientError('discovery_failed', /500/));
    } finally {
      await failing.close();
    }
  });

  it('a server that is not running: discovery_failed', async () => {
    const gone = await serveHandler(() => new Response('bye'));
    await gone.close();
    const client = new ContextClient({ serverUrl: `${gone.origin}/mcp`, store: new MemoryTokenStore(), openAuthorizationUrl: person().open });
    await assert.rejects(within(5_000, client.login()), clientError('discovery_failed', /cannot reach/));
  });
});

describe('insecure URLs', () => {
  it('an http server URL off this machine: insecure_url, and no request is made', async () => {
    const sent: SentRequest[] = [];
    const who = person();
    const client = new ContextClient({
      serverUrl: 'http://mcp.example.com/mcp',
      store: new MemoryTokenStore(),
      openAuthorizationUrl: who.open,
      fetch: recordingFetch(sent),
    });
    await assert.rejects(client.login(), clientError('insecure_url', /mcp\.example\.com/));
    await assert.rejects(client.discover(), clientError('insecure_url'));
    assert.deepEqual(sent, []);
    assert.equal(who.urls.length, 0);
  });

  it('http on a loopback address is allowed (development servers)', async () => {
    for (const url of ['http://127.0.0.1:1/mcp', 'http://localhost:1/mcp', 'http://[::1]:1/mcp']) {
      const client = new ContextClient({ serverUrl: url, store: new MemoryTokenStore(), openAuthorizationUrl: person().open });
      // Nothing listens there: the failure is reaching it, not its scheme.
      await assert.rejects(within(5_000, client.discover()), clientError('discovery_failed'));
    }
  });
});
