/**
 * A person's account page in a real browser (Debian's Chromium, driven by playwright-core, no
 * script) against the built `context-auth serve`: the person approves an application through the
 * authorization flow, opens /account, finds it there, revokes it, and the application's refresh
 * token and access token stop working. Screenshots of /account at a desktop's width and at
 * 390 px go to test-results/. Run `npx tsc -p tsconfig.build.json` first.
 */
import assert from 'node:assert/strict';
import { mkdir, stat } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Browser, type Page } from 'playwright-core';
import { cli, freePort, startCli, startServe, tempDataFolder, type RunningServer } from './serve-process.js';
import { launchChromium } from './chromium.js';
import { approveAndRedeem, assertTokensStopped, registerBrowserApp, signInToConsent, startCallback, toolsListStatus } from './browser-app.js';

const RESULTS = join(process.cwd(), 'test-results');
const USER = { username: 'alice', password: 'correct horse battery' };

describe('the account page in a real browser, against context-auth serve', () => {
  const data = tempDataFolder();
  let server: RunningServer | undefined;
  let browser: Browser | undefined;
  let callback: Server | undefined;
  let redirectUri: string;
  const arrived: URLSearchParams[] = [];

  before(async () => {
    const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    server = await startServe(['--port', String(await freePort()), '--data', data]);
    ({ server: callback, redirectUri } = await startCallback(arrived));
    await mkdir(RESULTS, { recursive: true });
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => callback?.close(resolve));
    await server?.stop();
  });

  it('approve an application, find it at /account, revoke it: its tokens stop working', { timeout: 120_000 }, async () => {
    const issuer = server!.issuer;
    const { client, verifier, authorize } = await registerBrowserApp(issuer, redirectUri);

    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, javaScriptEnabled: false });
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content.Security.Policy|Refused to/i.test(message.text())) violations.push(`${page.url()}: ${message.text()}`);
    });
    const overflows = () => page.evaluate('document.documentElement.scrollWidth > document.documentElement.clientWidth') as Promise<boolean>;

    // The person approves the application, as in any authorization.
    const approve = await signInToConsent(page, authorize, issuer, USER);
    assert.equal(await page.locator('a[href="/account"]').count(), 1, 'the consent page links to the account page');
    const tokens = await approveAndRedeem(page, approve, { issuer, redirectUri, arrived, clientId: client.client_id, verifier });
    assert.equal(await toolsListStatus(issuer, tokens.access_token), 200, 'the access token works before revoking');

    // The account page, still signed in from the approval: the application, the server, the scope.
    await page.goto(`${issuer}/account`);
    const text = await page.locator('body').innerText();
    assert.match(text, /Signed in as alice/);
    assert.ok(text.includes('E2E Notes'), 'names the application');
    assert.match(text, /unverified/, 'a self-chosen name is marked unverified');
    assert.ok(text.includes(`${issuer}/mcp`), 'names the server');
    assert.ok(text.includes('mcp:tools'), 'names the scope');
    assert.equal(await overflows(), false, 'the account page fits a desktop');
    await page.screenshot({ path: join(RESULTS, 'account-desktop.png'), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    assert.equal(await overflows(), false, 'the account page fits 390 px');
    await page.screenshot({ path: join(RESULTS, 'account-390.png'), fullPage: true });
    for (const name of ['account-desktop.png', 'account-390.png']) assert.ok((await stat(join(RESULTS, name))).size > 1000, `${name} is saved`);

    // Revoke: the page says so and no longer lists it; the tokens stop at once.
    await Promise.all([page.waitForURL(`${issuer}/account?done=revoked`), page.locator('button', { hasText: 'Revoke' }).click()]);
    const afterRevoke = await page.locator('body').innerText();
    assert.match(afterRevoke, /Access revoked/);
    assert.ok(!afterRevoke.includes('E2E Notes'), 'the application is gone from the list');
    await assertTokensStopped(issuer, client.client_id, tokens);

    // Sign out: the page asks to sign in again.
    await Promise.all([page.waitForURL(`${issuer}/account?done=signed-out`), page.locator('button', { hasText: 'Sign out' }).click()]);
    assert.equal(await page.locator('input[name="password"]').count(), 1);
    assert.deepEqual(violations, [], 'no CSP violations on our pages');
    await context.close();
  });

  it('the CLI signed in from two credentials files: one card with both registrations, each revocable', { timeout: 120_000 }, async () => {
    const issuer = server!.issuer;
    browser ??= await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, javaScriptEnabled: false });
    const page = await context.newPage();
    const home = tempDataFolder();
    for (const [i, file] of ['laptop.json', 'server.json'].entries()) {
      const login = startCli(['login', `${issuer}/mcp`, '--no-browser', '--credentials', join(home, file)], { timeoutMs: 60_000 });
      const [, href] = await login.waitForStderr(/^(http:\/\/\S+\/authorize\?\S+)$/m);
      await page.goto(href!);
      if (i === 0) {
        await page.fill('input[name="username"]', USER.username);
        await page.fill('input[name="password"]', USER.password);
        await Promise.all([page.waitForURL(/\/interaction\//), page.locator('button[type="submit"]').click()]);
      }
      await Promise.all([page.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback/), page.locator('button[name="decision"][value="approve"]').click()]);
      const result = await login.exit;
      assert.equal(result.code, 0, result.stderr);
    }

    await page.goto(`${issuer}/account`);
    const cards = page.locator('section.app');
    assert.equal(await cards.count(), 1, 'one card for the CLI');
    const text = await cards.first().innerText();
    assert.match(text, /context-auth CLI/);
    assert.match(text, /unverified/);
    assert.match(text, /2 registrations under this name, each approved by you/);
    assert.match(text, /a program on the computer you signed in from/);
    await screenshots(page, 'account-cli');

    // Revoking one leaves the other, now a card of its own.
    await Promise.all([
      page.waitForURL(`${issuer}/account?done=revoked`),
      page.locator('button[aria-label="Revoke registration 1 of context-auth CLI"]').click(),
    ]);
    assert.equal(await page.locator('section.app').count(), 1);
    assert.doesNotMatch(await page.locator('section.app').innerText(), /registrations under this name/);
    await Promise.all([page.waitForURL(`${issuer}/account?done=revoked`), page.locator('button', { hasText: 'Revoke' }).click()]);
    assert.equal(await page.locator('section.app').count(), 0);
    await context.close();
  });
});

/** A screenshot at 1280 px and one at 390 px; the page fits both. */
async function screenshots(page: Page, name: string): Promise<void> {
  const overflows = () => page.evaluate('document.documentElement.scrollWidth > document.documentElement.clientWidth') as Promise<boolean>;
  for (const [width, height, suffix] of [
    [1280, 900, 'desktop'],
    [390, 844, '390'],
  ] as const) {
    await page.setViewportSize({ width, height });
    assert.equal(await overflows(), false, `${name} fits ${width} px`);
    await page.screenshot({ path: join(RESULTS, `${name}-${suffix}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}
