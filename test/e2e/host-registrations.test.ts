/**
 * Against `context-auth serve`, three hosts as they register or describe themselves (their
 * requests as recorded, test/helpers/recorded-hosts.ts), each on its first try:
 * - claude.ai's client ID metadata document asks for jwt-bearer beside a public client: the
 *   document is used, without that grant, up to the consent page and the code;
 * - Cursor's registration names a cursor:// redirect URI beside an https and a loopback one:
 *   without --allow-redirect-scheme the other two are kept; with it, all three, and the flow ends
 *   in Chromium at the cursor:// URI with code, state and iss, whose code redeems with PKCE;
 * - ChatGPT's document is a private_key_jwt client with an RS256 key at its jwks_uri: the code
 *   and a refresh are redeemed with client assertions whose aud is the issuer.
 * Documents and keys are served on 127.0.0.1, which serve reaches only behind
 * --allow-insecure-client-documents; the hosts' own callbacks (claude.ai, chatgpt.com) are read
 * from the redirect, never followed.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Browser as Chromium } from 'playwright-core';
import { jwtSigner } from '../../src/core/jwt.js';
import { Browser, authorizeUrl, pkcePair, signInAndConsent } from '../helpers/harness.js';
import { CHATGPT_REDIRECT_URI, CLAUDE_AI_REDIRECT_URI, CURSOR_REGISTRATION, chatGptDocument, claudeAiDocument } from '../helpers/recorded-hosts.js';
import { signInToConsent, toolsListStatus } from './browser-app.js';
import { launchChromium } from './chromium.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const USER = { username: 'alice', password: 'correct horse battery staple' };
const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** A data folder with one person in it, for a serve of its own. */
async function dataWithUser(): Promise<string> {
  const data = tempDataFolder();
  const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
  assert.equal(added.code, 0, added.stderr);
  return data;
}

function register(issuer: string, body: object): Promise<Response> {
  return fetch(`${issuer}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

function postToken(issuer: string, values: Record<string, string>): Promise<Response> {
  return fetch(`${issuer}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(values) });
}

/** The person at serve's pages over HTTP: signs in, approves, and returns where serve sends the browser (not followed). */
async function approveOverHttp(issuer: string, clientId: string, redirectUri: string, challenge: string, pages: string[] = []): Promise<URL> {
  const browser = new Browser((path, init) => fetch(new URL(path, issuer), init));
  const first = await browser.fetch(
    authorizeUrl({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'host-state',
      resource: `${issuer}/mcp`,
    }),
  );
  return signInAndConsent(browser, first, USER, 'approve', issuer, pages);
}

describe('hosts connect to serve on the first try', { timeout: 300_000 }, () => {
  const routes = new Map<string, unknown>();
  const hits = new Map<string, number>();
  let documents: http.Server;
  let base: string;
  let server: RunningServer;
  let data: string;

  before(async () => {
    documents = http.createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const body = routes.get(path);
      if (body === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(documents.address() as AddressInfo).port}`;
    data = await dataWithUser();
    server = await startServe(['--port', String(await freePort()), '--data', data, '--allow-insecure-client-documents']);
  });

  after(async () => {
    await server?.stop();
    documents.closeAllConnections();
    await new Promise<void>((resolve) => documents.close(() => resolve()));
  });

  it("claude.ai's document as recorded: used without the jwt-bearer grant a public client cannot have, up to consent and the code", async () => {
    const clientId = `${base}/oauth/mcp-oauth-client-metadata`;
    routes.set('/oauth/mcp-oauth-client-metadata', claudeAiDocument(clientId));
    const pages: string[] = [];
    const back = await approveOverHttp(server.issuer, clientId, CLAUDE_AI_REDIRECT_URI, pkcePair().challenge, pages);
    const consent = pages.at(-1)!;
    assert.match(consent, /<h1>Authorize Claude\?<\/h1>/, 'the consent page was reached');
    assert.match(consent, /<dt>Returns to<\/dt><dd><code class="token"><span>claude\.ai<\/span><\/code><\/dd>/);
    assert.equal(`${back.origin}${back.pathname}`, CLAUDE_AI_REDIRECT_URI);
    assert.ok(back.searchParams.get('code'), back.href);
    assert.equal(back.searchParams.get('iss'), server.issuer);

    const listed = await cli(['clients', 'list', '--json', '--data', data]);
    const kept = (JSON.parse(listed.stdout) as Array<{ client_id: string; grant_types: string[]; token_endpoint_auth_method: string }>).find(
      (client) => client.client_id === clientId,
    );
    assert.deepEqual(kept?.grant_types, ['authorization_code', 'refresh_token']);
    assert.equal(kept?.token_endpoint_auth_method, 'none');
    await server.waitForOutput(
      /"event":"client_metadata_trimmed"[^\n]*"registered_by":"document"[^\n]*grant_types urn:ietf:params:oauth:grant-type:jwt-bearer: needs a confidential client/,
    );
    assert.doesNotMatch(server.output(), /"event":"client_document_failed"/);
  });

  it("Cursor's registration as recorded, without --allow-redirect-scheme: 201 with its https and loopback URIs", async () => {
    const response = await register(server.issuer, CURSOR_REGISTRATION);
    const body = (await response.json()) as { client_id: string; redirect_uris: string[] };
    assert.equal(response.status, 201, JSON.stringify(body));
    assert.deepEqual(body.redirect_uris, ['https://www.cursor.com/agents/mcp/oauth/callback', 'http://localhost:8787/callback']);
    await server.waitForOutput(
      /"event":"client_metadata_trimmed"[^\n]*redirect_uris cursor:\/\/anysphere\.cursor-mcp\/oauth\/callback: redirect URI scheme cursor: is not allowed/,
    );
  });

  it("ChatGPT's document as recorded: private_key_jwt with RS256 keys at its jwks_uri, for the code and for a refresh", async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const clientId = `${base}/oauth/client.json`;
    routes.set('/oauth/jwks.json', { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'chatgpt-e2e', use: 'sig', alg: 'RS256' }] });
    routes.set('/oauth/client.json', chatGptDocument(clientId, `${base}/oauth/jwks.json`));
    const sign = jwtSigner({ alg: 'RS256', kid: 'chatgpt-e2e', typ: 'JWT' }, privateKey);
    const assertion = (): string => {
      const now = Math.floor(Date.now() / 1000);
      return sign({ iss: clientId, sub: clientId, aud: server.issuer, jti: randomUUID(), iat: now, exp: now + 60 });
    };

    const { verifier, challenge } = pkcePair();
    const back = await approveOverHttp(server.issuer, clientId, CHATGPT_REDIRECT_URI, challenge);
    assert.equal(`${back.origin}${back.pathname}`, CHATGPT_REDIRECT_URI);
    assert.equal(back.searchParams.get('state'), 'host-state');
    assert.equal(back.searchParams.get('iss'), server.issuer, 'the stable callback needs iss (RFC 9207)');
    const code = back.searchParams.get('code')!;

    const redeemed = await postToken(server.issuer, {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: CHATGPT_REDIRECT_URI,
      resource: `${server.issuer}/mcp`,
      client_assertion_type: CLIENT_ASSERTION_TYPE,
      client_assertion: assertion(),
    });
    const tokens = (await redeemed.json()) as { access_token: string; refresh_token: string };
    assert.equal(redeemed.status, 200, JSON.stringify(tokens));
    assert.ok((hits.get('/oauth/jwks.json') ?? 0) >= 1, 'serve fetched the keys at the jwks_uri');
    assert.equal(await toolsListStatus(server.issuer, tokens.access_token), 200);

    const refreshed = await postToken(server.issuer, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_assertion_type: CLIENT_ASSERTION_TYPE,
      client_assertion: assertion(),
    });
    assert.equal(refreshed.status, 200, await refreshed.clone().text());
    const withoutAssertion = await postToken(server.issuer, {
      grant_type: 'refresh_token',
      refresh_token: ((await refreshed.json()) as { refresh_token: string }).refresh_token,
      client_id: clientId,
    });
    assert.equal(withoutAssertion.status, 401, 'its id alone is not enough: it is a private_key_jwt client');

    const listed = await cli(['clients', 'list', '--json', '--data', data]);
    const kept = (JSON.parse(listed.stdout) as Array<{ client_id: string; token_endpoint_auth_method: string }>).find(
      (client) => client.client_id === clientId,
    );
    assert.equal(kept?.token_endpoint_auth_method, 'private_key_jwt');
  });
});

describe('serve --allow-redirect-scheme cursor: Cursor connects through its own scheme', { timeout: 300_000 }, () => {
  let server: RunningServer;
  let chromium: Chromium;

  before(async () => {
    server = await startServe(['--port', String(await freePort()), '--data', await dataWithUser(), '--quiet', '--allow-redirect-scheme', 'cursor']);
    chromium = await launchChromium();
  });

  after(async () => {
    await chromium?.close();
    await server?.stop();
  });

  it('says so at start', () => {
    assert.match(server.output(), /redirects\s+https, http on loopback, and apps' own cursor: \(--allow-redirect-scheme\)/);
  });

  it("registers all three of Cursor's redirect URIs, and the flow ends in the browser at cursor:// with code, state and iss; the code redeems with PKCE", async () => {
    const response = await register(server.issuer, CURSOR_REGISTRATION);
    const client = (await response.json()) as { client_id: string; redirect_uris: string[] };
    assert.equal(response.status, 201, JSON.stringify(client));
    assert.deepEqual(client.redirect_uris, CURSOR_REGISTRATION.redirect_uris);

    const callback = CURSOR_REGISTRATION.redirect_uris[0];
    const { verifier, challenge } = pkcePair();
    const authorize = new URL(
      authorizeUrl({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: callback,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: 'cursor-state',
        resource: `${server.issuer}/mcp`,
      }),
      server.issuer,
    );
    const page = await (await chromium.newContext()).newPage();
    const approve = await signInToConsent(page, authorize, server.issuer, USER);
    const shown = await page.locator('main').innerText();
    assert.match(shown, /Returns to an app on your device, not to a website: approving hands the result to the app that opens cursor: links on this device\./);
    assert.match(shown, /Returns to\s+an app on your device: cursor:\/\/anysphere\.cursor-mcp/);

    // The browser hands cursor:// to the app registered for it (none here): the navigation it attempts is the redirect.
    const [opened] = await Promise.all([page.waitForEvent('request', (request) => request.url().startsWith('cursor:')), approve.click()]);
    const arrived = new URL(opened.url());
    assert.equal(`${arrived.protocol}//${arrived.host}${arrived.pathname}`, callback);
    assert.equal(arrived.searchParams.get('state'), 'cursor-state');
    assert.equal(arrived.searchParams.get('iss'), server.issuer);
    const code = arrived.searchParams.get('code');
    assert.ok(code, arrived.href);

    const redeemed = await postToken(server.issuer, {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: callback,
      client_id: client.client_id,
      resource: `${server.issuer}/mcp`,
    });
    const tokens = (await redeemed.json()) as { access_token: string };
    assert.equal(redeemed.status, 200, JSON.stringify(tokens));
    assert.equal(await toolsListStatus(server.issuer, tokens.access_token), 200);
  });

  it('refuses a scheme with a meaning of its own at start', async () => {
    for (const scheme of ['http', 'javascript', 'data', 'file']) {
      const result = await cli(['serve', '--allow-redirect-scheme', scheme]);
      assert.equal(result.code, 2, scheme);
      assert.match(result.stderr, new RegExp(`--allow-redirect-scheme ${scheme} is not a private-use scheme`));
    }
  });
});
