/**
 * startAuthorizationServer on a real SQLite store and a real Node listener on loopback: it
 * serves once started (its signing key made, its issuer the URL it listens at), and its stop goes
 * in order: no new connections, the request in flight answered, the audit events that request
 * left written, and the store closed last. A start that fails undoes what it started (the
 * listener, the store); a stop runs every step even after one failed and reports each once;
 * `await using` stops it at the end of its scope. The store is observed by wrapping its own
 * methods (recording each call, then calling it).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Hono } from 'hono';
import { startAuthorizationServer, StartError, type StartAuthorizationServerOptions } from '../../../src/authorization-server/index.js';
import { registerClient } from '../../../src/authorization-server/clients.js';
import { validateClientMetadata } from '../../../src/authorization-server/checks/client-metadata.js';
import { generateSecretKey, parseSecretKeys, SecretBox } from '../../../src/core/secret-box.js';
import { openSqliteStore } from '../../../src/store/sqlite.js';
import type { FullStore } from '../../../src/store/store.js';

const folders: string[] = [];
after(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A new SQLite file. */
function databasePath(): string {
  const folder = mkdtempSync(join(tmpdir(), 'ca-start-'));
  folders.push(folder);
  return join(folder, 'context-auth.db');
}

/** The store, its calls that matter to the stop written to `order` before each is made. */
function observed(store: FullStore, order: string[], overrides: Partial<FullStore> = {}): FullStore {
  return {
    ...store,
    recordAuditEvents: async (events) => {
      order.push(`audit events written: ${events.map((event) => event.event).join(', ')}`);
      return store.recordAuditEvents(events);
    },
    close: async () => {
      order.push('store closed');
      return store.close();
    },
    ...overrides,
  };
}

function options(store: FullStore, extra: Partial<StartAuthorizationServerOptions> = {}): StartAuthorizationServerOptions {
  return { store, resources: (issuer) => [`${issuer}/mcp`], listen: { port: 0 }, auditEvents: true, ...extra };
}

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/** Whether a connection to the port is refused (nothing listens). */
async function refused(port: number): Promise<boolean> {
  const socket = net.connect(port, '127.0.0.1');
  // once(socket, 'connect') rejects on 'error': the error is the outcome looked for.
  const outcome = await once(socket, 'connect').then(
    () => 'accepted',
    (error: NodeJS.ErrnoException) => error.code,
  );
  socket.destroy();
  return outcome === 'ECONNREFUSED';
}

const REGISTRATION = JSON.stringify({ client_name: 'in flight', redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'none' });

/**
 * A registration whose head is sent at once and whose body waits for `finish()`: a request in
 * flight, from a client that would keep its connection open for more.
 */
function registrationInFlight(url: string) {
  const agent = new http.Agent({ keepAlive: true });
  const request = http.request(`${url}/register`, {
    method: 'POST',
    agent,
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(REGISTRATION) },
  });
  const answered = once(request, 'response').then(async ([response]: http.IncomingMessage[]) => {
    let text = '';
    for await (const chunk of response!) text += chunk;
    agent.destroy();
    return { status: response!.statusCode, connection: response!.headers.connection, text };
  });
  request.flushHeaders();
  request.write(REGISTRATION.slice(0, 10));
  return { request, answered, finish: () => request.end(REGISTRATION.slice(10)) };
}

describe('startAuthorizationServer', { timeout: 300_000 }, () => {
  it('serves once started: its issuer is the URL it listens at, its signing key made before any request', async () => {
    const path = databasePath();
    const store = openSqliteStore({ path });
    const running = await startAuthorizationServer(options(store));
    try {
      assert.match(running.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(running.metadata.issuer, running.url);
      assert.equal((await store.listSigningKeys()).length, 1, 'the key is there before the first request');
      const metadata = (await (await fetch(`${running.url}/.well-known/oauth-authorization-server`)).json()) as { issuer: string };
      assert.equal(metadata.issuer, running.url);
      assert.equal(running.httpServer.listening, true);
    } finally {
      await running.close();
    }
  });

  it('serves the app it is given, which mounts the server beside routes of its own', async () => {
    await using running = await startAuthorizationServer(
      options(openSqliteStore({ path: databasePath() }), {
        app: (server) => new Hono().get('/hello', (c) => c.text(`hello from ${server.metadata.issuer}`)).route('/', server.app),
      }),
    );
    assert.equal(await (await fetch(`${running.url}/hello`)).text(), `hello from ${running.url}`);
    assert.equal((await fetch(`${running.url}/jwks`)).status, 200);
  });

  it('listens first, answering 503 until it is ready; an identity provider it cannot reach is a warning, not a failure', async (t) => {
    const warnings: string[] = [];
    t.mock.method(console, 'warn', (message: string) => warnings.push(message));
    // The provider answers its discovery request when the test releases it, with an error.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const provider = http.createServer((_request, response) => void released.then(() => response.writeHead(503).end()));
    provider.listen(0, '127.0.0.1');
    await once(provider, 'listening');
    const providerUrl = `http://127.0.0.1:${(provider.address() as net.AddressInfo).port}`;
    const discovery = once(provider, 'request');
    const port = await freePort();
    const upstream = {
      providers: [{ kind: 'oidc' as const, id: 'corp', issuer: providerUrl, clientId: 'ours', clientSecret: 'a secret of ours' }],
      secretBox: new SecretBox(parseSecretKeys(generateSecretKey(), 'test')),
      allowLoopbackHttp: true,
    };
    const starting = startAuthorizationServer(options(openSqliteStore({ path: databasePath() }), { listen: { port }, upstream }));
    try {
      await discovery;
      const early = await fetch(`http://127.0.0.1:${port}/jwks`);
      assert.equal(early.status, 503);
      assert.equal(await early.text(), 'starting');
      release();
      await using running = await starting;
      assert.equal((await fetch(`${running.url}/jwks`)).status, 200);
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0]!, new RegExp(`^warning: .*${providerUrl.replace(/[.]/g, '\\.')}`));
    } finally {
      release();
      provider.close();
    }
  });

  it('stops in order: no new connections, the request in flight answered, its audit event written, then the store closed', async () => {
    const order: string[] = [];
    const running = await startAuthorizationServer(options(observed(openSqliteStore({ path: databasePath() }), order)));
    running.httpServer.on('request', (_request: http.IncomingMessage, response: http.ServerResponse) =>
      response.once('finish', () => order.push('request answered')),
    );
    const port = Number(new URL(running.url).port);
    const inFlight = registrationInFlight(running.url);
    await once(running.httpServer, 'request');

    const stopped = running.close().then(() => order.push('stopped'));
    assert.equal(await refused(port), true, 'no new connection once stopping');
    inFlight.finish();
    const answer = await inFlight.answered;
    assert.equal(answer.status, 201, answer.text);
    assert.equal(answer.connection, 'close', 'the answer ends its connection');
    await stopped;
    assert.deepEqual(order, ['request answered', 'audit events written: client_registered', 'store closed', 'stopped']);
  });

  it('cuts off a request still unfinished after listen.drainMs, then closes the store', async () => {
    const order: string[] = [];
    const running = await startAuthorizationServer(options(observed(openSqliteStore({ path: databasePath() }), order), { listen: { port: 0, drainMs: 100 } }));
    const inFlight = registrationInFlight(running.url);
    await once(running.httpServer, 'request');
    await running.close();
    await assert.rejects(inFlight.answered, { code: 'ECONNRESET', message: 'socket hang up' });
    assert.deepEqual(order, ['store closed']);
  });

  it('`await using` stops it at the end of the scope', async () => {
    const order: string[] = [];
    let url: string;
    {
      await using running = await startAuthorizationServer(options(observed(openSqliteStore({ path: databasePath() }), order)));
      url = running.url;
      assert.equal((await fetch(`${url}/jwks`)).status, 200);
      assert.deepEqual(order, []);
    }
    assert.deepEqual(order, ['store closed']);
    assert.equal(await refused(Number(new URL(url).port)), true);
  });

  it('a start that fails undoes what it started: the listener and the store', async () => {
    const path = databasePath();
    const setup = openSqliteStore({ path });
    const metadata = validateClientMetadata(
      { client_name: 'billing', grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic' },
      ['mcp:tools'],
    );
    const { client } = await registerClient(setup, metadata, Math.floor(Date.now() / 1000), { registeredBy: 'admin' });
    await setup.close();

    const order: string[] = [];
    const port = await freePort();
    const workloads = [{ issuer: 'https://platform.example', subject: 'job', client: client.clientId, scopes: ['mcp:tools'] }];
    const failed = startAuthorizationServer(options(observed(openSqliteStore({ path }), order), { listen: { port }, workloads }));
    await assert.rejects(failed, (error: unknown) => {
      assert.ok(error instanceof StartError);
      assert.equal(error.step, 'workload-clients');
      assert.match(
        error.message,
        new RegExp(
          `^the workload clients: the workload client ${client.clientId} exists already and is not registered for the urn:ietf:params:oauth:grant-type:jwt-bearer grant`,
        ),
      );
      assert.deepEqual(error.undoErrors, []);
      return true;
    });
    assert.deepEqual(order, ['store closed']);
    assert.equal(await refused(port), true, 'the listener is closed');
  });

  it('a start that cannot listen closes the store it was given', async () => {
    const taken = net.createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const { port } = taken.address() as net.AddressInfo;
    try {
      const order: string[] = [];
      await assert.rejects(
        startAuthorizationServer(options(observed(openSqliteStore({ path: databasePath() }), order), { listen: { port } })),
        (error: unknown) => {
          assert.ok(error instanceof StartError);
          assert.equal(error.step, 'listen');
          assert.equal((error.cause as NodeJS.ErrnoException).code, 'EADDRINUSE');
          return true;
        },
      );
      assert.deepEqual(order, ['store closed']);
    } finally {
      taken.close();
    }
  });

  it('a stop runs every step even after one failed, and reports each failure once', async () => {
    const order: string[] = [];
    const store = openSqliteStore({ path: databasePath() });
    const failing = observed(store, order, {
      // A revocation listener whose connection is gone, and a store that fails as it closes.
      watchRevocations: async () => async () => {
        order.push('revocation feed stopped');
        throw new Error('the listener connection is gone');
      },
      close: async () => {
        order.push('store closed');
        await store.close();
        throw new Error('the disk is gone');
      },
    });
    const running = await startAuthorizationServer(options(failing));
    const registered = await fetch(`${running.url}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: REGISTRATION });
    assert.equal(registered.status, 201);

    const stop = running.close();
    assert.equal(running.close(), stop, 'a second close() is the same stop');
    await assert.rejects(stop, (error: unknown) => {
      assert.ok(error instanceof AggregateError);
      assert.deepEqual(
        error.errors.map((e: Error) => e.message),
        ['revocation feed: the listener connection is gone', 'store: the disk is gone'],
      );
      assert.equal(error.message, 'stopping the authorization server: revocation feed: the listener connection is gone; store: the disk is gone');
      return true;
    });
    assert.deepEqual(order, ['revocation feed stopped', 'audit events written: client_registered', 'store closed']);
  });
});
