/**
 * The admin console's Approvals and Signing keys pages in a real browser (Debian's Chromium,
 * driven by playwright-core, no script) against the built `context-auth serve`: a person approves
 * an application, an administrator signs in at /admin, looks the person up, revokes the
 * application, and its refresh token and access token stop working; then rotates the signing key.
 * Screenshots at a desktop's width and at 390 px go to test-results/. Run
 * `npx tsc -p tsconfig.build.json` first.
 */
import assert from 'node:assert/strict';
import { mkdir, stat } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Browser, type Page } from 'playwright-core';
import { DATABASE_FILE } from '../../src/cli/data.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';
import { launchChromium } from './chromium.js';
import { approveAndRedeem, assertTokensStopped, registerBrowserApp, signInToConsent, startCallback, toolsListStatus } from './browser-app.js';

const RESULTS = join(process.cwd(), 'test-results');
const USER = { username: 'alice', password: 'correct horse battery' };
const ADMIN = { username: 'root', password: 'admin horse battery' };

describe("the admin console's approvals and signing keys in a real browser, against context-auth serve", () => {
  const data = tempDataFolder();
  let server: RunningServer | undefined;
  let browser: Browser | undefined;
  let callback: Server | undefined;
  let redirectUri: string;
  const arrived: URLSearchParams[] = [];

  before(async () => {
    for (const user of [USER, ADMIN]) {
      const added = await cli(['users', 'add', user.username, '--data', data], `${user.password}\n`);
      assert.equal(added.code, 0, added.stderr);
    }
    // The administrator is marked in the store while serve is stopped, as the CLI would.
    const store = openSqliteStore({ path: join(data, DATABASE_FILE) });
    assert.equal(await store.setUserAdmin(ADMIN.username, true), true);
    await store.close();
    server = await startServe(['--port', String(await freePort()), '--data', data]);
    ({ server: callback, redirectUri } = await startCallback(arrived));
    await mkdir(RESULTS, { recursive: true });
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => callback?.close(resolve));
    await server?.stop();
  });

  it("an administrator revokes a person's application from /admin: its tokens stop working; then rotates the signing key", { timeout: 120_000 }, async () => {
    const issuer = server!.issuer;
    const { client, verifier, authorize } = await registerBrowserApp(issuer, redirectUri);

    browser = await launchChromium();
    const violations: string[] = [];
    const newPage = async (): Promise<Page> => {
      const context = await browser!.newContext({ viewport: { width: 1280, height: 900 }, javaScriptEnabled: false });
      const page = await context.newPage();
      page.on('console', (message) => {
        if (/Content.Security.Policy|Refused to/i.test(message.text())) violations.push(`${page.url()}: ${message.text()}`);
      });
      return page;
    };

    // The person approves the application, in their own browser.
    const person = await newPage();
    const approve = await signInToConsent(person, authorize, issuer, USER);
    const tokens = await approveAndRedeem(person, approve, { issuer, redirectUri, arrived, clientId: client.client_id, verifier });
    assert.equal(await toolsListStatus(issuer, tokens.access_token), 200, 'the access token works before revoking');

    // The administrator, in another browser, signs in at /admin and opens Approvals.
    const page = await newPage();
    const overflows = () => page.evaluate('document.documentElement.scrollWidth > document.documentElement.clientWidth') as Promise<boolean>;
    const shoot = async (name: string) => {
      await page.setViewportSize({ width: 1280, height: 900 });
      assert.equal(await overflows(), false, `${name} fits a desktop`);
      await page.screenshot({ path: join(RESULTS, `${name}-desktop.png`), fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      assert.equal(await overflows(), false, `${name} fits 390 px`);
      await page.screenshot({ path: join(RESULTS, `${name}-390.png`), fullPage: true });
      await page.setViewportSize({ width: 1280, height: 900 });
      for (const file of [`${name}-desktop.png`, `${name}-390.png`]) assert.ok((await stat(join(RESULTS, file))).size > 1000, `${file} is saved`);
    };
    await page.goto(`${issuer}/admin`);
    await page.fill('input[name="username"]', ADMIN.username);
    await page.fill('input[name="password"]', ADMIN.password);
    await Promise.all([page.waitForURL(`${issuer}/admin`), page.locator('button', { hasText: 'Sign in' }).click()]);
    await Promise.all([page.waitForURL(`${issuer}/admin/approvals`), page.locator('nav a', { hasText: 'Approvals' }).click()]);
    await page.getByLabel('Person (username)').fill(USER.username);
    await Promise.all([page.waitForURL(`${issuer}/admin/approvals?user=${USER.username}`), page.locator('button', { hasText: 'Show approvals' }).click()]);
    const text = await page.locator('#content').innerText();
    assert.ok(text.includes('E2E Notes'), 'names the application');
    assert.match(text, /unverified/, 'a self-chosen name is marked unverified');
    assert.ok(text.includes(`${issuer}/mcp`), 'names the server');
    assert.ok(text.includes('mcp:tools'), 'names the scope');
    await shoot('admin-approvals');

    // Revoke: the page says so and no longer lists it; the tokens stop at once.
    await Promise.all([page.waitForURL(/done=revoke-approval/), page.getByRole('button', { name: `Revoke E2E Notes for ${USER.username}` }).click()]);
    const afterRevoke = await page.locator('#content').innerText();
    // The banner names what was revoked; the list no longer has it.
    assert.ok((await page.getByRole('status').innerText()).startsWith(`Approval revoked: E2E Notes (${client.client_id}) for ${USER.username}.`), afterRevoke);
    assert.equal(await page.locator('section.app').count(), 0, 'the application is gone from the list');
    await assertTokensStopped(issuer, client.client_id, tokens);
    await server!.waitForOutput(/"event":"consent_revoked".*"by":"admin"/);

    // Signing keys: the current key, and a rotation published at once.
    const jwks = async () => ((await (await fetch(`${issuer}/jwks`)).json()) as { keys: Array<{ kid: string }> }).keys.map((key) => key.kid);
    const before = await jwks();
    await Promise.all([page.waitForURL(`${issuer}/admin/keys`), page.locator('nav a', { hasText: 'Signing keys' }).click()]);
    const keysText = await page.locator('#content').innerText();
    assert.ok(keysText.includes(before[0]!), 'lists the current key');
    await shoot('admin-keys');
    await Promise.all([page.waitForURL(/\/admin\/keys\?done=rotate-key&/), page.locator('button', { hasText: 'Rotate now' }).click()]);
    const afterRotation = await jwks();
    const made = afterRotation.find((kid) => kid !== before[0])!;
    assert.ok((await page.getByRole('status').innerText()).startsWith(`New signing key made: ${made}.`), 'the banner names the new key');
    assert.equal(afterRotation.length, 2, 'the new key is published at once beside the previous one');
    assert.ok(afterRotation.includes(before[0]!));
    assert.deepEqual(violations, [], 'no CSP violations on our pages');
  });
});
