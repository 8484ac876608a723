/**
 * Upstream sign-in outside an authorization request, at /account and /admin, with a real OpenID
 * provider (node-oidc-provider) upstream: the providers' buttons, the callback back to our own
 * page, administrators by verified email, re-authentication through the provider, the browser
 * binding of the pending sign-in and the closed list of return targets.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { AdminAction } from '../../src/authorization-server/admin/section.js';
import { ADMIN_ACTIONS } from '../../src/authorization-server/admin/sections.js';
import type { UpstreamOptions } from '../../src/authorization-server/config.js';
import { githubProfile } from '../../src/authorization-server/upstream/provider.js';
import { hashPassword } from '../../src/core/passwords.js';
import { SecretBox, generateSecretKey, parseSecretKeys } from '../../src/core/secret-box.js';
import type { FullStore } from '../../src/store/store.js';
import { ISSUER, createHarness, parseForm, registerClient, type Harness } from '../helpers/harness.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.js';
import { TwoSiteBrowser } from '../helpers/two-site-browser.js';

const CALLBACK = `${ISSUER}/upstream/callback`;

/**
 * The console has no action of its own yet: this one, added for these tests only, is what a
 * recent sign-in is needed for.
 */
const TEST_ACTION: AdminAction = {
  name: 'test-touch',
  fields: ['thing'],
  describe: async (_view, form) => `Touch ${form.get('thing') ?? 'nothing'}`,
  done: (_ctx, subject) => `Touched${subject ? ` ${subject}` : ''}.`,
  run: async (_view, form) => ({ section: '', subject: form.get('thing') ?? 'nothing' }),
};

/** The hidden fields of a page's provider form (the CSRF token, the action, a change waiting). */
function providerFormFields(page: string): Record<string, string> {
  const form = /<form method="post" action="[^"]*" class="providers">([\s\S]*?)<\/form>/.exec(page)?.[1] ?? '';
  return Object.fromEntries([...form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!.replace(/&amp;/g, '&')]));
}

const ACCOUNTS = [
  { id: 'alice-sub', email: 'Alice@Example.com', name: 'Alice Example', username: 'alice', numericId: 1001 },
  { id: 'bob-sub', email: 'bob@example.com', name: 'Bob Example', username: 'bob', numericId: 1002 },
  { id: 'mallory-sub', email: 'root@example.com', emailVerified: false, name: 'Mallory', username: 'mallory', numericId: 1003 },
];

describe('upstream sign-in at the account page and the admin console', () => {
  let idp: TestOidcProvider;
  /** A GitHub-style provider (plain OAuth 2.0: no ID token), played by another OpenID provider. */
  let hubIdp: TestOidcProvider;
  const key = generateSecretKey();

  before(async () => {
    idp = await startOidcProvider({ redirectUris: [CALLBACK], accounts: ACCOUNTS });
    hubIdp = await startOidcProvider({ redirectUris: [CALLBACK], accounts: ACCOUNTS });
    (ADMIN_ACTIONS as AdminAction[]).push(TEST_ACTION);
  });
  after(async () => {
    (ADMIN_ACTIONS as AdminAction[]).splice(ADMIN_ACTIONS.indexOf(TEST_ACTION), 1);
    await idp.stop();
    await hubIdp.stop();
  });
  beforeEach(() => {
    idp.decide({ account: 'alice-sub' });
    idp.setFreshLoginHandling('honour');
  });

  const hub = () => ({
    kind: 'oauth2' as const,
    id: 'hub',
    name: 'Hub',
    issuer: hubIdp.issuer,
    clientId: hubIdp.clientId,
    clientSecret: hubIdp.clientSecret,
    scope: 'read:user',
    authorizationEndpoint: `${hubIdp.issuer}/auth`,
    tokenEndpoint: `${hubIdp.issuer}/token`,
    userinfoEndpoint: `${hubIdp.issuer}/api/user`,
    emailsEndpoint: `${hubIdp.issuer}/api/user/emails`,
    profile: githubProfile,
    issuesIssParameter: true,
  });

  function harness(options: { upstream?: Partial<UpstreamOptions>; emails?: string[]; store?: FullStore } = {}): Harness {
    const h = createHarness({
      upstream: {
        providers: [{ kind: 'oidc', id: 'corp', name: 'Corp SSO', issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret }],
        secretBox: new SecretBox(parseSecretKeys(key, 'test')),
        allowLoopbackHttp: true,
        ...options.upstream,
      },
      admin: { emails: options.emails ?? ['alice@example.com', 'root@example.com'] },
      ...(options.store ? { store: options.store } : {}),
    });
    // The provider stamps its tokens (and `auth_time`) with the real clock: ours must agree.
    h.clock.now = Math.floor(Date.now() / 1000);
    return h;
  }

  const atOurs = (url: URL): boolean => url.origin === ISSUER && !url.pathname.startsWith('/upstream/');

  /** Presses the provider's button on one of our sign-in pages (`page` is its HTML) and comes back. */
  async function pressProvider(
    browser: TwoSiteBrowser,
    path: string,
    page: string,
    fields: Record<string, string> = {},
    provider: { id: string; at: TestOidcProvider } = { id: 'corp', at: idp },
  ): Promise<{ response: Response; url: URL | null; upstream: URL }> {
    assert.match(page, new RegExp(`<button type="submit" name="provider" value="${provider.id}">`));
    const { csrf } = parseForm(page);
    const started = await browser.submit(path, { csrf, provider: provider.id, ...fields });
    assert.equal(started.status, 303, await started.clone().text());
    const upstream = new URL(started.headers.get('location')!);
    assert.equal(upstream.origin, new URL(provider.at.issuer).origin);
    return { ...(await browser.follow(started, atOurs)), upstream };
  }

  async function signInAtAccount(h: Harness, browser = new TwoSiteBrowser(h)): Promise<TwoSiteBrowser> {
    const page = await (await browser.fetch('/account')).text();
    const { url } = await pressProvider(browser, '/account', page, { action: 'sign-in' });
    assert.equal(url?.href, `${ISSUER}/account`);
    return browser;
  }

  async function signInAtAdmin(h: Harness, fields: Record<string, string> = {}): Promise<{ browser: TwoSiteBrowser; url: URL | null }> {
    const browser = new TwoSiteBrowser(h);
    const page = await (await browser.fetch('/admin')).text();
    const { url } = await pressProvider(browser, '/admin', page, { action: 'sign-in', ...fields });
    return { browser, url };
  }

  /** An administrator signed in through the provider, and the console's form token. */
  async function adminAtConsole(h: Harness): Promise<{ browser: TwoSiteBrowser; csrf: string }> {
    const { browser } = await signInAtAdmin(h);
    return { browser, csrf: parseForm(await (await browser.fetch('/admin')).text()).csrf };
  }

  it('/account: the provider signs the person in, and the page lists the applications they approved', async () => {
    const h = harness();
    const browser = new TwoSiteBrowser(h);
    const first = await browser.fetch('/account');
    // The button's form leads to the provider after our redirect: the page's CSP allows that.
    assert.match(first.headers.get('content-security-policy') ?? '', new RegExp(`form-action 'self' ${new URL(idp.issuer).origin}`));
    await signInAtAccount(h, browser);
    const user = await h.store.getUser({ username: 'corp:alice' });
    assert.ok(user);
    const client = await registerClient(h, { client_name: 'Notes App' });
    await h.store.saveConsent({
      userId: user.id,
      clientId: client.client_id,
      resource: 'http://127.0.0.1:9999/mcp',
      scope: ['mcp:tools'],
      createdAt: h.clock.now,
      updatedAt: h.clock.now,
    });
    const page = await (await browser.fetch('/account')).text();
    assert.match(page, /Signed in as <strong>corp:alice<\/strong>/);
    assert.match(page, /Notes App/);
    const login = h.log.find((event) => event.event === 'login');
    assert.deepEqual([login?.user_id, login?.provider, login?.page], [user.id, 'corp', 'account']);
  });

  it('/account with local users off: the providers alone, no password form', async () => {
    const h = harness({ upstream: { localUsers: false } });
    const page = await (await new TwoSiteBrowser(h).fetch('/account')).text();
    assert.match(page, /Sign in with Corp SSO/);
    assert.doesNotMatch(page, /name="password"/);
    await signInAtAccount(h);
  });

  it('/admin: a person whose listed email the provider verified is an administrator, without being marked one', async () => {
    const h = harness();
    const { browser, url } = await signInAtAdmin(h);
    assert.equal(url?.href, `${ISSUER}/admin`);
    const overview = await browser.fetch('/admin');
    assert.equal(overview.status, 200);
    assert.match(await overview.text(), /Signed in as <strong>corp:alice<\/strong>/);
    assert.notEqual((await h.store.getUser({ username: 'corp:alice' }))?.admin, true);
    const login = h.log.find((event) => event.event === 'login');
    assert.deepEqual([login?.provider, login?.page], ['corp', 'admin']);
  });

  it('/admin: an email not listed, or listed but not verified by the provider, gets 403', async () => {
    const h = harness();
    idp.decide({ account: 'bob-sub' });
    const bob = await signInAtAdmin(h);
    assert.equal((await bob.browser.fetch('/admin')).status, 403);
    // Mallory's provider account claims the listed root@example.com, unverified.
    idp.decide({ account: 'mallory-sub' });
    const mallory = await signInAtAdmin(h);
    assert.equal((await mallory.browser.fetch('/admin')).status, 403);
    assert.equal((await h.store.listUserIdentities()).find((i) => i.subject === 'mallory-sub')?.email, 'root@example.com');
  });

  it('/admin: taking the email off the list takes the rights away', async () => {
    const h = harness();
    const { browser } = await signInAtAdmin(h);
    const cookie = `ca_session=${browser.cookie('ca_session')}`;
    assert.equal((await h.request('/admin', { headers: { cookie } })).status, 200);
    const without = harness({ emails: ['someone-else@example.com'], store: h.store });
    assert.equal((await without.request('/admin', { headers: { cookie } })).status, 403);
  });

  it('/admin: a stale sign-in is renewed through the provider (a fresh login), and the action then runs', async () => {
    const h = harness();
    // Signed in 11 minutes ago (by our clock; the provider's login then is fresh by its own).
    h.clock.now -= 11 * 60;
    const { browser } = await signInAtAdmin(h);
    const csrf = parseForm(await (await browser.fetch('/admin')).text()).csrf;
    h.clock.now += 11 * 60;
    const stale = await browser.submit('/admin', { csrf, action: TEST_ACTION.name });
    assert.equal(stale.status, 401);
    const page = await stale.text();
    assert.match(page, /Sign in again with Corp SSO/);
    // An administrator without a password is not asked for one.
    assert.doesNotMatch(page, /name="password"/);
    const { url, upstream } = await pressProvider(browser, '/admin', page, { action: 'reauth' });
    assert.equal(upstream.searchParams.get('prompt'), 'login');
    // max_age makes auth_time REQUIRED in the ID token (OpenID Connect Core §2).
    assert.equal(upstream.searchParams.get('max_age'), '0');
    assert.equal(url?.href, `${ISSUER}/admin`);
    assert.ok(h.log.some((event) => event.event === 'login' && event.page === 'admin' && event.reauth === true && event.provider === 'corp'));
    // The renewed sign-in is a new session, whose page carries a token of its own: the old one is refused.
    assert.equal((await browser.submit('/admin', { csrf, action: TEST_ACTION.name })).status, 403);
    const renewed = parseForm(await (await browser.fetch('/admin')).text()).csrf;
    const done = await browser.submit('/admin', { csrf: renewed, action: TEST_ACTION.name });
    assert.equal(done.status, 303);
    assert.match(done.headers.get('location') ?? '', new RegExp(`^/admin\\?done=${TEST_ACTION.name}&`));
  });

  it('/admin: the change a re-authentication at the provider waited for comes back named, and is made once confirmed', async () => {
    const h = harness();
    h.clock.now -= 11 * 60;
    const { browser } = await signInAtAdmin(h);
    const csrf = parseForm(await (await browser.fetch('/admin')).text()).csrf;
    h.clock.now += 11 * 60;
    const page = await (await browser.submit('/admin', { csrf, action: TEST_ACTION.name, thing: 'the lamp', return: 'people' })).text();
    assert.match(page, /Waiting for this sign-in: <strong>Touch the lamp<\/strong>\. Signing in again with Corp SSO brings you back to confirm it\./);
    const fields = providerFormFields(page);
    assert.equal(fields.then, TEST_ACTION.name);
    assert.equal(fields['then.thing'], 'the lamp');
    const { url } = await pressProvider(browser, '/admin', page, fields);
    assert.equal(url?.pathname, '/admin/people');
    assert.ok(url?.searchParams.has('confirm') && url.searchParams.has('sig'), `the change comes back vouched for: ${url?.href}`);
    const confirmPage = await (await browser.fetch(url.pathname + url.search)).text();
    assert.match(confirmPage, /You signed in again\. The change you asked for waits for you to confirm it\./);
    assert.match(confirmPage, /<h2 id="confirm-heading">Touch the lamp\?<\/h2>/);
    assert.equal(h.log.filter((event) => event.event === 'admin_action').length, 0, 'nothing made before it is confirmed');

    // Another browser (or the link altered) gets no confirmation: the MAC is this browser's and this change's.
    const altered = new URL(url!);
    altered.searchParams.set('confirm', Buffer.from(JSON.stringify({ action: TEST_ACTION.name, fields: { thing: 'the house' } })).toString('base64url'));
    assert.doesNotMatch(await (await browser.fetch(altered.pathname + altered.search)).text(), /confirm-heading/);

    const confirm = /<form method="post" action="\/admin">([\s\S]*?name="confirmed"[\s\S]*?)<\/form>/.exec(confirmPage)![1]!;
    const posted = Object.fromEntries([...confirm.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]));
    const done = await browser.submit('/admin', posted);
    assert.equal(done.status, 303);
    assert.match(done.headers.get('location') ?? '', /^\/admin\?done=test-touch&what=the\+lamp&sig=/);
    assert.match(await (await browser.fetch(done.headers.get('location')!)).text(), /role="status">Touched the lamp\.</);
  });

  it('/admin: a sign-in through the provider that does not say when the person signed in there is not taken for a recent one', async () => {
    const h = harness();
    // The provider signs in from the session it has, as any single sign-on does, and says nothing of when.
    const { browser, csrf } = await adminAtConsole(h);
    const asked = await browser.submit('/admin', { csrf, action: TEST_ACTION.name });
    assert.equal(asked.status, 401);
    assert.match(await asked.text(), /Sign in again with Corp SSO/);
    // Signing in afresh (signed out, then in, rather than confirming) proves no more: the provider's session answers again.
    assert.equal((await browser.submit('/admin', { csrf, action: 'sign-out' })).status, 303);
    const { url } = await pressProvider(browser, '/admin', await (await browser.fetch('/admin')).text(), { action: 'sign-in' });
    assert.equal(url?.href, `${ISSUER}/admin`);
    assert.equal(h.log.filter((event) => event.event === 'login').length, 2);
    const renewed = parseForm(await (await browser.fetch('/admin')).text()).csrf;
    assert.equal((await browser.submit('/admin', { csrf: renewed, action: TEST_ACTION.name })).status, 401);
    assert.equal(h.log.filter((event) => event.event === 'admin_action').length, 0);
  });

  it('/admin: a sign-in whose ID token says the person just signed in at the provider (auth_time) counts as recent', async () => {
    const h = harness();
    idp.setFreshLoginHandling('ignore-but-tell');
    const { browser, csrf } = await adminAtConsole(h);
    const done = await browser.submit('/admin', { csrf, action: TEST_ACTION.name });
    assert.equal(done.status, 303, await done.clone().text());
    // Eleven minutes later by our clock the same login is stale.
    h.clock.now += 11 * 60;
    assert.equal((await browser.submit('/admin', { csrf, action: TEST_ACTION.name })).status, 401);
  });

  it('/admin: a re-authentication the provider answers with its old login (prompt=login and max_age ignored, auth_time told) is refused', async () => {
    const h = harness();
    idp.setFreshLoginHandling('ignore-but-tell');
    const { browser, csrf } = await adminAtConsole(h);
    h.clock.now += 11 * 60;
    const page = await (await browser.submit('/admin', { csrf, action: TEST_ACTION.name })).text();
    const { response, upstream } = await pressProvider(browser, '/admin', page, { action: 'reauth' });
    assert.equal(upstream.searchParams.get('max_age'), '0');
    assert.equal(response.status, 403);
    assert.match(await response.text(), /did not ask you to sign in again/);
    assert.equal((await browser.submit('/admin', { csrf, action: TEST_ACTION.name })).status, 401);
  });

  it('/admin: a re-authentication the provider answers from its old session without auth_time (prompt=login and max_age ignored) is refused', async () => {
    const h = harness();
    const { browser, csrf } = await adminAtConsole(h);
    idp.setFreshLoginHandling('ignore');
    const page = await (await browser.submit('/admin', { csrf, action: TEST_ACTION.name })).text();
    const { response } = await pressProvider(browser, '/admin', page, { action: 'reauth' });
    assert.equal(response.status, 403);
    assert.match(await response.text(), /did not say when you last signed in, so it cannot confirm a recent sign-in/);
    const failed = h.log.find((event) => event.event === 'upstream_failed' && event.reauth === true);
    assert.equal(failed?.upstream_error, 'auth_time');
    assert.equal((await browser.submit('/admin', { csrf, action: TEST_ACTION.name })).status, 401);
    assert.equal(h.log.filter((event) => event.event === 'admin_action').length, 0);
  });

  it('/admin: a plain OAuth 2.0 provider cannot confirm a sign-in: the console says a password or an OpenID provider is needed, and sends nobody there', async () => {
    const h = harness({ upstream: { providers: [hub()] } });
    const browser = new TwoSiteBrowser(h);
    const page = await (await browser.fetch('/admin')).text();
    await pressProvider(browser, '/admin', page, { action: 'sign-in' }, { id: 'hub', at: hubIdp });
    const { csrf } = parseForm(await (await browser.fetch('/admin')).text());
    // Signed in this very moment, yet Hub vouches for no login time: changes wait for a proof.
    const asked = await browser.submit('/admin', { csrf, action: TEST_ACTION.name });
    assert.equal(asked.status, 401);
    const text = await asked.text();
    assert.match(
      text,
      /Changes in the console need a recent sign-in, which Hub cannot confirm: it is not an OpenID provider\. Changes need an administrator who signs in with a password, or through an OpenID provider\./,
    );
    assert.doesNotMatch(text, /name="provider"/);
    assert.doesNotMatch(text, /Sign in at your account page/);
    // A form made by hand is refused before anyone is sent to Hub.
    const forced = await browser.submit('/admin', { csrf, action: 'reauth', provider: 'hub' });
    assert.equal(forced.status, 400);
    assert.equal(forced.headers.get('location'), null);
    assert.match(await forced.text(), /Hub cannot confirm a recent sign-in \(it is not an OpenID provider\)/);
    assert.equal(h.log.filter((event) => event.event === 'upstream_redirect' && event.reauth === true).length, 0);
    assert.equal(h.log.filter((event) => event.event === 'admin_action').length, 0);
  });

  it('/admin: an administrator with a password who signed in through a plain OAuth 2.0 provider is asked for the password', async () => {
    const h = harness({ upstream: { providers: [hub()] } });
    const browser = new TwoSiteBrowser(h);
    const signIn = async () => pressProvider(browser, '/admin', await (await browser.fetch('/admin')).text(), { action: 'sign-in' }, { id: 'hub', at: hubIdp });
    await signIn();
    // The operator gives the person a password too (which ends their sessions): they sign in through Hub again.
    assert.ok(await h.store.setUserPassword('hub:alice', await hashPassword('correct horse battery')));
    await signIn();
    const { csrf } = parseForm(await (await browser.fetch('/admin')).text());
    const asked = await (await browser.submit('/admin', { csrf, action: TEST_ACTION.name })).text();
    assert.match(asked, /which Hub cannot confirm: it is not an OpenID provider\. Enter your password to go on\./);
    const confirmed = await browser.submit('/admin', { csrf, action: 'reauth', password: 'correct horse battery' });
    assert.equal(confirmed.status, 303);
    assert.equal((await browser.submit('/admin', { csrf, action: TEST_ACTION.name })).status, 303);
  });

  it('/admin: a re-authentication that comes back as another person is refused', async () => {
    const h = harness();
    const { browser } = await signInAtAdmin(h);
    const csrf = parseForm(await (await browser.fetch('/admin')).text()).csrf;
    idp.decide({ account: 'bob-sub' });
    const started = await browser.submit('/admin', { csrf, action: 'reauth', provider: 'corp' });
    const { response: atProvider } = await browser.follow(started, atOurs);
    // Another account at the provider ends its session there first (its page posts this form).
    const confirm = await atProvider.text();
    const action = /action="([^"]+)"/.exec(confirm)?.[1];
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm)?.[1];
    assert.ok(action && xsrf, confirm.slice(0, 200));
    const { response } = await browser.follow(await browser.submit(action, { xsrf, logout: 'yes' }), atOurs);
    assert.equal(response.status, 403);
    assert.match(await response.text(), /as another account/);
    // Refused before anything was made for that other person.
    assert.equal(await h.store.getUser({ username: 'corp:bob' }), undefined);
    assert.equal((await browser.fetch('/admin')).status, 200);
  });

  it('a sign-in started in another browser is refused at the callback (login CSRF)', async () => {
    const h = harness();
    const attacker = new TwoSiteBrowser(h);
    const page = await (await attacker.fetch('/account')).text();
    const started = await attacker.submit('/account', { csrf: parseForm(page).csrf, action: 'sign-in', provider: 'corp' });
    const upstream = started.headers.get('location')!;
    const victim = new TwoSiteBrowser(h);
    await victim.fetch('/account');
    const { response } = await victim.follow(await victim.fetch(upstream), atOurs);
    assert.equal(response.status, 400);
    assert.match(await response.text(), /started in another browser/);
    assert.equal(victim.cookie('ca_session'), undefined);
    // Nor does the attacker's pending sign-in, copied into the victim's browser, work there.
    const copied = new TwoSiteBrowser(h);
    await copied.fetch('/account');
    const { url: callback } = await attacker.follow(await attacker.fetch(upstream), (url) => url.pathname === '/upstream/callback');
    assert.ok(callback);
    const replayed = await h.request(callback.pathname + callback.search, {
      headers: { cookie: `ca_browser=${copied.cookie('ca_browser')}; ca_upstream=${attacker.cookie('ca_upstream')}` },
    });
    assert.equal(replayed.status, 400);
    assert.equal(replayed.headers.getSetCookie().length, 0);
  });

  it('a sign-in planted into another browser (cookies for a deeper path, which it sends first) is refused at the callback', async () => {
    const h = harness();
    const attacker = new TwoSiteBrowser(h);
    const page = await (await attacker.fetch('/account')).text();
    const started = await attacker.submit('/account', { csrf: parseForm(page).csrf, action: 'sign-in', provider: 'corp' });
    const { url: callback } = await attacker.follow(started, (url) => url.pathname === '/upstream/callback');
    assert.ok(callback);
    const victim = new TwoSiteBrowser(h);
    await victim.fetch('/account');
    // The attacker's binding and pending sign-in, set by a site sharing the domain for /upstream/callback, then the victim's own binding.
    const cookie = `ca_browser=${attacker.cookie('ca_browser')}; ca_upstream=${attacker.cookie('ca_upstream')}; ca_browser=${victim.cookie('ca_browser')}`;
    const response = await h.request(callback.pathname + callback.search, { headers: { cookie } });
    assert.equal(response.status, 403);
    assert.match(await response.text(), /sent two cookies named ca_browser/);
    assert.equal(response.headers.getSetCookie().length, 0, 'nobody signed in');
    assert.ok(h.log.some((event) => event.event === 'cookie_duplicated' && event.cookie === 'ca_browser'));
    assert.ok(!h.log.some((event) => event.event === 'login'));
  });

  it('the return target is one of our pages: an address in the form cannot steer it off-site', async () => {
    const h = harness();
    for (const target of ['https://evil.example/', '//evil.example', '/account', '../account', 'nothing-here']) {
      const { url } = await signInAtAdmin(h, { return: target, redirect_uri: 'https://evil.example/' });
      assert.equal(url?.href, `${ISSUER}/admin`, target);
    }
    const browser = new TwoSiteBrowser(h);
    const page = await (await browser.fetch('/account')).text();
    const { url } = await pressProvider(browser, '/account', page, {
      action: 'sign-in',
      return: 'https://evil.example/',
      redirect_uri: 'https://evil.example/',
    });
    assert.equal(url?.href, `${ISSUER}/account`);
  });
});
