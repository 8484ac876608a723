/**
 * The admin console's clients and people pages in a real browser (Debian's Chromium, driven by
 * playwright-core, no script) against the built `context-auth serve`: an administrator added with
 * `users add --admin` signs in at /admin, opens both pages, and removes a client and a person,
 * each after a confirmation that names it (Cancel changes nothing); each is then gone from the
 * store, and the notice names it. Screenshots at a desktop's width and at 390 px go to
 * test-results/, and no page scrolls sideways at 390 px. Run `npx tsc -p tsconfig.build.json` first.
 */
import assert from 'node:assert/strict';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Browser, type Page } from 'playwright-core';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';
import { launchChromium } from './chromium.js';

const RESULTS = join(process.cwd(), 'test-results');
const ADMIN = { username: 'root', password: 'correct horse battery' };

async function ok(args: string[], input?: string): Promise<string> {
  const result = await cli(args, input);
  assert.equal(result.code, 0, result.stderr);
  return result.stdout;
}

describe('the admin console clients and people pages in a real browser, against context-auth serve', () => {
  const data = tempDataFolder();
  let server: RunningServer | undefined;
  let browser: Browser | undefined;

  before(async () => {
    await ok(['users', 'add', ADMIN.username, '--admin', '--data', data], `${ADMIN.password}\n`);
    await ok(['users', 'add', 'alice', '--data', data], `${ADMIN.password}\n`);
    await ok(['clients', 'add', '--name', 'Nightly report', '--grant-type', 'client_credentials', '--data', data]);
    server = await startServe(['--port', String(await freePort()), '--data', data]);
    await mkdir(RESULTS, { recursive: true });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('signs in at /admin, shows clients and people, removes a client', { timeout: 120_000 }, async () => {
    const issuer = server!.issuer;
    const registration = await fetch(`${issuer}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'E2E Notes',
        redirect_uris: ['http://127.0.0.1:45678/callback'],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
      }),
    });
    assert.equal(registration.status, 201, await registration.clone().text());
    const { client_id: clientId } = (await registration.json()) as { client_id: string };

    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, javaScriptEnabled: false });
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content.Security.Policy|Refused to/i.test(message.text())) violations.push(`${page.url()}: ${message.text()}`);
    });

    await page.goto(`${issuer}/admin/clients`);
    await page.fill('input[name="username"]', ADMIN.username);
    await page.fill('input[name="password"]', ADMIN.password);
    await Promise.all([page.waitForURL(`${issuer}/admin/clients`), page.locator('button[type="submit"]', { hasText: 'Sign in' }).click()]);

    const clientsText = await page.locator('main').innerText();
    assert.match(clientsText, /Signed in as root/);
    assert.ok(clientsText.includes('E2E Notes'), 'lists the dynamically registered client');
    assert.match(clientsText, /unverified/, 'whose name is its registrant’s choice');
    assert.ok(clientsText.includes('Nightly report'), 'lists the operator’s machine client');
    assert.match(clientsText, /machine/);
    await screenshots(page, 'admin-clients');

    await page.setViewportSize({ width: 1280, height: 900 });
    // Remove asks first, naming the client and what removing it does.
    await Promise.all([page.waitForURL(`${issuer}/admin`), page.locator(`button[aria-label="Remove client E2E Notes"]`).click()]);
    const removal = `Remove the client E2E Notes (${clientId})`;
    assert.equal(await page.locator('#confirm-heading').innerText(), `${removal}?`);
    await screenshots(page, 'admin-confirm-remove-client');
    await Promise.all([page.waitForURL(/\/admin\/clients\?done=remove-client&/), page.getByRole('button', { name: removal }).click()]);
    const afterRemove = await page.locator('main').innerText();
    assert.ok((await page.getByRole('status').innerText()).startsWith(`Client removed: E2E Notes (${clientId}), with everything issued to it.`), afterRemove);
    assert.equal(await page.locator(`button[aria-label="Remove client E2E Notes"]`).count(), 0, 'gone from the page');
    const listed = JSON.parse(await ok(['clients', 'list', '--json', '--data', data])) as { client_id: string }[];
    assert.ok(!listed.some((client) => client.client_id === clientId), 'gone from the store');
    await server!.waitForOutput(/"event":"admin_action".*"action":"remove-client"/);

    await Promise.all([page.waitForURL(`${issuer}/admin/people`), page.locator('nav a', { hasText: 'People' }).click()]);
    const peopleText = await page.locator('main').innerText();
    assert.match(peopleText, /alice/);
    assert.match(peopleText, /administrator/);
    assert.equal(await page.locator('a[href="/admin/approvals?user=alice"]').count(), 1);
    await screenshots(page, 'admin-people');

    // Removing a person asks first; Cancel goes back with nothing removed; confirming removes them.
    await Promise.all([page.waitForURL(`${issuer}/admin`), page.locator('button[aria-label="Remove: alice"]').click()]);
    assert.equal(await page.locator('#confirm-heading').innerText(), 'Remove the person alice?');
    assert.match(await page.locator('section.confirm').innerText(), /This deletes their account, their sessions and their approvals/);
    await screenshots(page, 'admin-confirm-remove-person');
    await Promise.all([page.waitForURL(`${issuer}/admin/people`), page.getByRole('link', { name: 'Cancel' }).click()]);
    assert.equal(await page.locator('button[aria-label="Remove: alice"]').count(), 1, 'Cancel removed nobody');
    await Promise.all([page.waitForURL(`${issuer}/admin`), page.locator('button[aria-label="Remove: alice"]').click()]);
    await Promise.all([page.waitForURL(/\/admin\/people\?done=remove-user&/), page.getByRole('button', { name: 'Remove the person alice' }).click()]);
    assert.ok((await page.getByRole('status').innerText()).startsWith('Person removed: alice, with their sessions and approvals.'));
    const people = JSON.parse(await ok(['users', 'list', '--json', '--data', data])) as { username: string }[];
    assert.deepEqual(
      people.map((person) => person.username),
      [ADMIN.username],
      'alice is gone from the store',
    );
    assert.deepEqual(violations, [], 'no CSP violations on the console');
    await context.close();
  });
});

/** A screenshot at 1280 px and one at 390 px, where the page must not scroll sideways (its tables scroll in their own box). */
async function screenshots(page: Page, name: string): Promise<void> {
  const overflows = () => page.evaluate('document.documentElement.scrollWidth > document.documentElement.clientWidth') as Promise<boolean>;
  await page.setViewportSize({ width: 1280, height: 900 });
  assert.equal(await overflows(), false, `${name} fits a desktop`);
  await page.screenshot({ path: join(RESULTS, `${name}-desktop.png`), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  assert.equal(await overflows(), false, `${name} does not scroll sideways at 390 px`);
  await page.screenshot({ path: join(RESULTS, `${name}-390.png`), fullPage: true });
  for (const file of [`${name}-desktop.png`, `${name}-390.png`]) assert.ok((await stat(join(RESULTS, file))).size > 1000, `${file} is saved`);
}
