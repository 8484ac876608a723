/**
 * The device sign-in end to end, as a person on a headless machine does it: `context-auth login
 * --device` (the built CLI, a child process) against the built `context-auth serve`, which it
 * discovers and registers with; the person opens the page the CLI prints in a real browser
 * (Chromium) on "another device", confirms the code, signs in and approves; the CLI's polling
 * gets the tokens, and `context-auth call` then reaches the protected demo server with them. Once
 * with bearer tokens, once with `--dpop` (tokens bound to a key the CLI keeps with the grant,
 * which are refused when sent without a proof). And one credentials file signed in every way (in
 * the browser, with --dpop, with --device) registers the CLI once. Run `npx tsc -p tsconfig.build.json` first.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Browser } from 'playwright-core';
import { Browser as FetchBrowser, jwtClaims, signInAndConsent } from '../helpers/harness.js';
import { cli, cliWithEnv, freePort, startCli, startServe, tempDataFolder, type RunningServer } from './serve-process.js';
import { launchChromium } from './chromium.js';

const USER = { username: 'dana', password: 'device sign-in works' };
const DEVICE_LINES =
  /open this page on any device with a browser:\n {2}(\S+)\nand enter the code ([A-Z]{4}-[A-Z]{4})\nor open this page, with the code already filled in:\n {2}(\S+)\n/;

interface StoredGrant {
  accessToken: string;
  refreshToken?: string;
  tokenType?: string;
  dpopKey?: unknown;
}

describe('context-auth login --device against context-auth serve', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  const home = tempDataFolder();
  let server: RunningServer;
  let browser: Browser;

  before(async () => {
    const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet']);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  /** The person: opens the page with the code, confirms it, signs in and approves. */
  async function approveOnAnotherDevice(complete: string, code: string): Promise<void> {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    try {
      const page = await context.newPage();
      await page.goto(complete);
      assert.equal(await page.inputValue('input[name="user_code"]'), code);
      await Promise.all([page.waitForURL(/\/interaction\//), page.locator('button[type="submit"]').click()]);
      await page.fill('input[name="username"]', USER.username);
      await page.fill('input[name="password"]', USER.password);
      await Promise.all([page.waitForURL(/\/interaction\//), page.locator('button[type="submit"]').click()]);
      const approve = page.locator('button[name="decision"][value="approve"]');
      await approve.waitFor();
      assert.ok((await page.locator('body').innerText()).includes(code), 'the consent shows the code the CLI printed');
      await Promise.all([page.waitForLoadState(), approve.click()]);
      await page.locator('h1', { hasText: 'Device connected' }).waitFor();
    } finally {
      await context.close();
    }
  }

  for (const dpop of [false, true]) {
    it(`signs in with the device flow${dpop ? ' and DPoP' : ''}, then calls whoami`, async () => {
      const mcp = `${server.issuer}/mcp`;
      const credentials = join(home, `credentials-${dpop ? 'dpop' : 'bearer'}.json`);
      const env = { CONTEXT_AUTH_CREDENTIALS: credentials };
      const running = startCli(['login', mcp, '--device', '--credentials', credentials, ...(dpop ? ['--dpop'] : [])], { timeoutMs: 90_000 });
      const [, page, code, complete] = await running.waitForStderr(DEVICE_LINES);
      assert.equal(page, `${server.issuer}/device`);
      await approveOnAnotherDevice(complete!, code!);

      const result = await running.exit;
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, new RegExp(`^Logged in to ${mcp}\n`));
      const file = JSON.parse(readFileSync(credentials, 'utf8')) as { applications: Record<string, { grants: Record<string, StoredGrant> }> };
      const grants = Object.values(file.applications).flatMap((application) => Object.values(application.grants));
      assert.equal(grants.length, 1);
      const grant = grants[0]!;
      assert.ok(grant.refreshToken, 'a refresh token came with it');
      const claims = jwtClaims(grant.accessToken);
      assert.equal(claims.aud, mcp, 'the token is for the demo server');
      assert.equal(claims.cnf !== undefined, dpop, dpop ? 'bound to the key (cnf.jkt)' : 'a bearer token');
      if (dpop) assert.ok(grant.dpopKey, 'the key is kept with the grant');

      const whoami = await cliWithEnv(['call', mcp, 'tools/call', '{"name":"whoami"}', '--credentials', credentials], { env });
      assert.equal(whoami.code, 0, whoami.stderr);
      assert.equal((JSON.parse(whoami.stdout) as { structuredContent: { username: string } }).structuredContent.username, USER.username);

      if (dpop) {
        const asBearer = await fetch(mcp, {
          method: 'POST',
          headers: { authorization: `Bearer ${grant.accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        });
        assert.equal(asBearer.status, 401, 'the bound token alone is refused');
      }
    });
  }

  it('registers the CLI once for one credentials file, whether it signs in in the browser, with --dpop or with --device', async () => {
    const mcp = `${server.issuer}/mcp`;
    const credentials = join(home, 'credentials-every-way.json');
    const cliClients = async (): Promise<string[]> => {
      const listed = await cli(['clients', 'list', '--json', '--data', data]);
      assert.equal(listed.code, 0, listed.stderr);
      return (JSON.parse(listed.stdout) as { client_id: string; client_name: string }[])
        .filter((c) => c.client_name === 'context-auth CLI')
        .map((c) => c.client_id);
    };
    const before = await cliClients();

    for (const flags of [[], ['--dpop']]) {
      const running = startCli(['login', mcp, '--no-browser', '--credentials', credentials, ...flags], { timeoutMs: 60_000 });
      const [, href] = await running.waitForStderr(/^(http:\/\/\S+\/authorize\?\S+)$/m);
      const authorization = new URL(href!);
      const person = new FetchBrowser((path, init) => fetch(new URL(path, server.issuer), init));
      const callback = await signInAndConsent(person, await person.fetch(authorization.pathname + authorization.search), USER, 'approve', server.issuer);
      assert.equal((await fetch(callback)).status, 200);
      const result = await running.exit;
      assert.equal(result.code, 0, result.stderr);
    }
    const device = startCli(['login', mcp, '--device', '--credentials', credentials], { timeoutMs: 90_000 });
    const [, , code, complete] = await device.waitForStderr(DEVICE_LINES);
    await approveOnAnotherDevice(complete!, code!);
    const result = await device.exit;
    assert.equal(result.code, 0, result.stderr);

    const added = (await cliClients()).filter((id) => !before.includes(id));
    assert.equal(added.length, 1, `one registration for three sign-ins: ${added.join(', ')}`);
  });
});
