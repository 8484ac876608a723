import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashSecret } from '../../src/core/secrets.js';
import { expectRefused, expectServed, onEveryStore, USER, whoami } from '../attack/setup.js';
import {
  addUser,
  authorize,
  authorizeUrl,
  Browser,
  createHarness,
  expectOAuthError,
  ISSUER,
  parseForm,
  pkcePair,
  postForm,
  redeemCode,
  REDIRECT_URI,
  registerClient,
  RESOURCE,
  signInAndConsent,
  type Harness,
  type TestClient,
} from '../helpers/harness.js';

/** The csrf token of the account page's forms (one per browser, the same in each form). */
function csrfOf(html: string): string {
  return parseForm(html).csrf;
}

/** Opens /account in this browser and signs in there with a password; returns the answer to the post. */
async function signInAtAccount(browser: Browser, user: { username: string; password: string }): Promise<Response> {
  const page = await browser.fetch('/account');
  return browser.submit('/account', { csrf: csrfOf(await page.text()), action: 'sign-in', username: user.username, password: user.password });
}

/** A person approves `client` for the co-hosted server in `browser` (signing in on the way) and redeems the code. */
async function approve(h: Harness, client: TestClient, user: { username: string; password: string }, browser = new Browser(h)) {
  const { location, verifier } = await authorize(h, { client, user, resource: RESOURCE, browser });
  const response = await redeemCode(h, client, location.searchParams.get('code')!, verifier, { resource: RESOURCE });
  assert.equal(response.status, 200, await response.clone().text());
  return { browser, tokens: (await response.json()) as { access_token: string; refresh_token: string } };
}

function refresh(h: Harness, client: TestClient, refreshToken: string): Promise<Response> {
  return postForm(h, '/token', { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.client_id });
}

describe('/account without a session', () => {
  it('shows a password sign-in form bound to this browser', async () => {
    const h = createHarness();
    const response = await new Browser(h).fetch('/account');
    assert.equal(response.status, 200);
    assert.match(response.headers.get('set-cookie') ?? '', /^ca_browser=/);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    const html = await response.text();
    assert.match(html, /name="password"/);
    assert.match(html, /name="action" value="sign-in"/);
  });

  it('signs a person in with the right password, and then lists their applications', async () => {
    const h = createHarness();
    const user = await addUser(h);
    const browser = new Browser(h);
    const signedIn = await signInAtAccount(browser, user);
    assert.equal(signedIn.status, 303);
    assert.equal(signedIn.headers.get('location'), '/account');
    const html = await (await browser.fetch('/account')).text();
    assert.match(html, /Signed in as <strong>alice<\/strong>/);
    assert.match(html, /Applications you approved/);
  });

  it('refuses a wrong password, and counts it in the same throttle as the interaction sign-in', async () => {
    const h = createHarness();
    const user = await addUser(h);
    const browser = new Browser(h);
    for (let i = 0; i < 6; i++) {
      const wrong = await signInAtAccount(browser, { ...user, password: 'wrong' });
      assert.equal(wrong.status, 401);
      assert.match(await wrong.text(), /Wrong username or password/);
    }
    const throttled = await signInAtAccount(browser, user);
    assert.equal(throttled.status, 429);
    assert.equal(throttled.headers.get('retry-after'), '1');
    assert.match(await throttled.text(), /Too many failed sign-ins/);
    assert.ok(h.log.some((e) => e.event === 'login_throttled' && e.page === 'account'));
    // The sign-in of an authorization request is throttled by the same failures.
    const client = await registerClient(h);
    await assert.rejects(authorize(h, { client, user, resource: RESOURCE }), /unexpected 429/);
  });
});

describe('/account signed in', () => {
  it('lists only the applications this person approved, with what the consent page says of each', async () => {
    const h = createHarness();
    const alice = await addUser(h);
    const bob = await addUser(h, 'bob', 'another good password');
    const mine = await registerClient(h, { client_name: 'Alice <Notes>' });
    const theirs = await registerClient(h, { client_name: 'Bob Mail' });
    const { browser } = await approve(h, mine, alice);
    await approve(h, theirs, bob);
    const html = await (await browser.fetch('/account')).text();
    assert.match(html, /Alice &lt;Notes&gt; <span class="tag">unverified<\/span>/);
    assert.ok(html.includes(mine.client_id));
    assert.ok(!html.includes('Bob Mail') && !html.includes(theirs.client_id));
    assert.match(html, /<code>mcp:tools<\/code>|<span class="muted">no scopes<\/span>/);
    assert.match(html, /<dt>Approved<\/dt><dd>2027-01-15 08:00 UTC<\/dd>/);
    assert.match(html, new RegExp(`name="client_id" value="${mine.client_id}"`));
    // Revoking is described as it is: no new tokens at once; tokens held, as far as other servers learn of it.
    assert.match(
      html,
      /Revoking stops an application getting new tokens at once: it has to ask you again\. Access tokens it already holds are refused by servers that follow/,
    );
  });

  it('shows the registrations of one program under one self-chosen name as one card, each revocable, and all at once', async () => {
    const h = createHarness();
    const alice = await addUser(h);
    const bob = await addUser(h, 'bob', 'another good password');
    // The CLI as it registers: loopback redirect, the browser and device grants; once per credentials file.
    const cli = {
      client_name: 'context-auth CLI',
      application_type: 'native',
      grant_types: ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
    };
    const registrations = [await registerClient(h, cli), await registerClient(h, cli), await registerClient(h, cli)];
    const other = await registerClient(h, { client_name: 'Notes' });
    const browser = new Browser(h);
    for (const client of [...registrations, other]) await approve(h, client, alice, browser);
    const bobsCli = await registerClient(h, cli);
    await approve(h, bobsCli, bob);

    const html = await (await browser.fetch('/account')).text();
    const cards = html.split('<section class="app">').slice(1);
    assert.equal(cards.length, 2, 'one card for the three CLI registrations, one for Notes');
    const card = cards.find((c) => c.includes('context-auth CLI'))!;
    assert.match(card, /context-auth CLI <span class="tag">unverified<\/span>/, 'the name stays marked as chosen by whoever registered it');
    assert.match(card, /3 registrations under this name, each approved by you/);
    // Where they run, once for the three: what their registrations allow (127.0.0.1 redirects, the device grant).
    assert.equal(
      card.match(
        /<dt>Runs as<\/dt><dd>a program on the computer you signed in from \(its sign-in returns to 127\.0\.0\.1 there\), or on a device that showed you a code<\/dd>/g,
      )?.length,
      1,
    );
    for (const client of registrations) assert.match(card, new RegExp(`name="client_id" value="${client.client_id}"`));
    const all = /name="client_ids" value="([^"]+)"/.exec(card)?.[1]?.split(' ');
    assert.deepEqual(all?.sort(), registrations.map((c) => c.client_id).sort(), 'Revoke all names the three');
    assert.ok(!html.includes(bobsCli.client_id), "another person's registration under the same name is not shown");
    assert.match(
      cards.find((c) => c.includes('Notes'))!,
      /<dt>Runs as<\/dt><dd>a program on the computer you signed in from \(its sign-in returns to 127\.0\.0\.1 there\)<\/dd>/,
    );

    // Revoke all: alice's three go; her other application and bob's registration stay.
    const csrf = csrfOf(html);
    const withBobs = [...all!, bobsCli.client_id].join(' ');
    assert.equal((await browser.submit('/account', { csrf, action: 'revoke', client_ids: withBobs })).status, 303);
    assert.deepEqual(
      (await h.store.listConsents({ userId: alice.id })).map((c) => c.clientId),
      [other.client_id],
    );
    assert.equal((await h.store.listConsents({ userId: bob.id })).length, 1, "a client id names only the signed-in person's consent");
    assert.equal(h.log.filter((e) => e.event === 'consent_revoked').length, 3);
  });

  it("revokes nothing of another person: a client id in the form only ever names the signed-in person's consent", async () => {
    const h = createHarness();
    const alice = await addUser(h);
    const bob = await addUser(h, 'bob', 'another good password');
    const client = await registerClient(h);
    const { tokens } = await approve(h, client, alice);
    const bobs = new Browser(h);
    await signInAtAccount(bobs, bob);
    const csrf = csrfOf(await (await bobs.fetch('/account')).text());
    const revoked = await bobs.submit('/account', { csrf, action: 'revoke', client_id: client.client_id });
    assert.equal(revoked.status, 303);
    assert.equal((await h.store.listConsents({ userId: alice.id })).length, 1);
    assert.equal((await refresh(h, client, tokens.refresh_token)).status, 200);
  });

  it("refuses a form without the csrf token, or with another browser's", async () => {
    const h = createHarness();
    const user = await addUser(h);
    const client = await registerClient(h);
    const { browser } = await approve(h, client, user);
    const other = new Browser(h);
    const othersToken = csrfOf(await (await other.fetch('/account')).text());
    for (const csrf of [undefined, '', othersToken, 'x'.repeat(64)]) {
      const response = await browser.submit('/account', { ...(csrf === undefined ? {} : { csrf }), action: 'revoke', client_id: client.client_id });
      assert.equal(response.status, 403);
      assert.match(await response.text(), /could not be verified/);
    }
    // Nor does a sign-in go through without it (no login CSRF).
    const signIn = await other.submit('/account', { action: 'sign-in', username: user.username, password: user.password });
    assert.equal(signIn.status, 403);
    assert.equal((await h.store.listConsents({ userId: user.id })).length, 1);
  });

  it("binds a signed-in page's forms to the session: the sign-in page's token, another session's, or an ended session's is refused", async () => {
    const h = createHarness();
    const alice = await addUser(h);
    const bob = await addUser(h, 'bob', 'another good password');
    const client = await registerClient(h);
    await approve(h, client, alice);
    const browser = new Browser(h);
    const signInToken = csrfOf(await (await browser.fetch('/account')).text());
    await browser.submit('/account', { csrf: signInToken, action: 'sign-in', username: alice.username, password: alice.password });
    const alicesToken = csrfOf(await (await browser.fetch('/account')).text());
    assert.notEqual(alicesToken, signInToken);
    const bobs = new Browser(h);
    await signInAtAccount(bobs, bob);
    const bobsToken = csrfOf(await (await bobs.fetch('/account')).text());
    for (const csrf of [signInToken, bobsToken]) {
      const response = await browser.submit('/account', { csrf, action: 'revoke', client_id: client.client_id });
      assert.equal(response.status, 403);
      assert.match(await response.text(), /could not be verified/);
    }
    // The same browser, signed out and in again: the old session's token is worth nothing.
    assert.equal((await browser.submit('/account', { csrf: alicesToken, action: 'sign-out' })).status, 303);
    await signInAtAccount(browser, alice);
    assert.equal((await browser.submit('/account', { csrf: alicesToken, action: 'revoke', client_id: client.client_id })).status, 403);
    assert.equal((await h.store.listConsents({ userId: alice.id })).length, 1, 'nothing revoked');
    const fresh = csrfOf(await (await browser.fetch('/account')).text());
    assert.equal((await browser.submit('/account', { csrf: fresh, action: 'revoke', client_id: client.client_id })).status, 303);
    assert.equal((await h.store.listConsents({ userId: alice.id })).length, 0);
  });

  it('signs out: the session ends in the store, not only the cookie', async () => {
    const h = createHarness();
    const user = await addUser(h);
    const browser = new Browser(h);
    const signedIn = await signInAtAccount(browser, user);
    const sessionId = /ca_session=([^;]+)/.exec(signedIn.headers.get('set-cookie') ?? '')![1]!;
    assert.ok(await h.store.getSession(hashSecret(sessionId), h.clock.now));
    const csrf = csrfOf(await (await browser.fetch('/account')).text());
    const out = await browser.submit('/account', { csrf, action: 'sign-out' });
    assert.equal(out.status, 303);
    assert.match(out.headers.get('set-cookie') ?? '', /^ca_session=; .*Max-Age=0/);
    assert.equal(await h.store.getSession(hashSecret(sessionId), h.clock.now), undefined);
    const after = await (await browser.fetch('/account?done=signed-out')).text();
    assert.match(after, /You are signed out/);
    assert.match(after, /name="password"/);
    // The old cookie, replayed, signs nobody in.
    const replayed = await h.request('/account', { headers: { cookie: `ca_session=${sessionId}` } });
    assert.match(await replayed.text(), /name="password"/);
  });

  it('is linked from the consent page', async () => {
    const h = createHarness();
    const user = await addUser(h);
    const client = await registerClient(h);
    const pages: string[] = [];
    const browser = new Browser(h);
    const first = await browser.fetch(
      authorizeUrl({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT_URI,
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
      }),
    );
    await signInAndConsent(browser, first, user, 'approve', ISSUER, pages);
    assert.match(pages.at(-1)!, /You can <a href="\/account">revoke this later<\/a>\./);
  });
});

onEveryStore('/account revoke', (env) => {
  it("ends the application's grant at once: its refresh token is refused at /token, its access token at the co-hosted guard", async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const { browser, tokens } = await approve(h, client, USER);
    await expectServed(await whoami(h, `Bearer ${tokens.access_token}`));
    const csrf = csrfOf(await (await browser.fetch('/account')).text());
    const revoked = await browser.submit('/account', { csrf, action: 'revoke', client_id: client.client_id });
    assert.equal(revoked.status, 303);
    assert.equal(revoked.headers.get('location'), '/account?done=revoked');
    await expectRefused(await whoami(h, `Bearer ${tokens.access_token}`), 401, 'invalid_token', /revoked/);
    await expectOAuthError(await refresh(h, client, tokens.refresh_token), 400, 'invalid_grant');
    const html = await (await browser.fetch('/account?done=revoked')).text();
    assert.match(html, /Access revoked/);
    // What is true of a JWT another server checks on its own: refused once that server learns of it, else when it expires.
    assert.match(
      html,
      /can no longer get tokens\. Access tokens it already holds are refused by servers that follow this server&#39;s revocations when they next check \(usually within seconds\), and by other servers only when they expire, at most 10 minutes later\./,
    );
    assert.ok(!html.includes(client.client_id));
    assert.ok(h.log.some((e) => e.event === 'consent_revoked' && e.client_id === client.client_id));
  });
});
