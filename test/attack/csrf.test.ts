/**
 * RFC 9700 §4.7 (cross-site request forgery). Our own forms (sign-in, consent) carry a token tied
 * to the interaction and are accepted only from the browser that started it (a cookie set at
 * /authorize): a forged post, or a link to an interaction an attacker started, signs nobody in and
 * issues no code. The client's CSRF defence, `state`, comes back exactly as sent.
 *
 * The forms of /account, /admin and /device carry a MAC under the server's key over the page and
 * the session (or, before one, the browser's binding cookie); a post a browser says came from
 * another site is refused; a cookie of ours sent twice is read as none; an https issuer's cookies
 * are `__Host-`, which no other host can set. The attacker here controls a sibling subdomain: its
 * page sets `ca_browser=KNOWN; Domain=<parent>; Path=/admin`, and the victim's browser then sends
 * that cookie first (the longer path, RFC 6265 §5.4), its own after it, and the Lax session cookie
 * too (the post is same-site).
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { BROWSER_COOKIE } from '../../src/authorization-server/http/cookies.js';
import { hashSecret } from '../../src/core/secrets.js';
import { signInToConsole } from '../helpers/admin-console.js';
import { addUser, authorize, authorizationRequest, authorizeUrl, Browser, parseForm, registerClient, REVISIONS, type Harness } from '../helpers/harness.js';
import { assertUnchanged, ISSUED, onEveryStore, USER } from './setup.js';

const revision = REVISIONS[1];

/** Starts an authorization in `browser` and returns the interaction path and the sign-in form. */
async function startInteraction(h: Harness, browser: Browser): Promise<{ path: string; action: string; csrf: string; binding: string }> {
  const client = await registerClient(h);
  const { params } = authorizationRequest(client, revision);
  const response = await browser.fetch(authorizeUrl(params));
  const path = response.headers.get('location')!;
  assert.match(path, /^\/interaction\//);
  const binding = response.headers
    .getSetCookie()
    .map((line) => line.split(';')[0]!)
    .find((pair) => pair.startsWith(`${BROWSER_COOKIE}=`));
  assert.ok(binding, 'the browser binding cookie');
  const { action, csrf } = parseForm(await (await browser.fetch(path)).text());
  return { path, action, csrf, binding };
}

/** The sibling subdomain's page: its origin, and what the browser says of a post from it. */
const SIBLING = { origin: 'https://evil.example.test', 'sec-fetch-site': 'same-site' };
/** The binding cookie value the attacker plants (any 43 characters of the binding's alphabet). */
const KNOWN = 'K'.repeat(43);

/** A post as the victim's browser sends it: its cookies (the planted one first, when `planted`), and what else a browser adds. */
function victimPost(h: Harness, path: string, cookie: string, values: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  return h.request(path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, ...headers },
    body: new URLSearchParams(values),
  });
}

/** The token a page gives a browser whose binding is KNOWN: what the attacker learns by loading the page with the cookie they plant. */
async function tokenForKnownBinding(h: Harness, path: string, name = BROWSER_COOKIE): Promise<string> {
  return parseForm(await (await h.request(path, { headers: { cookie: `${name}=${KNOWN}` } })).text()).csrf;
}

let people = 0;
/** A fresh name for this store's users (the store lives for the whole describe). */
const fresh = (name: string): string => `${name}-${++people}`;

onEveryStore('§4.7 cross-site request forgery', (env) => {
  for (const [name, csrf] of [
    ['without a csrf token', undefined],
    ['with a wrong csrf token', 'forged-token'],
  ] as const) {
    it(`a sign-in post ${name} is refused with 403 and signs nobody in`, async () => {
      const h = await env.target();
      const browser = new Browser(h);
      const { action } = await startInteraction(h, browser);
      const before = await env.counts();
      const values: Record<string, string> = { step: 'login', username: USER.username, password: USER.password };
      if (csrf) values.csrf = csrf;
      const response = await browser.submit(action, values);
      assert.equal(response.status, 403, await response.clone().text());
      assert.match(await response.text(), /could not be verified/);
      assert.equal(response.headers.getSetCookie().length, 0, 'no session cookie');
      assertUnchanged(before, await env.counts(), ['sessions', ...ISSUED], name);
    });
  }

  it("an interaction an attacker started does not complete in the victim's browser (login CSRF)", async () => {
    const h = await env.target();
    const attacker = new Browser(h);
    const { path, action, csrf } = await startInteraction(h, attacker);
    const victim = new Browser(h);
    const page = await victim.fetch(path);
    assert.equal(page.status, 400);
    assert.match(await page.text(), /expired or was opened in another browser/);
    const before = await env.counts();
    // Even with the page's csrf token (the attacker has it), the post needs the attacker's cookie.
    const forged = await victim.submit(action, { csrf, step: 'login', username: USER.username, password: USER.password });
    assert.equal(forged.status, 400);
    assert.equal(forged.headers.get('location'), null);
    assertUnchanged(before, await env.counts(), ['sessions', ...ISSUED], 'foreign interaction');
  });

  it('a consent post without a session for the signed-in user is refused and issues no code', async () => {
    const h = await env.target();
    const browser = new Browser(h);
    const { action, csrf, binding } = await startInteraction(h, browser);
    const signedIn = await browser.submit(action, { csrf, step: 'login', username: USER.username, password: USER.password });
    assert.equal(signedIn.status, 303);
    // A post with the interaction's binding and csrf token, but not the session of the user who signed in.
    const before = await env.counts();
    const forged = await h.request(action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: binding },
      body: new URLSearchParams({ csrf, step: 'consent', decision: 'approve' }),
    });
    assert.equal(forged.status, 400);
    assert.match(await forged.text(), /session ended/);
    assertUnchanged(before, await env.counts(), ISSUED, 'consent without session');
  });

  it('state comes back to the client exactly as sent, odd characters and all', async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const state = 'ä &=?#+%20/\u{1F511}';
    const { location } = await authorize(h, { client, user: USER, resource: revision.resource, state });
    assert.equal(location.searchParams.get('state'), state);
  });

  it("a sibling subdomain's planted cookie does not let its page make someone an administrator", async () => {
    const h = await env.target();
    const admin = await signInToConsole(h, { username: fresh('root') });
    const mallory = await addUser(h, fresh('mallory'));
    const planted = `${BROWSER_COOKIE}=${KNOWN}; ${admin.browser.cookieHeader()}`;
    const promote = { action: 'set-admin', username: mallory.username, admin: 'on', return: 'people' };
    const tokens = {
      "the page's token for KNOWN": await tokenForKnownBinding(h, '/admin'),
      'sha256("admin-form:" + KNOWN)': hashSecret(`admin-form:${KNOWN}`),
    };
    for (const [token, csrf] of Object.entries(tokens)) {
      // As a browser sends it, and as one that sends neither Origin nor Sec-Fetch-Site.
      for (const [browser, headers] of [
        ['a browser', SIBLING],
        ['an old browser', {}],
      ] as const) {
        const response = await victimPost(h, '/admin', planted, { csrf, ...promote }, headers);
        assert.equal(response.status, 403, `${token}, ${browser}: ${await response.clone().text()}`);
        assert.equal((await h.store.getUser({ username: mallory.username }))?.admin ?? false, false, `${token}, ${browser}: mallory is no administrator`);
      }
    }
    assert.ok(!h.log.some((event) => event.event === 'admin_action'));
    // The administrator's own form still works.
    assert.equal((await admin.browser.submit('/admin', { csrf: admin.csrf, ...promote })).status, 303);
    assert.equal((await h.store.getUser({ username: mallory.username }))?.admin, true);
  });

  it('a sibling subdomain cannot sign the victim in as the attacker at /account (login CSRF)', async () => {
    const h = await env.target();
    const mallory = await addUser(h, fresh('mallory'));
    const signIn = { csrf: await tokenForKnownBinding(h, '/account'), action: 'sign-in', username: mallory.username, password: mallory.password };
    // A victim whose browser holds no cookie of ours yet: the planted binding is the only one.
    const before = await env.counts();
    const response = await victimPost(h, '/account', `${BROWSER_COOKIE}=${KNOWN}`, signIn, SIBLING);
    assert.equal(response.status, 403);
    assert.match(await response.text(), /sent from another site/);
    assert.equal(response.headers.getSetCookie().length, 0);
    assertUnchanged(before, await env.counts(), ['sessions'], 'login CSRF');
  });

  it('on an https issuer the cookies are __Host-: a planted plain cookie binds nothing, even without Origin', async () => {
    const h = await env.target({ issuer: 'https://auth.example.test' });
    const mallory = await addUser(h, fresh('mallory'));
    const planted = `${BROWSER_COOKIE}=${KNOWN}`;
    const tokens = [await tokenForKnownBinding(h, '/account'), hashSecret(`account-form:${KNOWN}`)];
    const before = await env.counts();
    for (const csrf of tokens) {
      const response = await victimPost(h, '/account', planted, { csrf, action: 'sign-in', username: mallory.username, password: mallory.password });
      assert.equal(response.status, 403, await response.clone().text());
    }
    assertUnchanged(before, await env.counts(), ['sessions'], 'planted plain cookie');
    // Nor can the planted cookie carry the prefix: a browser keeps a __Host- cookie only from this host, without Domain.
    const page = await h.request('/account');
    assert.match(page.headers.get('set-cookie') ?? '', /^__Host-ca_browser=[^;]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax; Secure$/);
  });

  it("a token from one session is refused in another (the attacker's own, replayed in the victim's)", async () => {
    const h = await env.target();
    const victim = await addUser(h, fresh('alice'));
    const mallory = await addUser(h, fresh('mallory'));
    const client = await registerClient(h);
    const victimsBrowser = new Browser(h);
    await authorize(h, { client, user: victim, resource: revision.resource, browser: victimsBrowser });
    // The attacker signs in with the binding they plant, and reads the signed-in page's token.
    const cookie = `${BROWSER_COOKIE}=${KNOWN}`;
    const page = await h.request('/account', { headers: { cookie } });
    const signedIn = await h.request('/account', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: new URLSearchParams({ csrf: parseForm(await page.text()).csrf, action: 'sign-in', username: mallory.username, password: mallory.password }),
    });
    assert.equal(signedIn.status, 303);
    const session = signedIn.headers.getSetCookie()[0]!.split(';')[0]!;
    const token = parseForm(await (await h.request('/account', { headers: { cookie: `${cookie}; ${session}` } })).text()).csrf;
    // In the victim's browser, whose binding the attacker replaced (another program on a loopback host can), an old browser's post.
    const victimCookies = victimsBrowser.cookieHeader().replace(/ca_browser=[^;]+/, `ca_browser=${KNOWN}`);
    const before = await env.counts();
    const response = await victimPost(h, '/account', victimCookies, { csrf: token, action: 'revoke', client_id: client.client_id });
    assert.equal(response.status, 403, await response.clone().text());
    assert.equal((await h.store.listConsents({ userId: victim.id })).length, 1, "the victim's approval stays");
    assertUnchanged(before, await env.counts(), ['consents', 'grants', 'revocations'], 'replayed token');
  });

  it('a form posted from another origin is refused, even with the right token and cookies', async () => {
    const h = await env.target();
    const admin = await signInToConsole(h, { username: fresh('root') });
    const mallory = await addUser(h, fresh('mallory'));
    for (const origin of ['https://evil.example', 'null']) {
      const response = await admin.browser.submit('/admin', { csrf: admin.csrf, action: 'set-admin', username: mallory.username, admin: 'on' }, { origin });
      assert.equal(response.status, 403);
      assert.match(await response.text(), /sent from another site/);
    }
    assert.equal((await h.store.getUser({ username: mallory.username }))?.admin ?? false, false);
  });

  it('a form a browser marks Sec-Fetch-Site: cross-site is refused, even with the right token and cookies', async () => {
    const h = await env.target();
    const user = await addUser(h, fresh('alice'));
    const client = await registerClient(h);
    const browser = new Browser(h);
    await authorize(h, { client, user, resource: revision.resource, browser });
    const { csrf } = parseForm(await (await browser.fetch('/account')).text());
    const before = await env.counts();
    const response = await browser.submit('/account', { csrf, action: 'revoke', client_id: client.client_id }, { 'sec-fetch-site': 'cross-site' });
    assert.equal(response.status, 403);
    assertUnchanged(before, await env.counts(), ['consents', 'grants', 'revocations'], 'cross-site post');
  });

  it("a token computed without the server's key, from the victim's own cookie, is refused", async () => {
    const h = await env.target();
    const admin = await signInToConsole(h, { username: fresh('root') });
    const mallory = await addUser(h, fresh('mallory'));
    // Even knowing the victim's binding cookie, the old digest of it is no token.
    const csrf = hashSecret(`admin-form:${admin.browser.cookie(BROWSER_COOKIE)}`);
    const response = await admin.browser.submit('/admin', { csrf, action: 'set-admin', username: mallory.username, admin: 'on' });
    assert.equal(response.status, 403);
    assert.equal((await h.store.getUser({ username: mallory.username }))?.admin ?? false, false);
  });
});
