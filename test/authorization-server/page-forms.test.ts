/**
 * Every form of our pages (/account, /admin, /device, /interaction/:id) is read in one place
 * (http/page-form.ts), which refuses, before the form's own checks, a post a browser says came from
 * another site (its Origin, else its Sec-Fetch-Site), and a post that sends one of our cookies twice.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEVICE_CODE_GRANT_TYPE } from '../../src/core/protocol.js';
import {
  addUser,
  authorizationRequest,
  authorizeUrl,
  Browser,
  createHarness,
  parseForm,
  postForm,
  REDIRECT_URI,
  REVISIONS,
  type Harness,
  type HarnessOptions,
} from '../helpers/harness.js';

const USER = { username: 'alice', password: 'correct horse battery' };

/** A browser on one of our pages, ready to post its form as the person would: the form's path and fields. */
interface ReadyForm {
  browser: Browser;
  path: string;
  values: Record<string, string>;
}

/** Each page with a form, opened in a new browser; the post signs alice in (or, at /device, takes a code). */
const FORMS: Record<string, (h: Harness) => Promise<ReadyForm>> = {
  account: async (h) => {
    const browser = new Browser(h);
    const { action, csrf } = parseForm(await (await browser.fetch(`${base(h)}/account`)).text());
    return { browser, path: action, values: { csrf, action: 'sign-in', ...USER } };
  },
  admin: async (h) => {
    const browser = new Browser(h);
    const { action, csrf } = parseForm(await (await browser.fetch(`${base(h)}/admin`)).text());
    return { browser, path: action, values: { csrf, action: 'sign-in', ...USER } };
  },
  device: async (h) => {
    const client = await register(h, { grant_types: [DEVICE_CODE_GRANT_TYPE] });
    const device = (await (await postForm(h, `${base(h)}/device_authorization`, { client_id: client.client_id })).json()) as { user_code: string };
    const browser = new Browser(h);
    const { action, csrf } = parseForm(await (await browser.fetch(`${base(h)}/device`)).text());
    return { browser, path: action, values: { csrf, user_code: device.user_code } };
  },
  interaction: async (h) => {
    const client = await register(h, { redirect_uris: [REDIRECT_URI] });
    const browser = new Browser(h);
    const started = await browser.fetch(`${base(h)}${authorizeUrl(authorizationRequest(client, REVISIONS[1]).params)}`);
    const { action, csrf } = parseForm(await (await browser.fetch(started.headers.get('location')!)).text());
    return { browser, path: action, values: { csrf, step: 'login', ...USER } };
  },
};

const base = (h: Harness): string => new URL(h.options.issuer).pathname.replace(/\/$/, '');

/** A public client registered at the issuer (under its path, if it has one). */
async function register(h: Harness, metadata: Record<string, unknown>): Promise<{ client_id: string }> {
  const response = await h.request(`${base(h)}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token_endpoint_auth_method: 'none', ...metadata }),
  });
  assert.equal(response.status, 201, await response.clone().text());
  return (await response.json()) as { client_id: string };
}

async function harness(options: HarnessOptions = {}): Promise<Harness> {
  const h = createHarness(options);
  await addUser(h);
  return h;
}

/** The post was taken: a redirect onward (signed in, or the code's interaction). */
async function assertAccepted(response: Response, what: string): Promise<void> {
  assert.equal(response.status, 303, `${what}: ${await response.clone().text()}`);
}

async function assertRefused(response: Response, message: RegExp, what: string): Promise<void> {
  const html = await response.text();
  assert.equal(response.status, 403, `${what}: ${html}`);
  assert.match(html, message, what);
  assert.equal(response.headers.getSetCookie().length, 0, `${what}: no cookie set`);
}

for (const [name, open] of Object.entries(FORMS)) {
  describe(`the ${name} form, posted from another site`, () => {
    for (const origin of ['https://evil.example', 'http://127.0.0.1:9998', 'null']) {
      it(`is refused with Origin: ${origin}, and logged`, async () => {
        const h = await harness();
        const form = await open(h);
        const response = await form.browser.submit(form.path, form.values, { origin });
        await assertRefused(response, /sent from another site[^<]*open the page at http:\/\/127\.0\.0\.1:9999 /, origin);
        const path = form.path.replace(/\/interaction\/.*/, '/interaction/:id');
        assert.ok(
          h.log.some((event) => event.event === 'page_form_refused' && event.origin === origin && event.path === path),
          JSON.stringify(h.log.at(-1)),
        );
        assert.ok(!h.log.some((event) => event.event === 'login' || event.event === 'user_code_accepted'), 'nothing done');
      });
    }

    for (const site of ['cross-site', 'same-site']) {
      it(`is refused with no Origin and Sec-Fetch-Site: ${site}`, async () => {
        const h = await harness();
        const form = await open(h);
        await assertRefused(await form.browser.submit(form.path, form.values, { 'sec-fetch-site': site }), /sent from another site/, site);
        assert.ok(h.log.some((event) => event.event === 'page_form_refused' && event.sec_fetch_site === site));
      });
    }

    it('is taken from our own origin, and without either header (the token still holds)', async () => {
      const cases: Record<string, string>[] = [
        { origin: 'http://127.0.0.1:9999', 'sec-fetch-site': 'same-origin' },
        { 'sec-fetch-site': 'same-origin' },
        { 'sec-fetch-site': 'none' },
        {},
      ];
      for (const headers of cases) {
        const h = await harness();
        const form = await open(h);
        await assertAccepted(await form.browser.submit(form.path, form.values, headers), JSON.stringify(headers));
      }
    });

    it('compares Origin with the issuer, not with the address the request reached (behind a proxy)', async () => {
      const h = await harness({ issuer: 'https://auth.example.com' });
      const form = await open(h);
      // The harness's requests reach http://127.0.0.1:9999, as a proxy's would reach serve.
      await assertRefused(
        await form.browser.submit(form.path, form.values, { origin: 'http://127.0.0.1:9999' }),
        /sent from another site/,
        'the internal origin',
      );
      await assertAccepted(await form.browser.submit(form.path, form.values, { origin: 'https://auth.example.com' }), 'the issuer');
    });

    it('is refused when a cookie of ours comes twice, and logged', async () => {
      const h = await harness();
      const form = await open(h);
      const binding = form.browser.cookie('ca_browser')!;
      // A cookie of ours set for a deeper path by another program on this host is sent first (RFC 6265 §5.4).
      const cookie = `ca_browser=${'A'.repeat(43)}; ${form.browser.cookieHeader()}`;
      const response = await h.request(form.path, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form.values),
      });
      await assertRefused(response, /sent two cookies named ca_browser/, 'two bindings');
      assert.ok(binding);
      assert.equal(h.log.filter((event) => event.event === 'cookie_duplicated' && event.cookie === 'ca_browser').length, 1, 'one line per request');
    });
  });
}

describe('the forms of an issuer with a path', () => {
  it("are refused from another origin and taken from the issuer's", async () => {
    const h = await harness({ issuer: 'http://127.0.0.1:9999/auth' });
    for (const open of Object.values(FORMS)) {
      const form = await open(h);
      assert.match(form.path, /^\/auth\//);
      await assertRefused(
        await form.browser.submit(form.path, form.values, { origin: 'http://127.0.0.1:9998' }),
        /open the page at http:\/\/127\.0\.0\.1:9999\/auth /,
        form.path,
      );
      await assertAccepted(await form.browser.submit(form.path, form.values, { origin: 'http://127.0.0.1:9999' }), form.path);
    }
  });
});
