/**
 * Delegated tokens with the built `serve --delegation-config`: a person's token for one context
 * server (the notes server, a --resource) is exchanged by that server's client (`clients add
 * --grant-type client_credentials`) for a token for the demo /mcp, whose whoami then shows the
 * person as the subject and the notes server among the actors.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { authorizeUrl, basic, Browser, jwtClaims, pkcePair, signInAndConsent } from '../helpers/harness.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
const REDIRECT_URI = 'http://127.0.0.1:9/cb';
const ALICE = { username: 'alice', password: 'correct horse battery' };
const NOTES = 'https://notes.example/mcp';

describe('serve --delegation-config: a context server calling another on a person’s behalf', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  let server: RunningServer;
  let notesServer: { client_id: string; client_secret: string };
  let personsToken: string;

  before(async () => {
    const added = await cli(['users', 'add', ALICE.username, '--data', data], `${ALICE.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    const client = await cli(['clients', 'add', '--name', 'Notes server', '--grant-type', 'client_credentials', '--data', data, '--json']);
    assert.equal(client.code, 0, client.stderr);
    notesServer = JSON.parse(client.stdout) as typeof notesServer;
    const port = await freePort();
    const rules = join(data, 'delegations.json');
    writeFileSync(
      rules,
      JSON.stringify({ delegations: [{ client: notesServer.client_id, from: NOTES, to: `http://127.0.0.1:${port}/mcp`, scopes: ['mcp:tools'] }] }),
    );
    server = await startServe(['--port', String(port), '--data', data, '--quiet', '--resource', NOTES, '--delegation-config', rules]);
    personsToken = await signIn(server);
  });

  after(async () => {
    await server?.stop();
  });

  it('says in its banner how many delegation rules it took', () => {
    assert.match(server.output(), /delegations {3}1 rule \(--delegation-config\)/);
  });

  it('gives the notes server a token for /mcp naming alice and itself, which whoami shows', async () => {
    const response = await exchange(notesServer, personsToken);
    assert.equal(response.status, 200, await response.clone().text());
    const body = (await response.json()) as { access_token: string; issued_token_type: string };
    assert.equal(body.issued_token_type, ACCESS_TOKEN);
    assert.equal(jwtClaims(body.access_token).sub, jwtClaims(personsToken).sub);
    const client = new Client({ name: 'delegation e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.issuer}/mcp`), { requestInit: { headers: { authorization: `Bearer ${body.access_token}` } } }),
    );
    try {
      const who = (await client.callTool({ name: 'whoami' })).structuredContent as Record<string, unknown>;
      assert.equal(who.username, ALICE.username);
      assert.equal(who.client_id, notesServer.client_id);
      assert.deepEqual(who.actors, [notesServer.client_id]);
    } finally {
      await client.close();
    }
  });

  it('refuses the person’s token passed straight to /mcp: its audience is the notes server', async () => {
    const response = await fetch(`${server.issuer}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${personsToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    assert.equal(response.status, 401);
  });

  function exchange(caller: { client_id: string; client_secret: string }, subjectToken: string): Promise<Response> {
    return fetch(`${server.issuer}/token`, {
      method: 'POST',
      headers: { authorization: basic(caller.client_id, caller.client_secret) },
      body: new URLSearchParams({
        grant_type: TOKEN_EXCHANGE,
        subject_token: subjectToken,
        subject_token_type: ACCESS_TOKEN,
        resource: `${server.issuer}/mcp`,
      }),
    });
  }
});

/** Alice signs in through a public client for the notes server's resource; her access token for it. */
async function signIn(server: RunningServer): Promise<string> {
  const registration = await fetch(`${server.issuer}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' }),
  });
  const { client_id: clientId } = (await registration.json()) as { client_id: string };
  const browser = new Browser((path, init) => fetch(new URL(path, server.issuer), init));
  const { verifier, challenge } = pkcePair();
  const start = await browser.fetch(
    authorizeUrl({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      resource: NOTES,
    }),
  );
  const location = await signInAndConsent(browser, start, ALICE, 'approve', server.issuer);
  const code = location.searchParams.get('code');
  assert.ok(code, `no code: ${location}`);
  const response = await fetch(`${server.issuer}/token`, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT_URI,
      client_id: clientId,
      resource: NOTES,
    }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return ((await response.json()) as { access_token: string }).access_token;
}
