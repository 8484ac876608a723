/**
 * `serve` driven by every host profile (src/client/hosts/profiles.ts) as that host connects:
 * discovery as the host runs it, its document or registration, its redirect URI, its
 * authorization and token parameters, a tools/list with its token, and its refresh. Documents are
 * served on 127.0.0.1 under `--allow-insecure-client-documents` (a host's real document URL
 * cannot be fetched here): the same JSON, with client_id the loopback URL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { HOST_PROFILES } from '../../src/client/hosts/profiles.js';
import { Prober } from '../../src/client/hosts/prober.js';
import { discoverAsHost } from '../../src/client/hosts/discover.js';
import { unmetCondition } from '../../src/client/hosts/requirements.js';
import { AssertionKey, DocumentHost, connectAsHost, driveHost, refreshAsHost, type DriveOptions } from './host-driver.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const PERSON = { username: 'alice', password: 'correct horse battery staple' };

describe('serve, connected to by each host profile', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  const documents = new DocumentHost();
  let server: RunningServer;
  let options: DriveOptions;

  before(async () => {
    await documents.start();
    const added = await cli(['users', 'add', PERSON.username, '--data', data], `${PERSON.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet', '--allow-insecure-client-documents']);
    options = { mcpUrl: `${server.issuer}/mcp`, person: PERSON, documents, assertionKey: await AssertionKey.create() };
  });
  after(async () => {
    await server?.stop();
    await documents.stop();
  });

  for (const profile of HOST_PROFILES.filter((p) => p.host !== 'Cursor' && p.id !== 'chatgpt-public-client')) {
    it(`${profile.host}, by ${profile.way === 'document' ? 'its client ID metadata document' : 'dynamic registration'} (${profile.id})`, async () => {
      await connectAsHost(profile, options);
    });
  }

  it('ChatGPT as a public client is the way it takes only where private_key_jwt is not listed: serve lists it, so ChatGPT signs its assertions', async () => {
    const [privateKeyJwt, publicClient] = ['chatgpt-private-key-jwt', 'chatgpt-public-client'].map((id) => HOST_PROFILES.find((p) => p.id === id)!);
    const discovery = await discoverAsHost(publicClient!, options.mcpUrl, new Prober());
    assert.equal(unmetCondition(privateKeyJwt!.when, discovery.authorizationServer!), undefined);
    assert.equal(unmetCondition(publicClient!.when, discovery.authorizationServer!), 'lists private_key_jwt in token_endpoint_auth_methods_supported');
  });
});

describe('serve --allow-redirect-scheme cursor, connected to by Cursor', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  const documents = new DocumentHost();
  let server: RunningServer;

  before(async () => {
    await documents.start();
    const added = await cli(['users', 'add', PERSON.username, '--data', data], `${PERSON.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet', '--allow-redirect-scheme', 'cursor']);
  });
  after(async () => {
    await server?.stop();
    await documents.stop();
  });

  it('Cursor registers its three redirect URIs and signs in through cursor://', async () => {
    const profile = HOST_PROFILES.find((p) => p.id === 'cursor-registration')!;
    const mcpUrl = `${server.issuer}/mcp`;
    const run = await driveHost(profile, { mcpUrl, person: PERSON, documents, assertionKey: await AssertionKey.create() });
    await refreshAsHost(profile, run, mcpUrl);
  });
});
