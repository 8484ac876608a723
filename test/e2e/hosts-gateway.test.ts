/**
 * Every host profile that connects to serve's /mcp (hosts.test.ts) connects through a gateway
 * path too, with the same machinery (host-driver.ts): discovery from the gateway path's 401 and
 * its protected resource metadata (RFC 9728's path form), the host's document or registration,
 * its sign-in, token and refresh, and with each token an MCP session at the path whose tools/list
 * is the upstream's. The upstream is the official MCP SDK's server with sessions, as in
 * gateway.test.ts. Cursor's private-use redirect is allowed, as in hosts.test.ts's own run for it;
 * ChatGPT as a public client is the way it takes only where private_key_jwt is not listed, which
 * serve lists, so it is not a way it connects here either.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { HOST_PROFILES } from '../../src/client/hosts/profiles.js';
import { sdkUpstream, type SdkUpstream } from '../helpers/mcp-upstreams.js';
import { MCP_HEADERS, initialize } from './gateway-clients.js';
import { AssertionKey, DocumentHost, connectAsHost, type DriveOptions } from './host-driver.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const PERSON = { username: 'alice', password: 'correct horse battery staple' };

/** An MCP session at the gateway path with the host's token: initialize, then tools/list, which lists the upstream's tools; then the session's end. */
async function toolsListThroughGateway(url: string, accessToken: string, who: string): Promise<void> {
  const auth = { ...MCP_HEADERS, authorization: `Bearer ${accessToken}` };
  const opened = await fetch(url, { method: 'POST', headers: auth, body: JSON.stringify(initialize(1)) });
  const openedText = await opened.text();
  assert.equal(opened.status, 200, `${who}: initialize answered ${opened.status}: ${openedText}`);
  const session = { ...auth, 'mcp-session-id': opened.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
  const initialized = await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  assert.equal(initialized.status, 202, `${who}: notifications/initialized answered ${initialized.status}`);
  const listed = await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
  const text = await listed.text();
  assert.equal(listed.status, 200, `${who}: tools/list answered ${listed.status}: ${text}`);
  assert.match(text, /"name":"echo"/, `${who}: tools/list did not list the upstream's tools: ${text}`);
  assert.equal((await fetch(url, { method: 'DELETE', headers: session })).status, 200);
}

describe('a gateway path, connected to by each host profile', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  const documents = new DocumentHost();
  let upstream: SdkUpstream;
  let server: RunningServer;
  let options: DriveOptions;

  before(async () => {
    await documents.start();
    upstream = await sdkUpstream();
    const added = await cli(['users', 'add', PERSON.username, '--data', data], `${PERSON.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    server = await startServe([
      '--port',
      String(await freePort()),
      '--data',
      data,
      '--quiet',
      '--allow-insecure-client-documents',
      '--allow-redirect-scheme',
      'cursor',
      '--gateway',
      `/tools=${upstream.url}`,
    ]);
    options = {
      mcpUrl: `${server.issuer}/tools`,
      person: PERSON,
      documents,
      assertionKey: await AssertionKey.create(),
      toolsList: toolsListThroughGateway,
    };
  });
  after(async () => {
    await server?.stop();
    await upstream?.close();
    await documents.stop();
  });

  for (const profile of HOST_PROFILES.filter((p) => p.id !== 'chatgpt-public-client')) {
    it(`${profile.host}, by ${profile.way === 'document' ? 'its client ID metadata document' : 'dynamic registration'} (${profile.id})`, async () => {
      await connectAsHost(profile, options);
    });
  }

  it('no request reached the upstream with the token the host got', () => {
    assert.ok(upstream.received.length > 0);
    for (const request of upstream.received) assert.equal(request.headers.authorization, undefined);
  });
});
