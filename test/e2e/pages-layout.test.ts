/**
 * The pages as a person sees them, in Debian's Chromium at a phone's width (360 px) and a
 * desktop's (1280 px): the consent page (served by its real renderer with its real headers) must
 * not scroll sideways, and a client id, host or URL may wrap only between its parts, never
 * inside one; the client's loopback pages are styled and say their heading once; the console's
 * re-authentication names the change waiting for it and fits both widths.
 * Screenshots go to test-results/.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startLoopback } from '../../src/client/loopback.js';
import { CONSENT_CASES, REAUTH_CHANGE, serveConsentPages } from './pages-fixture.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const RESULTS = join(process.cwd(), 'test-results');
const WIDTHS = [360, 1280] as const;

interface Layout {
  /** The page is wider than the window. */
  overflows: boolean;
  /** Per identifier on the page: its text, how many lines it takes, and the parts that are split over lines. */
  tokens: { text: string; lines: number; splitParts: string[] }[];
}

/**
 * Measures in the page: the lines each identifier and each of its parts take, from the rects of
 * their text (one per line fragment; a line is a distinct top). Passed as source text: the test's
 * compiler would add helpers to a function that the page does not have.
 */
const MEASURE = `(() => {
  const linesOf = (node) => {
    const tops = new Set();
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
      const range = document.createRange();
      range.selectNodeContents(text);
      for (const r of range.getClientRects()) if (r.width > 0) tops.add(Math.round(r.top));
    }
    return tops.size;
  };
  const tokens = [...document.querySelectorAll('code.token')].map((code) => ({
    text: code.textContent,
    lines: linesOf(code),
    splitParts: [...code.querySelectorAll('span')].filter((part) => linesOf(part) > 1).map((part) => part.textContent),
  }));
  const root = document.documentElement;
  return { overflows: root.scrollWidth > root.clientWidth, tokens };
})()`;

function measure(page: Page): Promise<Layout> {
  return page.evaluate(MEASURE) as Promise<Layout>;
}

const CARD = `(() => {
  const main = document.querySelector('main');
  const box = main.getBoundingClientRect();
  return { font: getComputedStyle(document.body).fontFamily, radius: getComputedStyle(main).borderTopLeftRadius, left: box.left, right: window.innerWidth - box.right };
})()`;

describe('the pages in a real browser at 360 px and 1280 px', () => {
  let browser: Browser;
  let consent: { url: (name: keyof typeof CONSENT_CASES | 'reauth') => string; server: Server };

  before(async () => {
    await mkdir(RESULTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM });
    consent = await serveConsentPages();
  });

  after(async () => {
    await browser?.close();
    consent?.server.close();
  });

  for (const width of WIDTHS) {
    for (const name of Object.keys(CONSENT_CASES) as (keyof typeof CONSENT_CASES)[]) {
      it(`consent page, ${name} client, ${width} px: no sideways scroll, identifiers never split inside a part`, async () => {
        const page = await browser.newPage({ viewport: { width, height: 800 } });
        try {
          await page.goto(consent.url(name));
          await page.screenshot({ path: join(RESULTS, `consent-${name}-${width}.png`), fullPage: true });
          const layout = await measure(page);
          assert.equal(layout.overflows, false, 'the page scrolls sideways');
          const input = CONSENT_CASES[name];
          const shown = layout.tokens.map((t) => t.text);
          for (const value of [input.clientId, input.redirectHost, input.resource]) assert.ok(shown.includes(value), `${value} is shown as an identifier`);
          for (const t of layout.tokens) assert.deepEqual(t.splitParts, [], `${t.text} is split inside a part`);
          // A host and a UUID client id are one part each: one line, at any width.
          const single = layout.tokens.filter((t) => !t.text.includes('/'));
          for (const t of single) assert.equal(t.lines, 1, `${t.text} takes ${t.lines} lines`);
          // The id stands on its own line, not in parentheses that could leave a lone ")".
          const application = await page.locator('dd').first().innerText();
          assert.doesNotMatch(application, /[()]/);
        } finally {
          await page.close();
        }
      });
    }
  }

  for (const width of WIDTHS) {
    it(`console re-authentication, ${width} px: names the change waiting for it, no sideways scroll`, async () => {
      const page = await browser.newPage({ viewport: { width, height: 800 } });
      try {
        await page.goto(consent.url('reauth'));
        await page.screenshot({ path: join(RESULTS, `admin-reauth-${width}.png`), fullPage: true });
        const waiting = await page.locator('p.notice[role="status"]').innerText();
        assert.equal(
          waiting,
          `Waiting for this sign-in: ${REAUTH_CHANGE}. Your password makes it at once. Signing in again with Corp SSO brings you back to confirm it.`,
        );
        // Both forms carry the change: the password's and the provider's.
        assert.equal(await page.locator('form input[name="then"][value="remove-client"]').count(), 2);
        assert.equal((await measure(page)).overflows, false, 'the page scrolls sideways');
      } finally {
        await page.close();
      }
    });
  }

  for (const width of WIDTHS) {
    for (const [name, query, heading] of [
      ['signed-in', 'code=abc&state=s', 'Signed in'],
      ['denied', 'error=access_denied&state=s', 'Access denied'],
    ] as const) {
      it(`loopback page, ${name}, ${width} px: styled like the sign-in pages, heading said once`, async () => {
        const loopback = await startLoopback();
        loopback.expectState('s');
        const answered = loopback.wait();
        const page = await browser.newPage({ viewport: { width, height: 800 } });
        try {
          await page.goto(`${loopback.redirectUri}?${query}`);
          await page.screenshot({ path: join(RESULTS, `loopback-${name}-${width}.png`), fullPage: true });
          assert.deepEqual(await page.locator('h1').allInnerTexts(), [heading]);
          const text = await page.locator('main').innerText();
          assert.equal(text.split(heading).length - 1, 1, `"${heading}" once in:\n${text}`);
          const style = (await page.evaluate(CARD)) as { font: string; radius: string; left: number; right: number };
          assert.match(style.font, /system-ui/, 'the stylesheet applied (the CSP allowed it)');
          assert.equal(style.radius, '12px');
          assert.ok(style.left >= 16 && Math.abs(style.left - style.right) <= 1, `the card is centred with a margin: ${JSON.stringify(style)}`);
          assert.equal((await measure(page)).overflows, false);
          await answered;
        } finally {
          await page.close();
          await loopback.close();
        }
      });
    }
  }
});
