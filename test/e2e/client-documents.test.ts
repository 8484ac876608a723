/**
 * Against `context-auth serve`: a client that names itself by a client ID metadata document and
 * one that registers dynamically both complete the flow (our ContextClient, its loopback
 * callback, the test playing the person at our pages). The document is served on 127.0.0.1,
 * which serve accepts only behind --allow-insecure-client-documents, the switch named for tests.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ContextClient, MemoryTokenStore } from '../../src/client/index.js';
import { Browser, signInAndConsent } from '../helpers/harness.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const USER = { username: 'alice', password: 'correct horse battery staple' };

describe('serve with client ID metadata documents and dynamic registration side by side', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  let server: RunningServer;
  let documents: http.Server;
  let documentUrl: string;
  let issuer: string;
  let fetched = 0;

  before(async () => {
    documents = http.createServer((_req, res) => {
      fetched++;
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' });
      // A native client: a loopback redirect URI, whatever port it listens on (RFC 8252).
      res.end(
        JSON.stringify({
          client_id: documentUrl,
          client_name: 'Document Client',
          redirect_uris: ['http://127.0.0.1/callback'],
          grant_types: ['authorization_code', 'refresh_token'],
        }),
      );
    });
    await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
    documentUrl = `http://127.0.0.1:${(documents.address() as AddressInfo).port}/oauth/client.json`;
    const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet', '--allow-insecure-client-documents']);
    issuer = server.issuer;
  });

  after(async () => {
    await server?.stop();
    await new Promise<void>((resolve) => documents.close(() => resolve()));
  });

  async function signIn(options: { clientMetadataUrl?: string }): Promise<{ client: ContextClient; authorizationUrl: URL }> {
    const browser = new Browser((path, init) => fetch(new URL(path, issuer), init));
    let authorizationUrl: URL | undefined;
    const client = new ContextClient({
      serverUrl: `${issuer}/mcp`,
      store: new MemoryTokenStore(),
      clientName: 'Registered Client',
      authorizationTimeoutMs: 20_000,
      ...options,
      openAuthorizationUrl: async (url) => {
        authorizationUrl = new URL(url);
        const callback = await signInAndConsent(browser, await browser.fetch(authorizationUrl.pathname + authorizationUrl.search), USER, 'approve', issuer);
        await fetch(callback);
      },
    });
    await client.login();
    return { client, authorizationUrl: authorizationUrl! };
  }

  it('the metadata document client: its URL is the client_id, fetched by the server, never registered', async () => {
    const { client, authorizationUrl } = await signIn({ clientMetadataUrl: documentUrl });
    assert.equal(authorizationUrl.searchParams.get('client_id'), documentUrl);
    const response = await client.fetch(`${issuer}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(response.status, 200, await response.clone().text());
    assert.ok(fetched >= 1, 'the server fetched the document');
    const listed = await cli(['clients', 'list', '--json', '--data', data]);
    assert.ok((JSON.parse(listed.stdout) as Array<{ client_id: string }>).some((c) => c.client_id === documentUrl));
  });

  it('a client that registers dynamically, beside it', async () => {
    const { client, authorizationUrl } = await signIn({});
    assert.match(authorizationUrl.searchParams.get('client_id') ?? '', /^[0-9a-f]{32}$/);
    assert.ok(await client.accessToken());
  });
});

describe('serve: client ID metadata documents follow --registration unless --client-documents says otherwise', { timeout: 300_000 }, () => {
  let documents: http.Server;
  let base: string;
  let fetched = 0;
  const servers: RunningServer[] = [];

  before(async () => {
    documents = http.createServer((req, res) => {
      fetched++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ client_id: `${base}${req.url}`, redirect_uris: ['http://127.0.0.1/callback'] }));
    });
    await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(documents.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const server of servers) await server.stop();
    await new Promise<void>((resolve) => documents.close(() => resolve()));
  });

  async function serve(...flags: string[]): Promise<RunningServer> {
    const server = await startServe(['--port', String(await freePort()), '--data', tempDataFolder(), '--allow-insecure-client-documents', ...flags]);
    servers.push(server);
    return server;
  }

  const authorize = (issuer: string, clientId: string): Promise<Response> =>
    fetch(
      `${issuer}/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: 'http://127.0.0.1:5000/callback', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' })}`,
      { redirect: 'manual' },
    );

  it('--registration closed: a document client is unknown and its URL is never fetched', async () => {
    const server = await serve('--registration', 'closed', '--quiet');
    assert.match(server.output(), /client docs\s+off \(as registration/);
    const response = await authorize(server.issuer, `${base}/closed.json`);
    assert.equal(response.status, 400);
    assert.match(await response.text(), /not registered with this server/);
    assert.equal(fetched, 0);
  });

  it('--registration closed --client-documents on: accepted; a document that fails is one generic answer, its cause in the log', async () => {
    const server = await serve('--registration', 'closed', '--client-documents', 'on');
    assert.match(server.output(), /client docs\s+accepted; new ones 1\/min,burst=30 per address, 1\/min,burst=100 in all/);
    assert.equal((await authorize(server.issuer, `${base}/open.json`)).status, 303);
    assert.equal(fetched, 1);
    const closed = `http://127.0.0.1:${await freePort()}/gone.json`;
    const token = await fetch(`${server.issuer}/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'authorization_code', code: 'c', code_verifier: 'v', client_id: closed }),
    });
    assert.deepEqual(await token.json(), {
      error: 'invalid_client',
      error_description: 'the client ID metadata document could not be fetched or is not valid',
    });
    await server.waitForOutput(/"event":"client_document_failed"[^\n]*ECONNREFUSED/);
  });

  it('--client-documents takes on, off or follow-registration', async () => {
    const result = await cli(['serve', '--client-documents', 'yes']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--client-documents must be on, off or follow-registration/);
  });
});
