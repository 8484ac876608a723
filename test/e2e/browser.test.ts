/**
 * A real browser through the whole Revision B flow: Debian's Chromium, driven by playwright-core,
 * against an authorization server on a real port with the SQLite store. It signs in, consents,
 * lands on the client's loopback callback with code, state and iss, and the code redeems.
 * Screenshots of the login and consent pages go to test-results/.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { serve, type ServerType } from '@hono/node-server';
import { type Browser } from 'playwright-core';
import { createAuthorizationServer, type AuthorizationServer } from '../../src/authorization-server/index.js';
import { hashPassword } from '../../src/core/passwords.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { FullStore } from '../../src/store/store.js';
import { jwtClaims, pkcePair } from '../helpers/harness.js';
import { CHROMIUM, launchChromium } from './chromium.js';

const RESULTS = join(process.cwd(), 'test-results');

function listen(server: Server | ServerType): Promise<number> {
  return new Promise((resolve, reject) => {
    const onListening = () => resolve((server.address() as AddressInfo).port);
    if (server.listening) onListening();
    else {
      server.once('listening', onListening);
      server.once('error', reject);
    }
  });
}

function close(server: Server | ServerType | undefined): Promise<void> {
  return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
}

describe('a real browser through login and consent (Revision B)', () => {
  let dir: string;
  let store: FullStore;
  let auth: AuthorizationServer | undefined;
  let http: ServerType;
  let issuer: string;
  let callback: Server;
  let redirectUri: string;
  const callbacks: URLSearchParams[] = [];
  let browser: Browser | undefined;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'context-auth-e2e-'));
    store = openSqliteStore({ path: join(dir, 'auth.db') });

    // Listen first, then build the server for the issuer the port gives.
    http = serve({
      fetch: (request: Request) => (auth ? auth.handle(request) : new Response('starting', { status: 503 })),
      port: 0,
      hostname: '127.0.0.1',
    });
    issuer = `http://127.0.0.1:${await listen(http)}`;
    auth = createAuthorizationServer({ issuer, store, resources: [`${issuer}/mcp`] });

    callback = createServer((request: IncomingMessage, response: ServerResponse) => {
      const url = new URL(request.url ?? '/', 'http://127.0.0.1');
      if (url.pathname === '/callback') callbacks.push(url.searchParams);
      response.writeHead(200, { 'content-type': 'text/plain' }).end('done');
    }).listen(0, '127.0.0.1');
    redirectUri = `http://127.0.0.1:${await listen(callback)}/callback`;

    await store.createUser({
      id: 'user-alice',
      username: 'alice',
      passwordHash: await hashPassword('correct horse battery'),
      createdAt: Math.floor(Date.now() / 1000),
    });
    await mkdir(RESULTS, { recursive: true });
  });

  after(async () => {
    await browser?.close();
    await close(callback);
    await close(http);
    await store?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('has Chromium installed', () => {
    // CI installs it; a missing browser is a failure, never a skip.
    assert.ok(existsSync(CHROMIUM), `Chromium not found at ${CHROMIUM}. Install it (apt-get install -y chromium) or set CHROMIUM_PATH to its executable.`);
  });

  it('signs in, consents and gets a code that redeems to a token', { timeout: 120_000 }, async () => {
    // A public client registered over HTTP, as a context client would.
    const registration = await fetch(`${issuer}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'E2E Notes App',
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
      }),
    });
    assert.equal(registration.status, 201, await registration.clone().text());
    const client = (await registration.json()) as { client_id: string };

    const resource = `${issuer}/mcp`;
    const state = 'e2e state & ü';
    const { verifier, challenge } = pkcePair();
    const authorizeUrl = new URL(`${issuer}/authorize`);
    for (const [key, value] of Object.entries({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      scope: 'mcp:tools',
      state,
      resource,
    })) {
      authorizeUrl.searchParams.set(key, value);
    }

    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 800, height: 700 }, javaScriptEnabled: false });
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      const text = message.text();
      if (/Content.Security.Policy|Refused to/i.test(text)) violations.push(`${page.url()}: ${text}`);
    });
    page.on('pageerror', (error) => violations.push(`${page.url()}: ${error.message}`));

    // Login page.
    await page.goto(authorizeUrl.toString());
    assert.match(page.url(), new RegExp(`^${issuer}/interaction/`));
    await page.locator('input[name="username"]').waitFor();
    assert.match(await page.locator('body').innerText(), /E2E Notes App/);
    await page.screenshot({ path: join(RESULTS, 'login.png'), fullPage: true });
    assert.ok((await stat(join(RESULTS, 'login.png'))).size > 1000, 'the login screenshot is saved');

    // A wrong password first: the same page, with a message.
    await page.fill('input[name="username"]', 'alice');
    await page.fill('input[name="password"]', 'wrong password');
    await page.locator('button[type="submit"]').click();
    await page.locator('[role="alert"]').waitFor();
    assert.match(await page.locator('[role="alert"]').innerText(), /Wrong username or password/);
    assert.equal(await page.inputValue('input[name="username"]'), 'alice');

    await page.fill('input[name="password"]', 'correct horse battery');
    await Promise.all([page.waitForURL(new RegExp(`^${issuer}/interaction/`)), page.locator('button[type="submit"]').click()]);

    // Consent page.
    const approve = page.locator('button[name="decision"][value="approve"]');
    await approve.waitFor();
    const consentText = await page.locator('body').innerText();
    assert.match(consentText, /Authorize E2E Notes App\?/);
    assert.ok(consentText.includes(new URL(redirectUri).host), 'names the redirect host');
    assert.ok(consentText.includes('mcp:tools'), 'names the scope');
    assert.ok(consentText.includes(resource), 'names the resource');
    await page.screenshot({ path: join(RESULTS, 'consent.png'), fullPage: true });
    assert.ok((await stat(join(RESULTS, 'consent.png'))).size > 1000, 'the consent screenshot is saved');

    await Promise.all([page.waitForURL((url) => url.toString().startsWith(redirectUri)), approve.click()]);
    assert.equal(await page.locator('body').innerText(), 'done');

    assert.equal(callbacks.length, 1);
    const query = callbacks[0]!;
    const code = query.get('code');
    assert.ok(code, `a code: ${query}`);
    assert.equal(query.get('state'), state);
    assert.equal(query.get('iss'), issuer);
    assert.equal(query.has('error'), false);

    // The client redeems the code over HTTP.
    const token = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        redirect_uri: redirectUri,
        client_id: client.client_id,
        resource,
      }),
    });
    assert.equal(token.status, 200, await token.clone().text());
    const tokens = (await token.json()) as { access_token: string; token_type: string; refresh_token?: string };
    assert.equal(tokens.token_type, 'Bearer');
    assert.ok(tokens.refresh_token);
    const claims = jwtClaims(tokens.access_token);
    assert.equal(claims.aud, resource);
    assert.equal(claims.iss, issuer);
    assert.equal(claims.sub, 'user-alice');
    assert.equal(claims.client_id, client.client_id);

    assert.deepEqual(violations, [], 'no CSP violations or page errors on our pages');
    await context.close();
  });
});
