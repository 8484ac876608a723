/**
 * A real browser (Debian's Chromium, playwright-core) through sign-in at an upstream provider:
 * our sign-in page with the provider's button, our consent page (before anything goes to the
 * provider), the provider's own sign-in page, and back to the client with a code. The pages'
 * CSP must let each form lead where it does. Screenshots go to test-results/.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { serve, type ServerType } from '@hono/node-server';
import { type Browser } from 'playwright-core';
import { createAuthorizationServer, type AuthorizationServer } from '../../src/authorization-server/index.js';
import { SecretBox, generateSecretKey, parseSecretKeys } from '../../src/core/secret-box.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { pkcePair } from '../helpers/harness.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.js';
import { launchChromium } from './chromium.js';

const RESULTS = join(process.cwd(), 'test-results');

const portOf = (server: Server | ServerType): Promise<number> =>
  new Promise((resolve) =>
    server.listening ? resolve((server.address() as AddressInfo).port) : server.once('listening', () => resolve((server.address() as AddressInfo).port)),
  );

describe('a real browser through sign-in at an upstream provider', () => {
  let dir: string;
  let store: Store;
  let auth: AuthorizationServer | undefined;
  let http: ServerType;
  let issuer: string;
  let idp: TestOidcProvider;
  let callback: Server;
  let redirectUri: string;
  const arrived: URLSearchParams[] = [];
  let browser: Browser | undefined;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'context-auth-upstream-'));
    store = openSqliteStore({ path: join(dir, 'auth.db') });
    http = serve({ fetch: (request: Request) => (auth ? auth.handle(request) : new Response('starting', { status: 503 })), port: 0, hostname: '127.0.0.1' });
    issuer = `http://127.0.0.1:${await portOf(http)}`;
    idp = await startOidcProvider({ redirectUris: [`${issuer}/upstream/callback`], pages: true });
    auth = createAuthorizationServer({
      issuer,
      store,
      resources: [`${issuer}/mcp`],
      upstream: {
        providers: [{ kind: 'oidc', id: 'corp', name: 'Corp SSO', issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret }],
        secretBox: new SecretBox(parseSecretKeys(generateSecretKey(), 'test')),
        allowLoopbackHttp: true,
      },
    });
    callback = createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://127.0.0.1');
      if (url.pathname === '/callback') arrived.push(url.searchParams);
      response.writeHead(200, { 'content-type': 'text/plain' }).end('done');
    }).listen(0, '127.0.0.1');
    redirectUri = `http://127.0.0.1:${await portOf(callback)}/callback`;
    await mkdir(RESULTS, { recursive: true });
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => callback?.close(resolve));
    await new Promise((resolve) => http?.close(resolve));
    await idp?.stop();
    await store?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('our sign-in page, our consent page, the provider, and back with a code', { timeout: 120_000 }, async () => {
    const registration = await fetch(`${issuer}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Upstream Notes', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }),
    });
    const client = (await registration.json()) as { client_id: string };
    const url = new URL(`${issuer}/authorize`);
    const params = {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
      state: 'st',
      resource: `${issuer}/mcp`,
    };
    for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);

    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 800, height: 760 }, javaScriptEnabled: false });
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content.Security.Policy|Refused to/i.test(message.text())) violations.push(`${page.url()}: ${message.text()}`);
    });

    await page.goto(url.href);
    const button = page.locator('button[name="provider"][value="corp"]');
    await button.waitFor();
    assert.match(await button.innerText(), /Sign in with Corp SSO/);
    assert.equal(await page.locator('input[name="password"]').count(), 1, 'passwords are offered beside the provider');
    await page.screenshot({ path: join(RESULTS, 'upstream-sign-in.png'), fullPage: true });

    await Promise.all([page.waitForURL(new RegExp(`^${issuer}/interaction/`)), button.click()]);
    const approve = page.locator('button[name="decision"][value="approve"]');
    await approve.waitFor();
    const consent = await page.locator('body').innerText();
    assert.match(consent, /Authorize Upstream Notes\?/);
    assert.match(consent, /Next you sign in with Corp SSO/);
    await page.screenshot({ path: join(RESULTS, 'upstream-consent.png'), fullPage: true });

    await Promise.all([page.waitForURL((u) => u.origin === new URL(idp.issuer).origin), approve.click()]);
    const proceed = page.locator('button[name="account"]');
    await proceed.first().waitFor();
    await page.screenshot({ path: join(RESULTS, 'upstream-provider.png'), fullPage: true });

    await Promise.all([page.waitForURL((u) => u.href.startsWith(redirectUri)), proceed.first().click()]);
    assert.equal(arrived.length, 1);
    assert.ok(arrived[0]!.get('code'), `a code: ${arrived[0]}`);
    assert.equal(arrived[0]!.get('state'), 'st');
    assert.equal(arrived[0]!.get('iss'), issuer);
    assert.deepEqual(violations, [], 'no CSP violations on the way');
    await context.close();
  });

  it("the account page: the provider's button there, the provider, and back to the page, signed in", { timeout: 120_000 }, async () => {
    browser ??= await launchChromium();
    const context = await browser.newContext({ viewport: { width: 390, height: 760 }, javaScriptEnabled: false });
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content.Security.Policy|Refused to/i.test(message.text())) violations.push(`${page.url()}: ${message.text()}`);
    });
    await page.goto(`${issuer}/account`);
    const button = page.locator('button[name="provider"][value="corp"]');
    await button.waitFor();
    await page.screenshot({ path: join(RESULTS, 'upstream-account-sign-in.png'), fullPage: true });
    // The form posts to /account, which sends the browser on to the provider: the page's CSP must allow that.
    await Promise.all([page.waitForURL((u) => u.origin === new URL(idp.issuer).origin), button.click()]);
    const proceed = page.locator('button[name="account"]');
    await proceed.first().waitFor();
    await Promise.all([page.waitForURL(`${issuer}/account`), proceed.first().click()]);
    assert.match(await page.locator('body').innerText(), /Signed in as corp:alice/);
    assert.deepEqual(violations, [], 'no CSP violations on the way');
    await context.close();
  });
});
