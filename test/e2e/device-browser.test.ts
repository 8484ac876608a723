/**
 * The device authorization grant (RFC 8628) against the built `context-auth serve`, with a real
 * browser (Debian's Chromium, driven by playwright-core) at a phone's width: a device client
 * added with the CLI asks for a code over HTTP, the person opens verification_uri_complete,
 * confirms the code, signs in, sees the device consent (the client and the code) and approves;
 * the device's polling then gets tokens. Screenshots of the code page and the device consent go
 * to test-results/. Run `npx tsc -p tsconfig.build.json` first.
 */
import assert from 'node:assert/strict';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Browser } from 'playwright-core';
import { jwtClaims } from '../helpers/harness.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';
import { launchChromium } from './chromium.js';

const RESULTS = join(process.cwd(), 'test-results');
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const USER = { username: 'alice', password: 'correct horse battery' };

describe('a device approved in a real browser (RFC 8628), against context-auth serve', () => {
  const data = tempDataFolder();
  let server: RunningServer | undefined;
  let browser: Browser | undefined;
  let clientId: string;

  before(async () => {
    const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    const client = await cli([
      'clients',
      'add',
      '--name',
      'E2E Living-room TV',
      '--grant-type',
      'device_code',
      '--grant-type',
      'refresh_token',
      '--data',
      data,
    ]);
    assert.equal(client.code, 0, client.stderr);
    const registered = JSON.parse(client.stdout) as { client_id: string; redirect_uris: string[]; grant_types: string[] };
    assert.deepEqual(registered.redirect_uris, []);
    assert.deepEqual(registered.grant_types, [DEVICE_GRANT, 'refresh_token']);
    clientId = registered.client_id;
    server = await startServe(['--port', String(await freePort()), '--data', data]);
    await mkdir(RESULTS, { recursive: true });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  const post = (path: string, values: Record<string, string>): Promise<Response> =>
    fetch(`${server!.issuer}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(values) });

  it('the device asks, the person approves on a phone-sized page, and the poll gets tokens', { timeout: 120_000 }, async () => {
    const issuer = server!.issuer;
    const metadata = (await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    assert.equal(metadata.device_authorization_endpoint, `${issuer}/device_authorization`);

    const asked = await post('/device_authorization', { client_id: clientId, scope: 'mcp:tools', resource: `${issuer}/mcp` });
    assert.equal(asked.status, 200, await asked.clone().text());
    const device = (await asked.json()) as {
      device_code: string;
      user_code: string;
      verification_uri: string;
      verification_uri_complete: string;
      interval: number;
    };
    assert.equal(device.verification_uri, `${issuer}/device`);
    const poll = () => post('/token', { grant_type: DEVICE_GRANT, device_code: device.device_code, client_id: clientId });
    assert.equal(((await (await poll()).json()) as { error: string }).error, 'authorization_pending');

    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, javaScriptEnabled: false });
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content.Security.Policy|Refused to/i.test(message.text())) violations.push(`${page.url()}: ${message.text()}`);
    });
    const overflows = () => page.evaluate('document.documentElement.scrollWidth > document.documentElement.clientWidth') as Promise<boolean>;

    // The code page: the link's code filled in, nothing approved yet.
    await page.goto(device.verification_uri_complete);
    assert.equal(await page.inputValue('input[name="user_code"]'), device.user_code);
    assert.match(await page.locator('body').innerText(), /Connect a device/);
    assert.equal(await overflows(), false, 'the code page fits 390 px');
    await page.screenshot({ path: join(RESULTS, 'device-code.png'), fullPage: true });
    assert.ok((await stat(join(RESULTS, 'device-code.png'))).size > 1000, 'the code page screenshot is saved');

    // The person confirms the code, typed in lower case without the dash, and signs in.
    await page.fill('input[name="user_code"]', device.user_code.replace('-', '').toLowerCase());
    await Promise.all([page.waitForURL(new RegExp(`^${issuer}/interaction/`)), page.locator('button[type="submit"]').click()]);
    await page.fill('input[name="username"]', USER.username);
    await page.fill('input[name="password"]', USER.password);
    await Promise.all([page.waitForURL(new RegExp(`^${issuer}/interaction/`)), page.locator('button[type="submit"]').click()]);

    // The device consent: says a device asks, names the client, shows the code to compare.
    const approve = page.locator('button[name="decision"][value="approve"]');
    await approve.waitFor();
    const consentText = await page.locator('body').innerText();
    assert.match(consentText, /A device is asking/);
    assert.ok(consentText.includes('E2E Living-room TV'), 'names the client');
    assert.ok(consentText.includes(device.user_code), 'shows the code');
    assert.ok(consentText.includes('mcp:tools'), 'names the scope');
    assert.equal(await overflows(), false, 'the device consent fits 390 px');
    await page.screenshot({ path: join(RESULTS, 'device-consent.png'), fullPage: true });
    assert.ok((await stat(join(RESULTS, 'device-consent.png'))).size > 1000, 'the device consent screenshot is saved');

    await Promise.all([page.waitForLoadState(), approve.click()]);
    await page.locator('h1', { hasText: 'Device connected' }).waitFor();
    assert.match(await page.locator('body').innerText(), /You can return to your device/);
    assert.deepEqual(violations, [], 'no CSP violations on our pages');
    await context.close();

    // The device's next poll (after its interval) gets the tokens.
    await new Promise((resolve) => setTimeout(resolve, device.interval * 1000));
    const answer = await poll();
    assert.equal(answer.status, 200, await answer.clone().text());
    const tokens = (await answer.json()) as { access_token: string; refresh_token?: string; token_type: string };
    assert.equal(tokens.token_type, 'Bearer');
    assert.ok(tokens.refresh_token);
    const claims = jwtClaims(tokens.access_token);
    assert.equal(claims.aud, `${issuer}/mcp`);
    assert.equal(claims.client_id, clientId);
  });
});
