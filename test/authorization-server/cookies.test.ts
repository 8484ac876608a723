/**
 * Our cookies: `__Host-` names for an https issuer (a suffix of its own for an issuer with a path),
 * plain names under the issuer's path for an http (loopback) one; and a cookie of ours sent twice
 * read as none, never as "the first one".
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cookieSettings, cookieValues } from '../../src/authorization-server/http/cookies.js';
import { hashSecret } from '../../src/core/secrets.js';
import { addUser, authorizationRequest, authorizeUrl, Browser, createHarness, parseForm, registerClient, REVISIONS } from '../helpers/harness.js';
import { requestFromWeb } from '../../src/authorization-server/http/from-web.js';

/** Signs alice in at /account in a new browser. */
async function signedIn(h: ReturnType<typeof createHarness>, path = '/account'): Promise<{ browser: Browser; setCookies: string[] }> {
  const user = await addUser(h);
  const browser = new Browser(h);
  const page = await browser.fetch(path);
  const setCookies = page.headers.getSetCookie();
  const answer = await browser.submit(path, { csrf: parseForm(await page.text()).csrf, action: 'sign-in', username: user.username, password: user.password });
  assert.equal(answer.status, 303, await answer.clone().text());
  return { browser, setCookies: [...setCookies, ...answer.headers.getSetCookie()] };
}

const attributesOf = (line: string): string[] =>
  line
    .split(';')
    .slice(1)
    .map((part) => part.trim());

describe('cookie names and attributes', () => {
  it('an https issuer: __Host- names, Secure, Path=/, no Domain', async () => {
    assert.deepEqual(cookieSettings('https://auth.example.com'), {
      session: '__Host-ca_session',
      browser: '__Host-ca_browser',
      upstream: '__Host-ca_upstream',
      path: '/',
      secure: true,
    });
    const { setCookies } = await signedIn(createHarness({ issuer: 'https://auth.example.com' }));
    assert.deepEqual(
      setCookies.map((line) => line.split('=')[0]),
      ['__Host-ca_browser', '__Host-ca_session'],
    );
    for (const line of setCookies) {
      assert.deepEqual(
        attributesOf(line).filter((attribute) => !attribute.startsWith('Max-Age=')),
        ['Path=/', 'HttpOnly', 'SameSite=Lax', 'Secure'],
        line,
      );
    }
  });

  it('an https issuer with a path: Path=/ as __Host- requires, and names of its own, so other servers on the host keep theirs', async () => {
    const settings = cookieSettings('https://example.com/auth');
    const suffix = `-${hashSecret('/auth').slice(0, 10)}`;
    assert.deepEqual(settings, {
      session: `__Host-ca_session${suffix}`,
      browser: `__Host-ca_browser${suffix}`,
      upstream: `__Host-ca_upstream${suffix}`,
      path: '/',
      secure: true,
    });
    const others = [cookieSettings('https://example.com'), cookieSettings('https://example.com/other'), cookieSettings('https://example.com/auth/inner')];
    for (const other of others) assert.notEqual(other.session, settings.session);
    assert.equal(cookieSettings('https://example.com/auth/').session, settings.session, 'a trailing slash is the same issuer');
    // Every name is a cookie-name token (RFC 6265 §4.1.1), whatever the path.
    for (const path of ['/auth', '/a%20b', '/a;b', '/ä']) assert.match(cookieSettings(`https://example.com${path}`).session, /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/);

    const { setCookies } = await signedIn(createHarness({ issuer: 'https://example.com/auth' }), '/auth/account');
    assert.deepEqual(
      setCookies.map((line) => line.split('=')[0]),
      [settings.browser, settings.session],
    );
    for (const line of setCookies) assert.ok(attributesOf(line).includes('Path=/') && attributesOf(line).includes('Secure'), line);
  });

  it('an http (loopback) issuer: plain names under its path, not Secure', async () => {
    assert.deepEqual(cookieSettings('http://127.0.0.1:9999'), {
      session: 'ca_session',
      browser: 'ca_browser',
      upstream: 'ca_upstream',
      path: '/',
      secure: false,
    });
    assert.equal(cookieSettings('http://localhost:8080/auth').path, '/auth');
    const { setCookies } = await signedIn(createHarness({ issuer: 'http://127.0.0.1:9999/auth' }), '/auth/account');
    assert.deepEqual(
      setCookies.map((line) => line.split('=')[0]),
      ['ca_browser', 'ca_session'],
    );
    for (const line of setCookies)
      assert.deepEqual(
        attributesOf(line).filter((attribute) => !attribute.startsWith('Max-Age=')),
        ['Path=/auth', 'HttpOnly', 'SameSite=Lax'],
        line,
      );
  });
});

describe('a cookie of ours sent twice', () => {
  it('is read as none: no session (the page asks to sign in), logged once', async () => {
    const h = createHarness();
    const { browser } = await signedIn(h);
    assert.match(await (await browser.fetch('/account')).text(), /Signed in as/);
    // Another program on this host set a session cookie of its choosing for a deeper path: it comes first.
    const cookie = `ca_session=${'B'.repeat(43)}; ${browser.cookieHeader()}`;
    const page = await h.request('/account', { headers: { cookie } });
    const html = await page.text();
    assert.match(html, /name="password"/);
    assert.doesNotMatch(html, /Signed in as/);
    assert.deepEqual(
      h.log.filter((event) => event.event === 'cookie_duplicated').map((event) => event.cookie),
      ['ca_session'],
    );
  });

  it("makes an interaction's page say so, rather than speak of another browser", async () => {
    const h = createHarness();
    const client = await registerClient(h);
    const browser = new Browser(h);
    const started = await browser.fetch(authorizeUrl(authorizationRequest(client, REVISIONS[1]).params));
    const path = started.headers.get('location')!;
    assert.equal((await browser.fetch(path)).status, 200);
    const page = await h.request(path, { headers: { cookie: `ca_browser=${'B'.repeat(43)}; ${browser.cookieHeader()}` } });
    assert.equal(page.status, 403);
    assert.match(await page.text(), /sent two cookies named ca_browser[^<]*Clear this site&#39;s cookies/);
  });

  it('is every value the header gives that name, in order, and only that name', () => {
    const request = requestFromWeb(
      new Request('http://x/', { headers: { cookie: 'ca_browser=a; other=b;ca_browser =c; xca_browser=d; ca_browserx=e' } }),
      { maxBodyBytes: 0, trustedProxies: null },
      undefined,
    );
    assert.deepEqual(cookieValues(request, 'ca_browser'), ['a', 'c']);
    assert.deepEqual(cookieValues(request, 'ca_session'), []);
  });
});
