/**
 * The admin console in a real browser (Debian's Chromium, driven by playwright-core, no script)
 * against the built `context-auth serve` on SQLite: an administrator signs in at /admin and every
 * page in the navigation is checked for what a keyboard or screen-reader user needs: a label on
 * every field, a name on every button and link, no positive tabindex, a focus order that follows
 * the document, text contrast of at least 4.5:1 (3:1 for large text) in the light and the dark
 * scheme, and no sideways scroll at 390 px. Every table fits its box at 1280 px (no column cut
 * off); at 390 px a table wider than its box scrolls inside it, a shadow on its right edge saying
 * so until it is scrolled to its end. Screenshots of Activity and Sign-in throttling at 1280 px
 * and 390 px go to test-results/. Run `npx tsc -p tsconfig.build.json` first.
 */
import assert from 'node:assert/strict';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Browser, type Page } from 'playwright-core';
import { ADMIN_SECTIONS } from '../../src/authorization-server/admin/sections.js';
import { DATABASE_FILE } from '../../src/cli/data.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { storedEvent } from '../helpers/stored-audit-events.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';
import { launchChromium } from './chromium.js';
import { scrollTableToEnd, tableLayouts } from './table-layout.js';

const RESULTS = join(process.cwd(), 'test-results');
const ADMIN = { username: 'root', password: 'correct horse battery' };

/*
 * The checks run in the page, as text: a function compiled by the test's loader may carry
 * helpers the page does not have.
 */

/** Fields without a label, buttons and links without a name, elements with a positive tabindex. */
const UNNAMED = `(() => {
  const problems = [];
  const describe = (el) => el.outerHTML.slice(0, 120);
  const labelled = (el) => (el.id && document.querySelector('label[for="' + CSS.escape(el.id) + '"]')) || el.getAttribute('aria-label')?.trim() || el.getAttribute('aria-labelledby');
  for (const el of document.querySelectorAll('input:not([type=hidden]), select, textarea')) if (!labelled(el)) problems.push('no label: ' + describe(el));
  for (const el of document.querySelectorAll('button, a[href], [role=button]')) {
    const name = el.getAttribute('aria-label')?.trim() || el.textContent.trim() || el.querySelector('img[alt]')?.alt.trim();
    if (!name) problems.push('no accessible name: ' + describe(el));
  }
  for (const el of document.querySelectorAll('[tabindex]')) if (Number(el.getAttribute('tabindex')) > 0) problems.push('positive tabindex: ' + describe(el));
  return problems;
})()`;

/** What Tab should reach, in document order: visible, enabled focusable elements. */
const FOCUSABLE_ELEMENTS = `[...document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, [tabindex]')]
  .filter((el) => !el.disabled && el.getAttribute('tabindex') !== '-1' && el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden')`;
const FOCUSABLE = `${FOCUSABLE_ELEMENTS}.map((el) => el.outerHTML.slice(0, 100))`;
const FOCUS_FIRST = `${FOCUSABLE_ELEMENTS}[0]?.focus()`;

const ACTIVE = `document.activeElement ? document.activeElement.outerHTML.slice(0, 100) : ''`;

/** Text whose contrast with what is behind it is too low: every element with text of its own. */
const LOW_CONTRAST = `(() => {
  const parse = (value) => {
    const m = /rgba?\\(([\\d.]+),\\s*([\\d.]+),\\s*([\\d.]+)(?:,\\s*([\\d.]+))?\\)/.exec(value);
    return m ? [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])] : null;
  };
  const over = (top, bottom) => [0, 1, 2].map((i) => top[i] * top[3] + bottom[i] * (1 - top[3])).concat(1);
  const background = (el) => {
    const layers = [];
    for (let node = el; node; node = node.parentElement) {
      const color = parse(getComputedStyle(node).backgroundColor);
      if (color && color[3] > 0) layers.push(color);
      if (color && color[3] === 1) break;
    }
    let result = layers.length && layers[layers.length - 1][3] === 1 ? layers.pop() : (matchMedia('(prefers-color-scheme: dark)').matches ? [0, 0, 0, 1] : [255, 255, 255, 1]);
    while (layers.length) result = over(layers.pop(), result);
    return result;
  };
  const luminance = (rgb) => {
    const [r, g, b] = rgb.slice(0, 3).map((c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const problems = [];
  for (const el of document.querySelectorAll('body *')) {
    const own = [...el.childNodes].some((node) => node.nodeType === 3 && node.textContent.trim() !== '');
    if (!own || el.closest('.visually-hidden, option')) continue;
    const rect = el.getBoundingClientRect();
    if (rect.width === 0 || rect.height === 0 || rect.right < 0 || rect.bottom < 0) continue;
    const style = getComputedStyle(el);
    const back = background(el);
    const fore = parse(style.color);
    if (!fore) { problems.push('unreadable color ' + style.color); continue; }
    const a = luminance(over(fore, back)), b = luminance(back);
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
    const needed = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < needed) problems.push(ratio.toFixed(2) + ':1 (' + style.color + ' on rgb(' + back.slice(0, 3).map(Math.round).join(', ') + ')): ' + el.outerHTML.slice(0, 80));
  }
  return problems;
})()`;

const OVERFLOWS = 'document.documentElement.scrollWidth > document.documentElement.clientWidth';

/** Everything the checks find on the page as it is now, each prefixed with where. */
async function check(page: Page, where: string): Promise<string[]> {
  const problems: string[] = [];
  problems.push(...((await page.evaluate(UNNAMED)) as string[]));
  // Focus order: from the first focusable element (an autofocused field would otherwise be the
  // start), Tab reaches each of the others once, in the document's order.
  const expected = (await page.evaluate(FOCUSABLE)) as string[];
  await page.evaluate(FOCUS_FIRST);
  const reached: string[] = expected.length > 0 ? [(await page.evaluate(ACTIVE)) as string] : [];
  for (let i = 1; i < expected.length; i++) {
    await page.keyboard.press('Tab');
    reached.push((await page.evaluate(ACTIVE)) as string);
  }
  if (JSON.stringify(reached) !== JSON.stringify(expected))
    problems.push(`focus order differs from the document:\n  expected ${expected.join('\n    ')}\n  reached ${reached.join('\n    ')}`);
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    problems.push(...((await page.evaluate(LOW_CONTRAST)) as string[]).map((problem) => `${scheme}: ${problem}`));
  }
  await page.emulateMedia({ colorScheme: 'light' });
  const width = page.viewportSize()!;
  await page.setViewportSize({ width: 1280, height: 900 });
  for (const table of await tableLayouts(page)) {
    if (table.scrolls) problems.push(`table "${table.name}" is wider than its box at 1280 px: its last columns are cut off`);
    if (table.shadow.left || table.shadow.right) problems.push(`table "${table.name}" fits at 1280 px, yet a shadow says it scrolls`);
  }
  await page.setViewportSize({ width: 390, height: 844 });
  if ((await page.evaluate(OVERFLOWS)) as boolean) problems.push('scrolls sideways at 390 px');
  problems.push(...(await scrollHints(page)));
  await page.setViewportSize(width);
  return problems.map((problem) => `${where}: ${problem}`);
}

/** At a phone's width: a table that scrolls says so with a shadow on the side there is more, and only there. */
async function scrollHints(page: Page): Promise<string[]> {
  const problems: string[] = [];
  for (const [i, table] of (await tableLayouts(page)).entries()) {
    if (!table.scrolls) {
      if (table.shadow.left || table.shadow.right) problems.push(`table "${table.name}" fits at 390 px, yet a shadow says it scrolls`);
      continue;
    }
    if (!table.shadow.right || table.shadow.left)
      problems.push(`table "${table.name}" scrolls at 390 px: a shadow should mark its right edge only, not ${JSON.stringify(table.shadow)}`);
    await scrollTableToEnd(page, i);
    const end = (await tableLayouts(page))[i]!;
    if (end.shadow.right || !end.shadow.left)
      problems.push(`table "${table.name}" scrolled to its end: a shadow should mark its left edge only, not ${JSON.stringify(end.shadow)}`);
  }
  return problems;
}

describe('the admin console in a real browser: every page usable by keyboard and screen reader', () => {
  const data = tempDataFolder();
  let server: RunningServer | undefined;
  let browser: Browser | undefined;

  before(async () => {
    const added = await cli(['users', 'add', ADMIN.username, '--data', data], `${ADMIN.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    // Before the server starts: mark the administrator and put some events where the pages read them.
    const store = openSqliteStore({ path: join(data, DATABASE_FILE) });
    assert.equal(await store.setUserAdmin(ADMIN.username, true), true);
    const now = Date.now();
    await store.recordAuditEvents([
      storedEvent({ event: 'login_failed', address: '203.0.113.5', clientId: 'https://notes.example/client-metadata.json', occurredAt: now - 9_000 }),
      storedEvent({ event: 'login_throttled', address: '203.0.113.5', occurredAt: now - 8_000 }),
      storedEvent({ event: 'user_code_wrong', address: '2001:db8:1:2::/64', occurredAt: now - 7_000 }),
      storedEvent({ event: 'rate_limited', address: '2001:db8:1:2::/64', occurredAt: now - 6_000, details: { limit: 'token', refused: 12 } }),
      storedEvent({
        event: 'token_issued',
        outcome: 'success',
        clientId: 'a-rather-long-client-identifier-0123456789abcdef',
        grantId: 'g1',
        occurredAt: now - 5_000,
        details: { grant_type: 'authorization_code' },
      }),
    ]);
    await store.close();
    server = await startServe(['--port', String(await freePort()), '--data', data]);
    await mkdir(RESULTS, { recursive: true });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('sign in at /admin, then every page in the navigation passes the checks', { timeout: 180_000 }, async () => {
    const issuer = server!.issuer;
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, javaScriptEnabled: false });
    const page = await context.newPage();
    const problems: string[] = [];

    await page.goto(`${issuer}/admin`);
    problems.push(...(await check(page, 'sign-in')));
    await page.fill('input[name="username"]', ADMIN.username);
    await page.fill('input[name="password"]', ADMIN.password);
    await Promise.all([page.waitForURL(`${issuer}/admin`), page.locator('button[type="submit"]').click()]);

    const nav = (await page
      .locator('nav[aria-label="Admin console"] a')
      .evaluateAll((links) => links.map((link) => [link.textContent, link.getAttribute('href')]))) as [string, string][];
    // On SQLite, which has every capability, the navigation lists every page the console has.
    assert.deepEqual(
      nav.map(([title]) => title),
      ADMIN_SECTIONS.map((section) => section.title),
    );
    for (const [title, href] of nav) {
      await page.goto(new URL(href, issuer).href);
      assert.equal(await page.locator('h1').innerText(), title);
      problems.push(...(await check(page, title)));
    }
    // A filtered page with the unknown-person message, and the page a bad filter gets.
    await page.goto(`${issuer}/admin/activity?event=login_failed&person=nobody`);
    problems.push(...(await check(page, 'Activity, unknown person')));
    const refused = await page.goto(`${issuer}/admin/activity?event=made_up`);
    assert.equal(refused?.status(), 400);
    problems.push(...(await check(page, 'Activity, bad filter')));
    assert.deepEqual(problems, []);

    for (const [name, path] of [
      ['overview', '/admin'],
      ['activity', '/admin/activity'],
      ['throttle', '/admin/throttle'],
    ] as const) {
      await page.setViewportSize({ width: 1280, height: 900 });
      await page.goto(`${issuer}${path}`);
      await page.screenshot({ path: join(RESULTS, `admin-${name}-1280.png`), fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.screenshot({ path: join(RESULTS, `admin-${name}-390.png`), fullPage: true });
      for (const width of [1280, 390]) assert.ok((await stat(join(RESULTS, `admin-${name}-${width}.png`))).size > 1000);
    }
    await context.close();
  });
});
