/**
 * The login and consent pages: sign-in, consent and its memory, CSRF and browser binding,
 * expiry, the headers and markup every page carries, and the cookies.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient as createClient } from '../../src/authorization-server/clients.js';
import {
  addUser,
  authorizationRequest,
  authorizeUrl,
  Browser,
  completeInteraction,
  createHarness,
  ISSUER,
  jwtClaims,
  OTHER_RESOURCE,
  parseForm,
  REDIRECT_URI,
  redeemCode,
  registerClient,
  RESOURCE,
  REVISIONS,
  type Harness,
  type Revision,
  type TestClient,
  plainTokens,
} from '../helpers/harness.js';

type User = { id: string; username: string; password: string };

async function setup(
  clientMetadata: Record<string, unknown> = {},
  overrides: Parameters<typeof createHarness>[0] = {},
): Promise<{ h: Harness; client: TestClient; user: User }> {
  const h = createHarness(overrides);
  return { h, client: await registerClient(h, clientMetadata), user: await addUser(h) };
}

/** A browser that has started an authorization and sits on its first page. */
async function start(
  h: Harness,
  client: TestClient,
  revision: Revision,
  overrides: Record<string, string | undefined> = {},
  browser = new Browser(h),
): Promise<{ browser: Browser; path: string; verifier: string; response: Response }> {
  const request = authorizationRequest(client, revision, overrides);
  const response = await browser.fetch(authorizeUrl(request.params));
  assert.equal(response.status, 303);
  const location = new URL(response.headers.get('location')!, ISSUER);
  assert.equal(location.origin, ISSUER, `expected our pages, got ${location}`);
  return { browser, path: location.pathname, verifier: request.verifier, response };
}

async function openPage(browser: Browser, path: string): Promise<{ response: Response; html: string; action: string; csrf: string }> {
  const response = await browser.fetch(path);
  const html = await response.text();
  return { response, html, ...parseForm(html) };
}

/** Starts an authorization and signs in; returns the consent page. */
async function signIn(h: Harness, client: TestClient, revision: Revision, user: User, overrides: Record<string, string | undefined> = {}) {
  const started = await start(h, client, revision, overrides);
  const login = await openPage(started.browser, started.path);
  const response = await started.browser.submit(login.action, { csrf: login.csrf, step: 'login', username: user.username, password: user.password });
  assert.equal(response.status, 303);
  assert.equal(response.headers.get('location'), started.path);
  const consent = await openPage(started.browser, started.path);
  return { ...started, consent };
}

function sessionCookie(response: Response): string | undefined {
  return response.headers.getSetCookie().find((line) => line.startsWith('ca_session='));
}

function clientRedirect(response: Response): URL {
  assert.equal(response.status, 303);
  const location = new URL(response.headers.get('location')!);
  assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
  return location;
}

/** The headers every page carries: no framing, a strict CSP, no referrer to another origin, no caching. */
function assertPageHeaders(response: Response): void {
  assert.match(response.headers.get('content-type') ?? '', /^text\/html; charset=utf-8$/);
  assert.equal(response.headers.get('x-frame-options'), 'DENY');
  const csp = response.headers.get('content-security-policy') ?? '';
  assert.match(csp, /(^|; )frame-ancestors 'none'(;|$)/);
  assert.match(csp, /(^|; )default-src 'none'(;|$)/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
  assert.equal(response.headers.get('referrer-policy'), 'same-origin');
  assert.equal(response.headers.get('cache-control'), 'no-store');
}

function assertNoScript(html: string): void {
  assert.doesNotMatch(html, /<script/i);
  assert.doesNotMatch(html, /\son[a-z]+\s*=/i, 'no inline event handlers');
  assert.doesNotMatch(html, /javascript:/i);
}

for (const revision of REVISIONS) {
  const resource = revision.resource ?? RESOURCE;

  describe(`login and consent — ${revision.name}`, () => {
    describe('login', () => {
      it('shows the login form with the username/password contract', async () => {
        const { h, client } = await setup();
        const { browser, path } = await start(h, client, revision);
        const page = await openPage(browser, path);
        assert.equal(page.response.status, 200);
        assert.match(page.html, /<input[^>]+name="username"/);
        assert.match(page.html, /<input[^>]+name="password"[^>]+type="password"/);
        assert.match(page.html, /Test Client/);
        assert.equal(page.action, path);
      });

      it('shows the form again (401) with a message and no session for a wrong password', async () => {
        const { h, client, user } = await setup();
        const { browser, path } = await start(h, client, revision);
        const page = await openPage(browser, path);
        const response = await browser.submit(page.action, { csrf: page.csrf, step: 'login', username: user.username, password: 'wrong' });
        assert.equal(response.status, 401);
        assert.equal(sessionCookie(response), undefined);
        assertPageHeaders(response);
        const html = await response.text();
        assert.match(html, /role="alert">Wrong username or password\.</);
        assert.match(html, /name="password"/);
        assert.match(html, new RegExp(`name="username"[^>]*value="${user.username}"`), 'the username is kept');
        assert.doesNotMatch(html, /correct horse/);
        // Still the same interaction: the right password now works.
        const retry = parseForm(html);
        const ok = await browser.submit(retry.action, { csrf: retry.csrf, step: 'login', username: user.username, password: user.password });
        assert.equal(ok.status, 303);
        assert.ok(sessionCookie(ok));
      });

      it('says the same for an unknown user', async () => {
        const { h, client, user } = await setup();
        const { browser, path } = await start(h, client, revision);
        const page = await openPage(browser, path);
        const wrongPassword = await browser.submit(page.action, { csrf: page.csrf, step: 'login', username: user.username, password: 'wrong' });
        const unknownUser = await browser.submit(page.action, { csrf: page.csrf, step: 'login', username: 'mallory', password: 'wrong' });
        assert.equal(unknownUser.status, 401);
        assert.equal(sessionCookie(unknownUser), undefined);
        const message = (html: string) => /role="alert">([^<]*)</.exec(html)?.[1];
        const [a, b] = [await wrongPassword.text(), await unknownUser.text()];
        assert.ok(message(a));
        assert.equal(message(b), message(a));
      });

      it('logs a failed sign-in on a store with no users as such (reason no_users), and an ordinary one without a reason', async () => {
        const h = createHarness();
        const client = await registerClient(h);
        const { browser, path } = await start(h, client, revision);
        const page = await openPage(browser, path);
        const fail = async (username: string) => {
          const response = await browser.submit(page.action, { csrf: page.csrf, step: 'login', username, password: 'wrong' });
          assert.equal(response.status, 401);
          assert.match(await response.text(), /Wrong username or password/, 'the page says the same either way');
          return h.log.filter((event) => event.event === 'login_failed').at(-1);
        };
        assert.equal((await fail('alice'))?.reason, 'no_users');
        const user = await addUser(h);
        assert.equal((await fail('mallory'))?.reason, undefined, 'an unknown user, on a store that has users');
        assert.equal((await fail(user.username))?.reason, undefined);
      });

      it('refuses an empty username or password', async () => {
        const { h, client, user } = await setup();
        const { browser, path } = await start(h, client, revision);
        const page = await openPage(browser, path);
        for (const values of [{ username: '', password: user.password }, { username: user.username, password: '' }, {}] as Record<string, string>[]) {
          const response = await browser.submit(page.action, { csrf: page.csrf, step: 'login', ...values });
          assert.equal(response.status, 401);
          assert.equal(sessionCookie(response), undefined);
        }
      });

      it('HTML-escapes the username it echoes back', async () => {
        const { h, client } = await setup();
        const { browser, path } = await start(h, client, revision);
        const page = await openPage(browser, path);
        const evil = '"><script>alert(1)</script>';
        const response = await browser.submit(page.action, { csrf: page.csrf, step: 'login', username: evil, password: 'x' });
        const html = await response.text();
        assertNoScript(html);
        assert.match(html, /value="&quot;&gt;&lt;script&gt;alert\(1\)&lt;\/script&gt;"/);
      });
    });

    describe('consent', () => {
      it('names the client, its redirect host, the scopes and the resource', async () => {
        const { h, client, user } = await setup({ client_name: 'Acme Notes' });
        const { consent } = await signIn(h, client, revision, user, { scope: 'mcp:tools mcp:admin' });
        assert.equal(consent.response.status, 200);
        assertPageHeaders(consent.response);
        const html = plainTokens(consent.html);
        assert.match(html, /Authorize Acme Notes\?/);
        assert.match(html, new RegExp(`<code>${client.client_id}</code>`));
        assert.match(html, /<code>127\.0\.0\.1:33333<\/code>/);
        assert.match(html, /<li><code>mcp:admin<\/code><\/li>/);
        assert.match(html, /<li><code>mcp:tools<\/code><\/li>/);
        assert.match(html, new RegExp(`<code>${resource.replace(/[.]/g, '\\.')}</code>`));
        assert.match(html, /Signed in as <strong>alice<\/strong>/);
        assert.match(html, /<button[^>]+name="decision" value="approve"/);
        assert.match(html, /<button[^>]+name="decision" value="deny"/);
        assert.doesNotMatch(html, /name="password"/);
      });

      it("marks a dynamically registered client's name as unverified (whoever registered it chose it)", async () => {
        const { h, client, user } = await setup({ client_name: 'Acme Notes' });
        const { consent } = await signIn(h, client, revision, user);
        assert.match(consent.html, /<p class="site unverified">Unverified name: whoever registered this application chose it/);
        assert.match(consent.html, /<dd>Acme Notes <span class="tag">unverified<\/span>/);
        assert.doesNotMatch(consent.html, /Verified: /);
      });

      it('does not mark the name of a client the operator added (clients add), nor a nameless one', async () => {
        const { h, user } = await setup();
        const metadata = validateClientMetadata(
          { client_name: 'Team Notes', redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' },
          h.server.metadata.scopes_supported,
        );
        const { client: operators } = await createClient(h.store, metadata, h.clock.now, { registeredBy: 'admin' });
        const nameless = await registerClient(h, { client_name: undefined });
        for (const client of [{ client_id: operators.clientId }, nameless]) {
          const { consent } = await signIn(h, client, revision, user);
          assert.doesNotMatch(consent.html, /Unverified name|class="tag"|class="site/, client.client_id);
        }
      });

      it('approve: 303 to the redirect URI with code, state and iss; the code redeems', async () => {
        const { h, client, user } = await setup();
        const { browser, consent, verifier } = await signIn(h, client, revision, user, { state: 'st ü&1' });
        const response = await browser.submit(consent.action, { csrf: consent.csrf, step: 'consent', decision: 'approve' });
        const location = clientRedirect(response);
        assert.equal(location.searchParams.get('state'), 'st ü&1');
        assert.equal(location.searchParams.get('iss'), ISSUER);
        assert.equal(location.searchParams.has('error'), false);
        const code = location.searchParams.get('code');
        assert.ok(code);
        const token = await redeemCode(h, client, code, verifier, { resource: revision.resource });
        assert.equal(token.status, 200);
        const claims = jwtClaims(((await token.json()) as { access_token: string }).access_token);
        assert.equal(claims.aud, resource);
        assert.equal(claims.sub, user.id);
      });

      it('deny: access_denied with state and iss, no code, nothing remembered', async () => {
        const { h, client, user } = await setup();
        const { browser, consent } = await signIn(h, client, revision, user);
        const response = await browser.submit(consent.action, { csrf: consent.csrf, step: 'consent', decision: 'deny' });
        const location = clientRedirect(response);
        assert.equal(location.searchParams.get('error'), 'access_denied');
        assert.ok(location.searchParams.get('error_description'));
        assert.equal(location.searchParams.get('state'), 'state-123');
        assert.equal(location.searchParams.get('iss'), ISSUER);
        assert.equal(location.searchParams.has('code'), false);
        assert.deepEqual(await h.store.listConsents({ userId: user.id }), []);
      });

      it('refuses a decision other than approve or deny', async () => {
        const { h, client, user } = await setup();
        const { browser, consent } = await signIn(h, client, revision, user);
        for (const decision of [undefined, 'yes', 'APPROVE']) {
          const values: Record<string, string> = { csrf: consent.csrf, step: 'consent' };
          if (decision !== undefined) values.decision = decision;
          const response = await browser.submit(consent.action, values);
          assert.equal(response.status, 400);
          assert.equal(response.headers.get('location'), null);
        }
        // The form is still usable.
        const ok = await browser.submit(consent.action, { csrf: consent.csrf, step: 'consent', decision: 'approve' });
        assert.ok(clientRedirect(ok).searchParams.get('code'));
      });
    });

    describe('remembered consent', () => {
      it('skips both pages the second time in the same browser', async () => {
        const { h, client, user } = await setup();
        const first = await start(h, client, revision);
        const firstRun = await completeInteraction(first.browser, first.response, { user });
        assert.deepEqual(firstRun.pages, ['login', 'consent']);
        const request = authorizationRequest(client, revision, { state: 'second' });
        const response = await first.browser.fetch(authorizeUrl(request.params));
        const location = clientRedirect(response);
        assert.equal(location.searchParams.get('state'), 'second');
        assert.equal(location.searchParams.get('iss'), ISSUER);
        const token = await redeemCode(h, client, location.searchParams.get('code')!, request.verifier, { resource: revision.resource });
        assert.equal(token.status, 200);
      });

      it('skips only the consent page in a new browser (login still needed)', async () => {
        const { h, client, user } = await setup();
        const first = await start(h, client, revision);
        await completeInteraction(first.browser, first.response, { user });
        const second = await start(h, client, revision);
        const run = await completeInteraction(second.browser, second.response, { user });
        assert.deepEqual(run.pages, ['login']);
        assert.ok(run.location.searchParams.get('code'));
      });

      it('asks again for a wider scope, and a narrower one is covered', async () => {
        const { h, client, user } = await setup();
        const first = await start(h, client, revision, { scope: 'mcp:tools' });
        await completeInteraction(first.browser, first.response, { user });
        const wider = await start(h, client, revision, { scope: 'mcp:tools mcp:admin' }, first.browser);
        const widerRun = await completeInteraction(wider.browser, wider.response, { user });
        assert.deepEqual(widerRun.pages, ['consent']);
        // mcp:admin alone is covered now: straight back to the client.
        const narrower = authorizationRequest(client, revision, { scope: 'mcp:admin' });
        assert.ok(clientRedirect(await first.browser.fetch(authorizeUrl(narrower.params))).searchParams.get('code'));
      });

      it('asks again for another resource', async () => {
        const { h, client, user } = await setup();
        const first = await start(h, client, revision);
        await completeInteraction(first.browser, first.response, { user });
        const other = await start(h, client, revision, { resource: OTHER_RESOURCE }, first.browser);
        const run = await completeInteraction(other.browser, other.response, { user });
        assert.deepEqual(run.pages, ['consent']);
      });

      it('asks again for another client', async () => {
        const { h, client, user } = await setup();
        const first = await start(h, client, revision);
        await completeInteraction(first.browser, first.response, { user });
        const otherClient = await registerClient(h, { client_name: 'Other' });
        const other = await start(h, otherClient, revision, {}, first.browser);
        const run = await completeInteraction(other.browser, other.response, { user });
        assert.deepEqual(run.pages, ['consent']);
      });

      it('asks again after store.revokeConsents', async () => {
        const { h, client, user } = await setup();
        const first = await start(h, client, revision);
        await completeInteraction(first.browser, first.response, { user });
        assert.equal(await h.store.revokeConsents(user.id, client.client_id, h.clock.now), 1);
        const again = await start(h, client, revision, {}, first.browser);
        const run = await completeInteraction(again.browser, again.response, { user });
        assert.deepEqual(run.pages, ['consent']);
      });
    });

    describe('CSRF and browser binding', () => {
      for (const [label, csrf] of [
        ['a wrong', 'x'.repeat(32)],
        ['an empty', ''],
        ['a missing', undefined],
      ] as const) {
        it(`refuses a login with ${label} csrf (403, no session)`, async () => {
          const { h, client, user } = await setup();
          const { browser, path } = await start(h, client, revision);
          const page = await openPage(browser, path);
          const values: Record<string, string> = { step: 'login', username: user.username, password: user.password };
          if (csrf !== undefined) values.csrf = csrf;
          const response = await browser.submit(page.action, values);
          assert.equal(response.status, 403);
          assertPageHeaders(response);
          assert.equal(sessionCookie(response), undefined);
        });

        it(`refuses a consent with ${label} csrf (403, no code)`, async () => {
          const { h, client, user } = await setup();
          const { browser, consent } = await signIn(h, client, revision, user);
          const values: Record<string, string> = { step: 'consent', decision: 'approve' };
          if (csrf !== undefined) values.csrf = csrf;
          const response = await browser.submit(consent.action, values);
          assert.equal(response.status, 403);
          assert.equal(response.headers.get('location'), null);
          assert.deepEqual(await h.store.listConsents({}), []);
        });
      }

      it('refuses the csrf token of another interaction', async () => {
        const { h, client, user } = await setup();
        const a = await start(h, client, revision);
        const b = await start(h, client, revision, {}, a.browser);
        const pageA = await openPage(a.browser, a.path);
        const pageB = await openPage(b.browser, b.path);
        assert.notEqual(pageA.csrf, pageB.csrf);
        const response = await a.browser.submit(pageA.action, { csrf: pageB.csrf, step: 'login', username: user.username, password: user.password });
        assert.equal(response.status, 403);
      });

      it('refuses a login posted from another browser (no ca_browser cookie)', async () => {
        const { h, client, user } = await setup();
        const { browser, path } = await start(h, client, revision);
        const page = await openPage(browser, path);
        const attacker = new Browser(h);
        const response = await attacker.submit(page.action, { csrf: page.csrf, step: 'login', username: user.username, password: user.password });
        assert.ok(response.status >= 400 && response.status < 500, `refused, got ${response.status}`);
        assert.equal(response.headers.get('location'), null);
        assert.equal(sessionCookie(response), undefined);
        // Nor can it read the page.
        const view = await attacker.fetch(path);
        assert.equal(view.status, 400);
        assert.doesNotMatch(await view.text(), new RegExp(page.csrf));
      });

      it('refuses a consent posted from another browser, even one signed in as the same user', async () => {
        const { h, client, user } = await setup();
        const { consent } = await signIn(h, client, revision, user);
        const attacker = new Browser(h);
        const refused = await attacker.submit(consent.action, { csrf: consent.csrf, step: 'consent', decision: 'approve' });
        assert.ok(refused.status >= 400 && refused.status < 500);
        assert.equal(refused.headers.get('location'), null);

        // A browser with its own session (and its own ca_browser) is still not this interaction's browser.
        const other = await start(h, client, revision);
        await completeInteraction(other.browser, other.response, { user, decision: 'deny' });
        const stillRefused = await other.browser.submit(consent.action, { csrf: consent.csrf, step: 'consent', decision: 'approve' });
        assert.ok(stillRefused.status >= 400 && stillRefused.status < 500);
        assert.equal(stillRefused.headers.get('location'), null);
        assert.deepEqual(await h.store.listConsents({}), []);
      });

      it('refuses a consent from the right browser once its session is gone', async () => {
        const { h, client, user } = await setup();
        const { browser, consent, response } = await signIn(h, client, revision, user);
        const binding = response.headers
          .getSetCookie()
          .find((line) => line.startsWith('ca_browser='))!
          .split(';')[0]!;
        const sessionless = new Browser(h);
        const refused = await sessionless.fetch(consent.action, {
          method: 'POST',
          body: new URLSearchParams({ csrf: consent.csrf, step: 'consent', decision: 'approve' }),
          headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: binding },
        });
        assert.equal(refused.status, 400);
        assert.equal(refused.headers.get('location'), null);
        // The original browser can still finish.
        const ok = await browser.submit(consent.action, { csrf: consent.csrf, step: 'consent', decision: 'approve' });
        assert.ok(clientRedirect(ok).searchParams.get('code'));
      });

      it('double-submitting the consent form yields one code', async () => {
        const { h, client, user } = await setup();
        const { browser, consent } = await signIn(h, client, revision, user);
        const submit = () => browser.submit(consent.action, { csrf: consent.csrf, step: 'consent', decision: 'approve' });
        const first = await submit();
        assert.ok(clientRedirect(first).searchParams.get('code'));
        const second = await submit();
        assert.equal(second.status, 400);
        assert.equal(second.headers.get('location'), null);
      });

      it('concurrent submissions of the consent form yield at most one code', async () => {
        const { h, client, user } = await setup();
        const { browser, consent } = await signIn(h, client, revision, user);
        const responses = await Promise.all(
          Array.from({ length: 5 }, () => browser.submit(consent.action, { csrf: consent.csrf, step: 'consent', decision: 'approve' })),
        );
        const codes = responses.map((r) => r.headers.get('location')).filter((l) => l !== null && new URL(l).searchParams.has('code'));
        assert.equal(codes.length, 1);
      });

      it('refuses a login after the interaction is finished', async () => {
        const { h, client, user } = await setup();
        const { browser, consent } = await signIn(h, client, revision, user);
        await browser.submit(consent.action, { csrf: consent.csrf, step: 'consent', decision: 'approve' });
        const replay = await browser.submit(consent.action, { csrf: consent.csrf, step: 'login', username: user.username, password: user.password });
        assert.equal(replay.status, 400);
      });
    });

    describe('steps by state', () => {
      it('refuses a step no page posts (400), before and after signing in', async () => {
        const { h, client, user } = await setup();
        const { browser, path } = await start(h, client, revision);
        const page = await openPage(browser, path);
        for (const step of [undefined, '', 'logout', 'LOGIN', '__proto__', 'constructor', 'toString']) {
          const values: Record<string, string> = { csrf: page.csrf, username: user.username, password: user.password };
          if (step !== undefined) values.step = step;
          const response = await browser.submit(page.action, values);
          assert.equal(response.status, 400, `step ${step}`);
          assert.match(await response.text(), /Unexpected form\./);
          assert.equal(sessionCookie(response), undefined);
        }
        const { browser: signedIn, consent } = await signIn(h, client, revision, user);
        const response = await signedIn.submit(consent.action, { csrf: consent.csrf, step: 'approve', decision: 'approve' });
        assert.equal(response.status, 400);
        assert.match(await response.text(), /Unexpected form\./);
        assert.deepEqual(await h.store.listConsents({}), []);
      });

      it('refuses a consent posted before anyone signed in (400, no code, nothing remembered)', async () => {
        const { h, client } = await setup();
        const { browser, path } = await start(h, client, revision);
        const page = await openPage(browser, path);
        const response = await browser.submit(page.action, { csrf: page.csrf, step: 'consent', decision: 'approve' });
        assert.equal(response.status, 400);
        assert.equal(response.headers.get('location'), null);
        assert.match(await response.text(), /session ended/);
        assert.deepEqual(await h.store.listConsents({}), []);
        // Nothing changed: the sign-in page is still what the interaction shows.
        assert.match((await openPage(browser, path)).html, /name="password"/);
      });

      it('answers a sign-in form left open after signing in with the sign-in page: its error on a wrong password, the consent page after the right one', async () => {
        const { h, client, user } = await setup();
        const other = await addUser(h, 'bob', 'bob horse battery staple');
        const started = await start(h, client, revision);
        const login = await openPage(started.browser, started.path);
        await started.browser.submit(login.action, { csrf: login.csrf, step: 'login', username: user.username, password: user.password });
        // The same sign-in form, posted again (another tab, or the Back button's copy).
        const wrong = await started.browser.submit(login.action, { csrf: login.csrf, step: 'login', username: other.username, password: 'wrong' });
        assert.equal(wrong.status, 401);
        const html = await wrong.text();
        assert.match(html, /role="alert">Wrong username or password\.</);
        assert.match(html, /name="password"/);
        const right = await started.browser.submit(login.action, { csrf: login.csrf, step: 'login', username: other.username, password: other.password });
        assert.equal(right.status, 303);
        assert.equal(right.headers.get('location'), started.path);
        assert.match((await openPage(started.browser, started.path)).html, /Signed in as <strong>bob<\/strong>/);
      });
    });

    describe('expiry', () => {
      it('shows the expired page after 600 s, for viewing and for posting', async () => {
        const { h, client, user } = await setup();
        const { browser, path } = await start(h, client, revision);
        const page = await openPage(browser, path);
        h.clock.now += 601;
        const view = await browser.fetch(path);
        assert.equal(view.status, 400);
        assertPageHeaders(view);
        const html = await view.text();
        assert.match(html, /expired/);
        assert.doesNotMatch(html, /name="password"/);
        const post = await browser.submit(page.action, { csrf: page.csrf, step: 'login', username: user.username, password: user.password });
        assert.equal(post.status, 400);
        assert.equal(sessionCookie(post), undefined);
        assert.match(await post.text(), /expired/);
      });

      it('still works just before the limit', async () => {
        const { h, client, user } = await setup();
        const { browser, path } = await start(h, client, revision);
        h.clock.now += 599;
        const page = await openPage(browser, path);
        assert.equal(page.response.status, 200);
        const response = await browser.submit(page.action, { csrf: page.csrf, step: 'login', username: user.username, password: user.password });
        assert.equal(response.status, 303);
      });

      it('refuses a consent given after expiry', async () => {
        const { h, client, user } = await setup();
        const { browser, consent } = await signIn(h, client, revision, user);
        h.clock.now += 601;
        const response = await browser.submit(consent.action, { csrf: consent.csrf, step: 'consent', decision: 'approve' });
        assert.equal(response.status, 400);
        assert.equal(response.headers.get('location'), null);
        assert.match(await response.text(), /expired/);
      });

      it('shows the expired page for an unknown interaction', async () => {
        const { h } = await setup();
        const response = await new Browser(h).fetch('/interaction/does-not-exist');
        assert.equal(response.status, 400);
        assertPageHeaders(response);
      });
    });

    describe('pages and cookies', () => {
      it('every page carries the security headers and no script', async () => {
        const { h, client, user } = await setup();
        const { browser, path } = await start(h, client, revision);
        const login = await openPage(browser, path);
        assertPageHeaders(login.response);
        assertNoScript(login.html);
        const failed = await browser.submit(login.action, { csrf: login.csrf, step: 'login', username: user.username, password: 'nope' });
        assertPageHeaders(failed);
        assertNoScript(await failed.text());
        await browser.submit(login.action, { csrf: login.csrf, step: 'login', username: user.username, password: user.password });
        const consent = await openPage(browser, path);
        assertPageHeaders(consent.response);
        assertNoScript(consent.html);
        const forbidden = await browser.submit(consent.action, { csrf: 'bad', step: 'consent', decision: 'approve' });
        assertPageHeaders(forbidden);
        assertNoScript(await forbidden.text());
      });

      it('lets the forms post to us and the client redirect origin only', async () => {
        const { h, client } = await setup();
        const { browser, path } = await start(h, client, revision);
        const csp = (await browser.fetch(path)).headers.get('content-security-policy')!;
        const formAction = /form-action ([^;]+)/.exec(csp)?.[1];
        assert.equal(formAction, "'self' http://127.0.0.1:33333");
      });

      it('HTML-escapes the client name on the login and consent pages', async () => {
        const { h, client, user } = await setup({ client_name: '<script>alert(1)</script>' });
        const { consent } = await signIn(h, client, revision, user);
        assertNoScript(consent.html);
        assert.match(consent.html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
        const fresh = await start(h, client, revision, {}, new Browser(h));
        const login = await openPage(fresh.browser, fresh.path);
        assertNoScript(login.html);
        assert.match(login.html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
      });

      it('sets HttpOnly, SameSite=Lax cookies (browser binding and session)', async () => {
        const { h, client, user } = await setup();
        const { browser, path, response } = await start(h, client, revision);
        const binding = response.headers.getSetCookie().find((line) => line.startsWith('ca_browser='));
        assert.ok(binding, 'the browser binding cookie is set by /authorize');
        const login = await openPage(browser, path);
        const signedIn = await browser.submit(login.action, { csrf: login.csrf, step: 'login', username: user.username, password: user.password });
        const session = sessionCookie(signedIn);
        assert.ok(session);
        for (const cookie of [binding, session]) {
          const attributes = cookie.split(';').map((part) => part.trim().toLowerCase());
          assert.ok(attributes.includes('httponly'), cookie);
          assert.ok(attributes.includes('samesite=lax'), cookie);
          assert.ok(attributes.includes('path=/'), cookie);
          assert.ok(!attributes.includes('secure'), 'not Secure on an http (loopback) issuer');
        }
      });

      it('names the cookies __Host- on an https issuer: Secure, Path=/, no Domain, so no other host can set them', async () => {
        const { h, client, user } = await setup({}, { issuer: 'https://auth.example.com' });
        // The harness sends its requests to its own http origin; the routes only look at the path.
        const { browser, path, response } = await start(h, client, revision);
        const binding = response.headers.getSetCookie().find((line) => line.startsWith('__Host-ca_browser='));
        assert.ok(binding, response.headers.getSetCookie().join('\n'));
        const login = await openPage(browser, path);
        const signedIn = await browser.submit(login.action, { csrf: login.csrf, step: 'login', username: user.username, password: user.password });
        const session = signedIn.headers.getSetCookie().find((line) => line.startsWith('__Host-ca_session='));
        assert.ok(session, signedIn.headers.getSetCookie().join('\n'));
        for (const cookie of [binding, session]) {
          const attributes = cookie.split(';').map((part) => part.trim().toLowerCase());
          assert.ok(attributes.includes('secure') && attributes.includes('path=/') && attributes.includes('httponly'), cookie);
          assert.ok(!attributes.some((attribute) => attribute.startsWith('domain=')), cookie);
        }
        // The plain name another host could plant binds nothing: the interaction is not this browser's.
        const planted = await h.request(path, { headers: { cookie: `ca_browser=${binding.split(';')[0]!.split('=')[1]}` } });
        assert.equal(planted.status, 400);
        assert.match(await planted.text(), /expired or was opened in another browser/);
      });

      it('keeps the browser binding cookie across authorizations', async () => {
        const { h, client } = await setup();
        const first = await start(h, client, revision);
        assert.ok(first.response.headers.getSetCookie().some((line) => line.startsWith('ca_browser=')));
        const second = await start(h, client, revision, {}, first.browser);
        assert.equal(
          second.response.headers.getSetCookie().some((line) => line.startsWith('ca_browser=')),
          false,
        );
      });
    });
  });
}
