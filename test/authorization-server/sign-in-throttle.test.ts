/**
 * Sign-in throttling (RFC 9700 §4.x brute force; without it, ~900 wrong passwords a minute
 * went through): after five free failures each one doubles the wait, per account and per address,
 * the page says so (429 with Retry-After), and it is never a lockout.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { SignInThrottle } from '../../src/authorization-server/sign-in-throttle.js';
import { Browser, addUser, authorizeUrl, createHarness, parseForm, pkcePair, registerClient, REDIRECT_URI, type Harness } from '../helpers/harness.js';

async function loginPage(h: Harness, browser: Browser): Promise<{ action: string; csrf: string }> {
  const client = await registerClient(h);
  const start = await browser.fetch(
    authorizeUrl({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
    }),
  );
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

  it("another account from another address is not slowed by someone else's failures", async () => {
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

  it('a batch of wrong passwords sent at once is checked no further than one by one; the right one behind it waits', async () => {
    const h = createHarness();
    const user = await addUser(h);
    const browser = new Browser(h);
    const { action, csrf } = await loginPage(h, browser);
    const attempt = (password: string) => browser.submit(action, { csrf, step: 'login', username: user.username, password });
    const wrong = Array.from({ length: 12 }, (_, i) => attempt(`wrong-${i}`));
    await sleep(20);
    const right = await attempt(user.password);
    const statuses = (await Promise.all(wrong)).map((response) => response.status);
    assert.deepEqual(statuses.filter((status) => status === 401).length, 6, `five free failures and the sixth, then waits: ${statuses.join(' ')}`);
    assert.deepEqual(statuses.filter((status) => status === 429).length, 6, statuses.join(' '));
    assert.equal(right.status, 429, 'the right password sent behind the batch does not sign in');
    assert.equal(right.headers.getSetCookie().length, 0);
    assert.equal((await attempt(user.password)).status, 429, 'nor once the batch was answered, while the wait runs');
    h.clock.now += 1;
    assert.equal((await attempt(user.password)).status, 303, 'the wait ends: no lockout');
  });

  it('an attempt being checked holds its place until settled: failed starts the wait then, succeeded clears the account, abandoned counts for nothing', () => {
    const throttle = new SignInThrottle();
    const keys = SignInThrottle.keys('someone', '203.0.113.9');
    const attempts = Array.from({ length: 6 }, () => throttle.begin(keys, 50_000));
    assert.ok(
      attempts.every((attempt) => typeof attempt === 'object'),
      'five free failures and the sixth may be checked',
    );
    assert.equal(throttle.begin(keys, 50_000), 1, 'a seventh waits while six may still fail');
    const [first, ...rest] = attempts as Exclude<(typeof attempts)[number], number>[];
    first!.abandoned();
    first!.failed(50_000); // settled already: nothing more
    const seventh = throttle.begin(keys, 50_000);
    assert.equal(typeof seventh, 'object', 'the abandoned one freed its place');
    for (const attempt of [...rest, seventh as Exclude<typeof seventh, number>]) attempt.failed(50_500);
    assert.equal(throttle.wait(keys, 51_499), 1, 'the wait started when the sixth failure was found');
    assert.equal(throttle.wait(keys, 51_500), 0);
    const right = throttle.begin(keys, 51_500);
    assert.equal(typeof right, 'object');
    (right as Exclude<typeof right, number>).succeeded();
    assert.equal(throttle.wait(SignInThrottle.keys('someone', undefined), 51_500), 0, 'the account starts afresh');
    throttle.failed(SignInThrottle.keys('someone-else', '203.0.113.9'), 51_500);
    assert.ok(throttle.wait(SignInThrottle.keys('someone-else', '203.0.113.9'), 51_500) > 0, 'the address keeps its count');
  });

  it("by the address's /64 for IPv6: rotating through one subscriber's network does not escape the wait", () => {
    const throttle = new SignInThrottle();
    for (let i = 1; i <= 6; i++) throttle.failed(SignInThrottle.keys(`user-${i}`, `2001:db8:1:2::${i}`), 100_000);
    assert.ok(throttle.wait(SignInThrottle.keys('someone-new', '2001:db8:1:2:ffff:ffff:ffff:ffff'), 100_000) > 0);
    assert.equal(throttle.wait(SignInThrottle.keys('someone-new', '2001:db8:1:3::1'), 100_000), 0, 'the next /64 is someone else');
  });

  it('a full table forgets the least recently used entries, not a victim who failed recently', () => {
    const throttle = new SignInThrottle();
    const oldest = SignInThrottle.keys('oldest', '198.51.100.1');
    for (let i = 0; i < 6; i++) throttle.failed(oldest, 1_000_000);
    // Filled nearly to its bound (100,000 entries) with older failures, each of its own address.
    for (let i = 0; i < 99_990; i++) throttle.failed([`address:filler-${i}`], 1_000_000);
    const victim = SignInThrottle.keys('victim', undefined);
    for (let i = 0; i < 8; i++) throttle.failed(victim, 1_000_100);
    // Then past it.
    for (let i = 0; i < 1_000; i++) throttle.failed([`address:newcomer-${i}`], 1_000_200);
    assert.equal(throttle.wait(victim, 1_000_200), 4, "the victim's wait is kept");
    assert.equal(throttle.wait(oldest, 1_000_200), 0, 'the least recently used entry was forgotten');
  });
});
