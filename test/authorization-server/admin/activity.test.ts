/**
 * The console's activity page: stored audit events, newest first, a hundred a page, filtered by
 * event, outcome, person, client and address, every query value checked; absent where the store
 * keeps no audit events. On the memory store and a real SQLite file.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createHarness, type Harness } from '../../helpers/harness.js';
import { atConsoleSignIn, signInToConsole, type SignedIn } from '../../helpers/admin-console.js';
import { withoutCapabilities } from '../../helpers/core-store.js';
import { CONSOLE_STORES, storedEvent } from '../../helpers/stored-audit-events.js';
import { auditEventRecord } from '../../../src/authorization-server/audit-events.js';
import type { AuditEvent } from '../../../src/authorization-server/audit.js';
import { createMemoryStore } from '../../../src/store/memory.js';
import type { FullStore } from '../../../src/store/store.js';

/** The table's rows, each as its cells' text. */
function rows(html: string): string[][] {
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? '';
  return [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) =>
    [...row[1]!.matchAll(/<td>([\s\S]*?)<\/td>/g)].map((cell) =>
      cell[1]!
        .replace(/<[^>]+>/g, '')
        .replace(/&#39;/g, "'")
        .replace(/&quot;/g, '"')
        .trim(),
    ),
  );
}

const BASE_MS = 1_800_000_000_000;

for (const kind of CONSOLE_STORES) {
  describe(`admin console: activity (${kind.name})`, () => {
    let opened: Awaited<ReturnType<typeof kind.open>>;
    let h: Harness;
    let admin: SignedIn;
    const page = async (query = '') => admin.browser.fetch(`/admin/activity${query}`);

    before(async () => {
      opened = await kind.open();
      h = createHarness({ store: opened.store as FullStore });
      admin = await signInToConsole(h);
      await h.store.createUser({ id: 'user-gone', username: 'gone', passwordHash: 'x', createdAt: 1 });
      await h.store.deleteUser('gone');
      await h.store.recordAuditEvents([
        storedEvent({
          event: 'login',
          outcome: 'success',
          userId: admin.user.id,
          clientId: 'client-a',
          occurredAt: BASE_MS + 1_000,
          details: { page: 'admin' },
        }),
        storedEvent({ event: 'login_failed', address: '203.0.113.5', clientId: 'client-a', reason: 'no_users', occurredAt: BASE_MS + 2_000 }),
        storedEvent({ event: 'consent_granted', outcome: 'success', userId: 'user-gone', clientId: 'client-b', occurredAt: BASE_MS + 3_000 }),
        storedEvent({ event: 'rate_limited', address: '2001:db8:1:2::/64', occurredAt: BASE_MS + 4_500, details: { limit: 'token', refused: 3 } }),
      ]);
    });
    after(() => opened.close());

    it('lists events newest first: time to the second in UTC, the person by username (or id once gone), client, address, reason, details', async () => {
      const response = await page();
      assert.equal(response.status, 200);
      const html = await response.text();
      assert.match(html, /aria-current="page">Activity</);
      const shown = rows(html);
      assert.deepEqual(
        shown.map((cells) => cells[1]),
        ['rate_limited', 'consent_granted', 'login_failed', 'login'],
      );
      assert.deepEqual(shown[0], ['2027-01-15 08:00:04 UTC', 'rate_limited', 'failure', '', '', '2001:db8:1:2::/64', '', 'limit=token refused=3']);
      assert.equal(shown[1]![3], 'user-gone', 'a deleted person by their id');
      assert.equal(shown[3]![3], 'root', 'a person who exists by their username');
      assert.equal(shown[3]![7], 'page=admin');
      assert.equal(shown[2]![6], 'no_users');
    });

    it('offers every audit event in the filter, with a label for each field', async () => {
      const html = await (await page()).text();
      assert.match(html, /<label for="f-event">Event<\/label><select id="f-event" name="event">/);
      for (const name of ['any', 'login', 'rate_limited', 'user_code_throttled', 'sweep_failed']) assert.match(html, new RegExp(`<option value="${name}"`));
      for (const id of ['f-outcome', 'f-person', 'f-client', 'f-address']) assert.match(html, new RegExp(`<label for="${id}">`));
    });

    it('filters by event, outcome, person, client and address, and keeps the choice in the form', async () => {
      const events = async (query: string) => rows(await (await page(query)).text()).map((cells) => cells[1]);
      assert.deepEqual(await events('?event=login'), ['login']);
      assert.match(await (await page('?event=login')).text(), /<option value="login" selected>/);
      assert.deepEqual(await events('?outcome=success'), ['consent_granted', 'login']);
      assert.deepEqual(await events('?event=any&outcome=any'), ['rate_limited', 'consent_granted', 'login_failed', 'login']);
      assert.deepEqual(await events('?person=root'), ['login']);
      assert.deepEqual(await events('?client=client-a&outcome=failure'), ['login_failed']);
      assert.deepEqual(await events(`?address=${encodeURIComponent('2001:db8:1:2::/64')}`), ['rate_limited']);
    });

    it('says so when no person has the username, rather than an empty list', async () => {
      const response = await page('?person=nobody');
      assert.equal(response.status, 200);
      const html = await response.text();
      assert.match(html, /role="alert">Nobody has the username “nobody”/);
      assert.doesNotMatch(html, /<table>/);
      // "any" means no filter only in the lists: typed, it is a username like another.
      assert.match(await (await page('?person=any')).text(), /Nobody has the username “any”/);
    });

    it('refuses a query it cannot read with 400 and a sentence saying what is wrong', async () => {
      const refusals: [string, RegExp][] = [
        ['?event=made_up', /There is no event named &quot;made_up&quot;/],
        ['?outcome=maybe', /The outcome is either success or failure/],
        ['?before=abc', /The page link is malformed/],
        ['?before=0', /The page link is malformed/],
        ['?before=99999999999999999', /The page link is malformed/],
        ['?event=login&event=logout', /given more than once/],
        [`?client=${'x'.repeat(501)}`, /longer than 500 characters/],
      ];
      for (const [query, message] of refusals) {
        const response = await page(query);
        assert.equal(response.status, 400, query);
        assert.match(await response.text(), message, query);
      }
    });
  });
}

describe('admin console: activity pages', () => {
  it('shows a hundred events a page, newest first, and links to older ones until there are none', async () => {
    const h = createHarness();
    const admin = await signInToConsole(h);
    await h.store.recordAuditEvents(
      Array.from({ length: 230 }, (_, i) => storedEvent({ event: i % 2 ? 'login_failed' : 'token_issued', occurredAt: BASE_MS + i * 1000, details: { n: i } })),
    );
    const seen: string[] = [];
    let next: string | undefined = '/admin/activity';
    let pages = 0;
    while (next) {
      const html = await (await admin.browser.fetch(next)).text();
      pages++;
      const shown = rows(html);
      assert.ok(shown.length <= 100);
      seen.push(...shown.map((cells) => cells[7]!));
      if (pages > 1) assert.match(html, /<a href="\/admin\/activity">Newest events<\/a>/);
      next = /<a href="([^"]+)" rel="next">Older events<\/a>/.exec(html)?.[1]?.replace(/&amp;/g, '&');
    }
    assert.equal(pages, 3);
    assert.deepEqual(
      seen,
      Array.from({ length: 230 }, (_, i) => `n=${229 - i}`),
    );
  });

  it('keeps the filters on the link to older events', async () => {
    const h = createHarness();
    const admin = await signInToConsole(h);
    await h.store.recordAuditEvents(
      Array.from({ length: 160 }, (_, i) => storedEvent({ event: i % 3 ? 'login_failed' : 'token_issued', occurredAt: BASE_MS + i, details: { n: i } })),
    );
    const first = await (await admin.browser.fetch('/admin/activity?event=login_failed')).text();
    const older = /<a href="([^"]+)" rel="next">/.exec(first)?.[1]?.replace(/&amp;/g, '&');
    assert.match(older ?? '', /^\/admin\/activity\?event=login_failed&before=\d+$/);
    const second = rows(await (await admin.browser.fetch(older!)).text());
    // 106 of the 160 are failed sign-ins: a hundred, then the six older ones.
    assert.equal(rows(first).length, 100);
    assert.equal(second.length, 6);
    assert.ok(second.every((cells) => cells[1] === 'login_failed'));
  });

  it('shows an event the server itself logged: a failed sign-in, with its address bucket', async () => {
    const h = createHarness({ clientAddress: () => '2001:db8:5:6:7::1' });
    const admin = await signInToConsole(h);
    const stranger = await atConsoleSignIn(h);
    await stranger.browser.submit('/admin', { csrf: stranger.csrf, action: 'sign-in', username: 'root', password: 'wrong' });
    const logged = h.log.filter((event) => event.event === 'login_failed');
    assert.equal(logged.length, 1);
    await h.store.recordAuditEvents(logged.map((event) => auditEventRecord(event as AuditEvent, h.clock.now * 1000)));
    const shown = rows(await (await admin.browser.fetch('/admin/activity?event=login_failed')).text());
    assert.deepEqual(
      shown.map((cells) => cells[5]),
      ['2001:db8:5:6::/64'],
    );
  });

  it('is not offered where the store keeps no audit events', async () => {
    const h = createHarness({ serverStore: (store) => withoutCapabilities(store, ['auditEvents']) as ReturnType<typeof createMemoryStore> });
    const admin = await signInToConsole(h);
    const overview = await (await admin.browser.fetch('/admin')).text();
    assert.doesNotMatch(overview, /Activity|Sign-in throttling/);
    assert.equal((await admin.browser.fetch('/admin/activity')).status, 404);
    assert.equal((await admin.browser.fetch('/admin/throttle')).status, 404);
  });
});
