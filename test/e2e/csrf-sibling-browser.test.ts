/**
 * The cross-site request forgery of a sibling subdomain, in a real browser (Debian's Chromium,
 * driven by playwright-core, no script) against the built `context-auth serve` on an https issuer,
 * https://auth.example.test: the attacker's page at https://evil.example.test sets
 * `ca_browser=KNOWN; Domain=example.test; Path=/admin` (and tries the same with the `__Host-`
 * name), then the person presses its button, which posts our form with the token our page gives
 * to a browser whose binding is KNOWN. An administrator who just signed in makes nobody an
 * administrator; a person with no session is not signed in as the attacker; and the console's
 * own forms still work. Both sites are this machine (--host-resolver-rules) with a self-signed
 * certificate. Run `npx tsc -p tsconfig.build.json` first.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, request as httpsRequest, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { selfSignedCertificate } from '../helpers/self-signed.js';
import { launchChromium } from './chromium.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const PARENT = 'example.test';
const KNOWN = 'K'.repeat(43);
const ADMIN = { username: 'root', password: 'correct horse battery' };
const MALLORY = { username: 'mallory', password: 'another good password' };

/** What the attacker's page does next: the cookies its answer sets, and the form it shows. */
interface Attack {
  cookies: string[];
  action: string;
  fields: Record<string, string>;
}

async function ok(args: string[], input?: string): Promise<string> {
  const result = await cli(args, input);
  assert.equal(result.code, 0, result.stderr);
  return result.stdout;
}

describe('a sibling subdomain against the console and the account page, in Chromium', () => {
  const data = tempDataFolder();
  const tls = selfSignedCertificate();
  let server: RunningServer | undefined;
  let evil: Server | undefined;
  let browser: Browser | undefined;
  let auth = '';
  let evilOrigin = '';
  let attack: Attack | undefined;

  before(async () => {
    await ok(['users', 'add', ADMIN.username, '--admin', '--data', data], `${ADMIN.password}\n`);
    await ok(['users', 'add', MALLORY.username, '--data', data], `${MALLORY.password}\n`);
    const port = await freePort();
    auth = `https://auth.${PARENT}:${port}`;
    server = await startServe(['--port', String(port), '--data', data, '--tls-cert', tls.certPath, '--tls-key', tls.keyPath, '--issuer', auth]);
    evil = createServer({ cert: readFileSync(tls.certPath), key: readFileSync(tls.keyPath) }, (_, response) => {
      const { cookies, action, fields } = attack!;
      const inputs = Object.entries(fields)
        .map(([name, value]) => `<input type="hidden" name="${name}" value="${value}">`)
        .join('');
      response.writeHead(200, { 'content-type': 'text/html', 'set-cookie': cookies });
      response.end(`<!doctype html><form method="post" action="${action}">${inputs}<button type="submit">Claim your prize</button></form>`);
    }).listen(0, '127.0.0.1');
    await once(evil, 'listening');
    evilOrigin = `https://evil.${PARENT}:${(evil.address() as AddressInfo).port}`;
    browser = await launchChromium([`--host-resolver-rules=MAP *.${PARENT} 127.0.0.1`]);
  });

  after(async () => {
    await browser?.close();
    evil?.close();
    await server?.stop();
  });

  /** A person's browser: no script, the self-signed certificate taken. */
  const person = (): Promise<BrowserContext> => browser!.newContext({ ignoreHTTPSErrors: true, javaScriptEnabled: false });

  /**
   * The token our page at `path` gives a browser whose binding is KNOWN, as the attacker reads it
   * with a request of their own (both names, so whichever the server reads).
   */
  function tokenForKnown(path: string): Promise<string> {
    return new Promise((resolve, reject) => {
      // The sibling's server reaches ours at its address; the host name only matters to the browser.
      const url = `https://127.0.0.1:${new URL(auth).port}${path}`;
      const request = httpsRequest(url, { rejectUnauthorized: false, headers: { cookie: `ca_browser=${KNOWN}; __Host-ca_browser=${KNOWN}` } }, (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => {
          const csrf = /name="csrf" value="([^"]+)"/.exec(body)?.[1];
          if (csrf) resolve(csrf);
          else reject(new Error(`no form at ${path}: ${body.slice(0, 300)}`));
        });
      });
      request.on('error', reject);
      request.end();
    });
  }

  /** The cookies the sibling's answer sets for `path`: the plain name, and the same with the prefix, which Chromium must refuse. */
  const planted = (path: string): string[] => [
    `ca_browser=${KNOWN}; Domain=${PARENT}; Path=${path}; Secure; HttpOnly; SameSite=Lax`,
    `__Host-ca_browser=${KNOWN}; Domain=${PARENT}; Path=/; Secure; HttpOnly; SameSite=Lax`,
  ];

  /** The person visits the attacker's page and presses its button: our answer to the post it makes. */
  async function pressAttackersButton(page: Page, target: string) {
    await page.goto(`${evilOrigin}/`);
    const [response] = await Promise.all([
      page.waitForResponse((answer) => answer.url() === target && answer.request().method() === 'POST'),
      page.locator('button[type="submit"]').click(),
    ]);
    return response;
  }

  const admins = async (): Promise<Record<string, boolean>> =>
    Object.fromEntries(
      (JSON.parse(await ok(['users', 'list', '--json', '--data', data])) as { username: string; admin: boolean }[]).map((user) => [user.username, user.admin]),
    );

  it("an administrator who just signed in, then visits the attacker's page, makes nobody an administrator", { timeout: 120_000 }, async () => {
    const context = await person();
    const page = await context.newPage();
    await page.goto(`${auth}/admin/people`);
    await page.fill('input[name="username"]', ADMIN.username);
    await page.fill('input[name="password"]', ADMIN.password);
    await Promise.all([page.waitForURL(`${auth}/admin/people`), page.locator('button[type="submit"]', { hasText: 'Sign in' }).click()]);
    assert.match(await page.locator('main').innerText(), /Signed in as root/);

    attack = {
      cookies: planted('/admin'),
      action: `${auth}/admin`,
      fields: { csrf: await tokenForKnown('/admin'), action: 'set-admin', username: MALLORY.username, admin: 'on', return: 'people' },
    };
    const response = await pressAttackersButton(page, `${auth}/admin`);
    assert.deepEqual(await admins(), { mallory: false, root: true });
    assert.equal(response.status(), 403);
    assert.match(await page.locator('main').innerText(), /sent from another site/);
    await server!.waitForOutput(new RegExp(`"event":"page_form_refused"[^\\n]*"origin":"${evilOrigin}"`));
    // What Chromium sent: the sibling's origin, same-site, the planted cookie first, then ours and the session.
    const sent = await response.request().allHeaders();
    assert.equal(sent.origin, evilOrigin);
    assert.equal(sent['sec-fetch-site'], 'same-site');
    assert.match(sent.cookie ?? '', new RegExp(`^ca_browser=${KNOWN}; __Host-ca_browser=[A-Za-z0-9_-]{43}; __Host-ca_session=`));
    assert.ok(
      !(await context.cookies()).some((cookie) => cookie.name.startsWith('__Host-') && cookie.domain === `.${PARENT}`),
      'no __Host- cookie from the sibling',
    );

    // The console's own button still works.
    await page.goto(`${auth}/admin/people`);
    await Promise.all([
      page.waitForURL(/\/admin\/people\?done=set-admin&/),
      page.locator(`button[aria-label="Make administrator: ${MALLORY.username}"]`).click(),
    ]);
    assert.deepEqual(await admins(), { mallory: true, root: true });
    await ok(['users', 'admin', MALLORY.username, 'off', '--data', data]);
    await context.close();
  });

  it('a person with no session is not signed in as the attacker at /account (login CSRF)', { timeout: 60_000 }, async () => {
    const context = await person();
    const page = await context.newPage();
    attack = {
      cookies: planted('/account'),
      action: `${auth}/account`,
      fields: { csrf: await tokenForKnown('/account'), action: 'sign-in', username: MALLORY.username, password: MALLORY.password },
    };
    const response = await pressAttackersButton(page, `${auth}/account`);
    assert.ok(!(await context.cookies()).some((cookie) => cookie.name.includes('ca_session')), 'no session');
    assert.equal(response.status(), 403);
    assert.equal((await response.request().allHeaders()).cookie, `ca_browser=${KNOWN}`, 'the planted cookie is the only one sent');
    // The person's own sign-in there works.
    await page.goto(`${auth}/account`);
    await page.fill('input[name="username"]', ADMIN.username);
    await page.fill('input[name="password"]', ADMIN.password);
    await Promise.all([page.waitForURL(`${auth}/account`), page.locator('button[type="submit"]', { hasText: 'Sign in' }).click()]);
    assert.match(await page.locator('main').innerText(), /Signed in as root/);
    await context.close();
  });
});
