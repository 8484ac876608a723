/**
 * Password guessing at the sign-in form (RFC 9700 §4.15's cousin: OAuth 2.1 §7.4 credential
 * guessing). After five free failures, each failure doubles the wait before the
 * next attempt is even checked, per account and per address; during the wait even the right
 * password signs nobody in (429, Retry-After); the wait always ends, so an attacker cannot lock a
 * victim out for good. Each address also has a sign-in budget. Each group is its own `describe`,
 * so further limits join the group they belong to.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { authorizationRequest, authorizeUrl, Browser, parseForm, registerClient, REVISIONS, type Harness } from '../helpers/harness.js';
import { PEER_HEADER } from '../helpers/co-hosted.js';
import { assertUnchanged, onEveryStore, USER } from './setup.js';

interface SignInForm {
  attempt(username: string, password: string, address?: string): Promise<Response>;
}

/** An open sign-in page in a browser; each attempt posts its form as a person (or a script) would. */
async function signInForm(h: Harness): Promise<SignInForm> {
  const client = await registerClient(h);
  const browser = new Browser(h);
  const { params } = authorizationRequest(client, REVISIONS[1]);
  const first = await browser.fetch(authorizeUrl(params));
  const { action, csrf } = parseForm(await (await browser.fetch(first.headers.get('location')!)).text());
  return {
    attempt: (username, password, address) =>
      browser.fetch(action, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(address ? { [PEER_HEADER]: address } : {}) },
        body: new URLSearchParams({ csrf, step: 'login', username, password }),
      }),
  };
}

/** The sign-in page again, saying so (401: the credentials were checked and are wrong). */
async function expectWrongPassword(response: Response): Promise<void> {
  assert.equal(response.status, 401);
  assert.match(await response.text(), /Wrong username or password/);
}

/** The throttled page: 429, a Retry-After of `seconds`, no session cookie. */
async function expectThrottled(response: Response, seconds?: number): Promise<void> {
  const text = await response.text();
  assert.equal(response.status, 429, text.slice(0, 300));
  assert.match(text, /Too many failed sign-ins/);
  if (seconds !== undefined) assert.equal(response.headers.get('retry-after'), String(seconds));
  assert.equal(response.headers.getSetCookie().length, 0, 'no session cookie');
}

onEveryStore('brute force at the sign-in form', (env) => {
  describe('back-off', () => {
    it('after five failures the sixth attempt waits, even with the right password; then the right one works', async () => {
      const h = await env.target();
      const form = await signInForm(h);
      for (let i = 0; i < 6; i++) await expectWrongPassword(await form.attempt(USER.username, `guess-${i}`));
      const before = await env.counts();
      await expectThrottled(await form.attempt(USER.username, USER.password), 1);
      assertUnchanged(before, await env.counts(), ['sessions'], 'throttled sign-in');
      h.clock.now += 1;
      const response = await form.attempt(USER.username, USER.password);
      assert.equal(response.status, 303, 'the wait ended: no lockout');
      assert.equal((await env.counts()).sessions, before.sessions + 1);
    });

    it('each further failure doubles the wait: 1, 2, 4, 8 seconds', async () => {
      const h = await env.target();
      const form = await signInForm(h);
      for (let i = 0; i < 5; i++) await expectWrongPassword(await form.attempt(USER.username, `guess-${i}`));
      for (const wait of [1, 2, 4, 8]) {
        await expectWrongPassword(await form.attempt(USER.username, 'again'));
        await expectThrottled(await form.attempt(USER.username, 'again'), wait);
        h.clock.now += wait;
      }
    });

    it('guessing across many accounts from one address is throttled by address', async () => {
      const h = await env.target();
      const form = await signInForm(h);
      for (let i = 0; i < 6; i++) await expectWrongPassword(await form.attempt(`user${i}`, 'password1', '203.0.113.9'));
      await expectThrottled(await form.attempt('user99', 'password1', '203.0.113.9'));
      // The victim, from her own address, is not held by the attacker's address.
      assert.equal((await form.attempt(USER.username, USER.password, '198.51.100.1')).status, 303);
    });

    it('guessing from ever new addresses of one IPv6 /64 is throttled as one address', async () => {
      const h = await env.target();
      const form = await signInForm(h);
      for (let i = 1; i <= 6; i++) await expectWrongPassword(await form.attempt(`user${i}`, 'password1', `2001:db8:7:7::${i}`));
      await expectThrottled(await form.attempt('user99', 'password1', '2001:db8:7:7:abcd::99'));
      assert.equal((await form.attempt(USER.username, USER.password, '2001:db8:7:8::1')).status, 303, 'the next /64 is not held');
    });

    it('twelve wrong passwords sent at once are checked no further than one by one; the right one sent behind them waits', async () => {
      const h = await env.target();
      const form = await signInForm(h);
      const before = await env.counts();
      const batch = Array.from({ length: 12 }, (_, i) => form.attempt(USER.username, `guess-${i}`));
      // Behind the batch for sure: once one guess has been answered (its password check takes a
      // while), every guess has reached the throttle, however slowly the store answered them.
      await Promise.race(batch);
      const right = await form.attempt(USER.username, USER.password);
      const answers = await Promise.all(batch);
      const statuses = answers.map((response) => response.status);
      assert.equal(statuses.filter((status) => status === 401).length, 6, `only as many checked as one by one: ${statuses.join(' ')}`);
      for (const response of answers) if (response.status !== 401) await expectThrottled(response);
      await expectThrottled(right);
      await expectThrottled(await form.attempt(USER.username, USER.password), 1);
      assertUnchanged(before, await env.counts(), ['sessions'], 'a batch of guesses');
      h.clock.now += 1;
      assert.equal((await form.attempt(USER.username, USER.password)).status, 303, 'the wait ended: no lockout');
    });
  });

  describe('rate limit per address', () => {
    it('an address past its sign-in budget gets 429 with Retry-After before any password is checked', async () => {
      const h = await env.target({ rateLimits: { signIn: { burst: 3, perMinute: 1 } } });
      const form = await signInForm(h);
      for (let i = 0; i < 3; i++) await expectWrongPassword(await form.attempt(USER.username, `guess-${i}`, '203.0.113.10'));
      const before = await env.counts();
      const limited = await form.attempt(USER.username, USER.password, '203.0.113.10');
      assert.equal(limited.status, 429);
      assert.ok(Number(limited.headers.get('retry-after')) > 0, 'Retry-After');
      assertUnchanged(before, await env.counts(), ['sessions'], 'rate-limited sign-in');
    });
  });
});
