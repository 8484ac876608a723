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
import type { HostProfile } from '../../src/client/hosts/types.js';
import { AssertionKey, assertToolsList, DocumentHost, driveHost, type DriveOptions, type Tokens } from './host-driver.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const PERSON = { username: 'alice', password: 'correct horse battery staple' };

/** Runs the profile's refresh as the host does: alone, or from several sessions at once with the same refresh token. */
async function refreshAsHost(profile: HostProfile, run: Awaited<ReturnType<typeof driveHost>>, mcpUrl: string): Promise<void> {
  const { tokens } = run;
  assert.ok(tokens.refresh_token, `${profile.id}: no refresh token`);
  if (profile.refresh.earlySeconds !== undefined) {
    // A token shorter-lived than the host's margin would be refreshed before every request.
    assert.ok(
      (tokens.expires_in ?? 0) > profile.refresh.earlySeconds,
      `${profile.id} refreshes ${profile.refresh.earlySeconds} s early; tokens live ${tokens.expires_in} s`,
    );
  }
  const sessions = profile.refresh.concurrentSessions ?? 1;
  const answers = await Promise.all(Array.from({ length: sessions }, () => run.refresh(tokens.refresh_token!, tokens.scope)));
  const refreshed: Tokens[] = [];
  for (const answer of answers) {
    const body = (await answer.json()) as Tokens;
    assert.equal(answer.status, 200, `${profile.id}: refresh refused (${sessions} at once): ${JSON.stringify(body)}`);
    refreshed.push(body);
  }
  for (const body of refreshed) await assertToolsList(mcpUrl, body.access_token, `${profile.id} after refreshing`);
  // The grant lives on: the next refresh, from what a session got back, is answered too.
  const next = await run.refresh(refreshed[0]!.refresh_token!, refreshed[0]!.scope);
  assert.equal(next.status, 200, `${profile.id}: the refresh after that was refused: ${await next.clone().text()}`);
}

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
      const run = await driveHost(profile, options);
      // Every discovery request was answered as the host needs, with the host's method and headers (HEAD for Gemini CLI, MCP-Protocol-Version: 2024-11-05 for Codex and Goose).
      assert.ok(
        run.discoveryRequests.every((request) => request.status === 401 || request.status === 200),
        JSON.stringify(run.discoveryRequests),
      );
      if (profile.registration.kind === 'document') assert.ok(documents.fetched.includes(`/${profile.id}/client.json`), 'serve fetched the document');
      // What the host sends, as it sends it: resource present or absent, the scope it asks for.
      assert.equal(run.sent.has('resource'), profile.authorization.resource !== 'absent');
      assert.equal(run.tokenForms[0]!.has('resource'), profile.token.resource !== 'absent');
      await refreshAsHost(profile, run, options.mcpUrl);
      const refreshForm = run.tokenForms[1]!;
      assert.equal(refreshForm.has('resource'), profile.refresh.resource !== 'absent');
      assert.equal(refreshForm.has('scope'), profile.refresh.scope !== 'absent');
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
