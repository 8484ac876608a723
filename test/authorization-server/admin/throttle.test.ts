/**
 * The console's sign-in throttling page: refused and failed sign-ins, wrong user codes and
 * rate-limit refusals of the last 24 hours, one row per address bucket, most recent first, read
 * within a bound it owns up to; and who the throttle makes wait right now.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createHarness, type Harness } from '../../helpers/harness.js';
import { atConsoleSignIn, signInToConsole, type SignedIn } from '../../helpers/admin-console.js';
import { CONSOLE_STORES, storedEvent } from '../../helpers/stored-audit-events.js';
import type { FullStore } from '../../../src/store/store.js';

const DAY_MS = 24 * 3600 * 1000;

/** The first table's rows, each as its cells' text. */
function rows(html: string): string[][] {
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? '';
  return [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) =>
    [...row[1]!.matchAll(/<td>([\s\S]*?)<\/td>/g)].map((cell) => cell[1]!.replace(/<[^>]+>/g, '').trim()),
  );
}

for (const kind of CONSOLE_STORES) {
  describe(`admin console: sign-in throttling (${kind.name})`, () => {
    let opened: Awaited<ReturnType<typeof kind.open>>;
    let h: Harness;
    let admin: SignedIn;

    before(async () => {
      opened = await kind.open();
      h = createHarness({ store: opened.store as FullStore });
      admin = await signInToConsole(h);
      const now = h.clock.now * 1000;
      await h.store.recordAuditEvents([
        // Older than a day: not counted.
        storedEvent({ event: 'login_failed', address: '198.51.100.1', occurredAt: now - DAY_MS - 1000 }),
        storedEvent({ event: 'login_failed', address: '203.0.113.5', occurredAt: now - DAY_MS + 60_000 }),
        storedEvent({ event: 'login_failed', address: '203.0.113.5', occurredAt: now - 7_000 }),
        storedEvent({ event: 'login_throttled', address: '203.0.113.5', occurredAt: now - 6_000 }),
        storedEvent({ event: 'user_code_wrong', address: '2001:db8:1:2::/64', occurredAt: now - 5_000 }),
        storedEvent({ event: 'user_code_throttled', address: '2001:db8:1:2::/64', occurredAt: now - 4_000 }),
        storedEvent({ event: 'rate_limited', address: '2001:db8:1:2::/64', occurredAt: now - 3_000, details: { limit: 'token', refused: 12 } }),
        storedEvent({ event: 'rate_limited', occurredAt: now - 9_000, details: { limit: 'register', refused: 2 } }),
        // Not a refusal: not counted.
        storedEvent({ event: 'login', outcome: 'success', address: '192.0.2.1', occurredAt: now - 1_000 }),
      ]);
    });
    after(() => opened.close());

    it('counts each kind per address bucket over the last 24 hours, most recent first, each address linking to its events', async () => {
      const response = await admin.browser.fetch('/admin/throttle');
      assert.equal(response.status, 200);
      const html = await response.text();
      assert.match(html, /aria-current="page">Sign-in throttling</);
      assert.match(
        html,
        /<th scope="col">Address<\/th><th scope="col">Failed sign-ins<\/th><th scope="col">Sign-ins throttled<\/th><th scope="col">Wrong user codes<\/th><th scope="col">User codes throttled<\/th><th scope="col">Rate-limit refusals<\/th><th scope="col">Last<\/th>/,
      );
      assert.deepEqual(rows(html), [
        ['2001:db8:1:2::/64', '0', '0', '1', '1', '12', '2027-01-15 07:59:57 UTC'],
        ['203.0.113.5', '2', '1', '0', '0', '0', '2027-01-15 07:59:54 UTC'],
        ['no address', '0', '0', '0', '0', '2', '2027-01-15 07:59:51 UTC'],
      ]);
      assert.match(html, /<a href="\/admin\/activity\?address=2001%3Adb8%3A1%3A2%3A%3A%2F64"><code class="nowrap">2001:db8:1:2::\/64<\/code><\/a>/);
      assert.doesNotMatch(html, /198\.51\.100\.1|192\.0\.2\.1/);
      assert.doesNotMatch(html, /Only the latest/);
    });

    it('says so when a kind had more events in the window than it reads', async () => {
      const now = h.clock.now * 1000;
      await h.store.recordAuditEvents(
        Array.from({ length: 1001 }, (_, i) => storedEvent({ event: 'user_code_wrong', address: `192.0.2.${i % 200}`, occurredAt: now - 60_000 + i })),
      );
      const html = await (await admin.browser.fetch('/admin/throttle')).text();
      assert.match(html, /Only the latest 1000 events of each kind were read, and there were more of these: wrong user codes\./);
      const counted = rows(html).reduce((sum, cells) => sum + Number(cells[3]), 0);
      assert.equal(counted, 1000);
    });
  });
}

describe('admin console: who waits now', () => {
  it('lists the accounts and addresses the sign-in throttle makes wait, longest first', async () => {
    const h = createHarness({ clientAddress: () => '203.0.113.9' });
    const admin = await signInToConsole(h);
    const empty = await (await admin.browser.fetch('/admin/throttle')).text();
    assert.match(empty, /No account or address is waiting now/);
    const stranger = await atConsoleSignIn(h);
    for (let i = 0; i < 7; i++) await stranger.browser.submit('/admin', { csrf: stranger.csrf, action: 'sign-in', username: 'mallory', password: 'guess' });
    const html = await (await admin.browser.fetch('/admin/throttle')).text();
    const waiting = rows(html.slice(html.indexOf('<h2>Waiting now</h2>')));
    assert.deepEqual(waiting.map((cells) => cells.slice(0, 2)).sort(), [
      ['account', 'mallory'],
      ['address', '203.0.113.9'],
    ]);
    assert.ok(waiting.every((cells) => /^\d+ s$/.test(cells[2]!)));
  });
});
