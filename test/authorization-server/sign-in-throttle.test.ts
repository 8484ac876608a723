/**
 * Sign-in throttling (RFC 9700 §4.x brute force; issue: ~900 wrong passwords a minute went
 * through): after five free failures each one doubles the wait, per account and per address,
 * the page says so (429 with Retry-After), and it is never a lockout.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SignInThrottle } from '../../src/authorization-server/sign-in-throttle.js';
import { Browser, addUser, authorizeUrl, createHarness, parseForm, pkcePair, registerClient, REDIRECT_URI, type Harness } from '../helpers/harness.js';

async function loginPage(h: Harness, browser: Browser): Promise<{ action: string; csrf: string }> {
  const client = await registerClient(h);
  const start = await browser.fetch(authorizeUrl({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT_URI, code_challenge: pkcePair().challenge, code_challenge_method: 'S256' }));
  return parseForm(await (await browser.fetch(start.headers.get('location')!)).text());
}

describe('sign-in throttling', () => {
  it('five free failures, then waits that double; the page says so; the right password after the wait works', async () => {
    const h = createHarness();
    const user = await addUser(h);
    const browser = new Browser(h);
    const { action, csrf } = await loginPage(h, browser);
    const attempt = (password: string) => browser.submit(action, { csrf, step: 'login', username: user.username, password });
    for (let i = 0; i < 6; i++) assert.equal((await attempt('wrong')).status, 401);
    const throttled = await attempt(user.password);
    assert.equal(throttled.status, 429, 'even the right password waits: the attempt is not checked');
    assert.equal(throttled.headers.get('retry-after'), '1');
    assert.match(await throttled.text(), /Too many failed sign-ins/);
    h.clock.now += 1;
    assert.equal((await attempt('wrong')).status, 401);
    assert.equal((await attempt(user.password)).headers.get('retry-after'), '2', 'the wait doubled');
    h.clock.now += 2;
    assert.equal((await attempt(user.password)).status, 303, 'after the wait, the right password signs in');
  });

  it('another account from another address is not slowed by someone else\'s failures', async () => {
    const h = createHarness();
    const alice = await addUser(h, 'alice');
    const bob = await addUser(h, 'bob');
    const browser = new Browser(h);
    const { action, csrf } = await loginPage(h, browser);
    for (let i = 0; i < 8; i++) await browser.submit(action, { csrf, step: 'login', username: alice.username, password: 'wrong' });
    const other = new Browser(h);
    const form = await loginPage(h, other);
    assert.equal((await other.submit(form.action, { csrf: form.csrf, step: 'login', username: bob.username, password: bob.password })).status, 303);
  });

  it('by address too: spraying many accounts from one address is slowed', async () => {
    const throttle = new SignInThrottle();
    for (let i = 0; i < 6; i++) throttle.failed(SignInThrottle.keys(`user-${i}`, '203.0.113.9'), 100_000);
    assert.ok(throttle.wait(SignInThrottle.keys('someone-new', '203.0.113.9'), 100_000) > 0);
    assert.equal(throttle.wait(SignInThrottle.keys('someone-new', '198.51.100.1'), 100_000), 0);
  });

  it('never a lockout: the wait is capped at 15 minutes however many failures', () => {
    const throttle = new SignInThrottle();
    const keys = SignInThrottle.keys('victim', undefined);
    for (let i = 0; i < 200; i++) throttle.failed(keys, 1_000_000);
    assert.equal(throttle.wait(keys, 1_000_000), 15 * 60);
    assert.equal(throttle.wait(keys, 1_000_000 + 15 * 60 * 1000), 0);
  });

  it('a wait lasts as long as it says from the failure, whatever the second it fell in (milliseconds, not whole seconds)', () => {
    const throttle = new SignInThrottle();
    const keys = SignInThrottle.keys('someone', '203.0.113.9');
    // The sixth failure late in a second: in whole seconds its wait of 1 s ended 100 ms later.
    for (let i = 0; i < 6; i++) throttle.failed(keys, 10_900);
    assert.equal(throttle.wait(keys, 11_000), 1, 'a tenth of a second later, still waiting (rounded up to 1 s)');
    assert.equal(throttle.wait(keys, 11_899), 1);
    assert.equal(throttle.wait(keys, 11_900), 0, 'a second after the failure');
  });
});
