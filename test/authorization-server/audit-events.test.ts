/**
 * Audit events kept in the store (the `auditEvents` option): on a real SQLite file and a real
 * PostgreSQL database, a sign-in and a token request land as rows with their fields in columns;
 * events are written in batches, one store call each; a store that fails keeps them for the next
 * write, up to a bound past which the oldest are dropped and counted; close() writes the rest; a
 * request never waits on any of it; the sweep deletes only events past their retention.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AuditEventWriter } from '../../src/authorization-server/audit-events.js';
import type { AuditEvent } from '../../src/authorization-server/audit.js';
import type { AuditEventRecord, FullStore } from '../../src/store/store.js';
import { addUser, createHarness, obtainTokens, REVISIONS, type Harness } from '../helpers/harness.js';
import { prometheusSamples } from '../helpers/prometheus.js';
import { STORE_KINDS, type OpenedStore } from '../helpers/stores.js';

const DAY_MS = 24 * 3600 * 1000;

/** The store, with its recordAuditEvents calls counted, and failing (or never answering) while told to. */
function watched(store: FullStore): { store: FullStore; calls: AuditEventRecord[][]; mode: { down: boolean; hang: boolean } } {
  const calls: AuditEventRecord[][] = [];
  const mode = { down: false, hang: false };
  const view = Object.create(store) as FullStore;
  view.recordAuditEvents = async (events) => {
    calls.push(events);
    if (mode.hang) return new Promise<void>(() => {});
    if (mode.down) throw new Error('connection refused');
    return store.recordAuditEvents(events);
  };
  return { store: view, calls, mode };
}

function record(index: number): AuditEvent {
  return { event: 'login_failed', address: '192.0.2.1', attempt: index };
}

/** The events recorded at `from` ms and the next thousand, oldest first: one test's own. */
async function keptFrom(store: FullStore, from: number): Promise<AuditEventRecord[]> {
  const kept = await store.listAuditEvents({ limit: 100, since: from });
  return kept.filter((e) => e.occurredAt < from + 1000).reverse();
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Only how long a hang takes to be reported: nothing waits for it to pass. */
const HANG_BOUND_MS = 60_000;

/** The writer's delayed writes, run when the test says: `due` is the delay of the one waiting, if any. */
function delayedWrites() {
  let waiting: { ms: number; write: () => void } | undefined;
  return {
    after: (ms: number, write: () => void) => {
      const entry = { ms, write };
      waiting = entry;
      return () => {
        if (waiting === entry) waiting = undefined;
      };
    },
    get due(): number | undefined {
      return waiting?.ms;
    },
    /** The delay has passed: its write starts (the store is called in this turn). */
    elapse(): void {
      const entry = waiting;
      assert.ok(entry, 'no write is waiting for its delay');
      waiting = undefined;
      entry.write();
    },
  };
}

for (const kind of STORE_KINDS) {
  describe(`audit events in the store (${kind.name})`, () => {
    let opened: OpenedStore;
    before(async () => {
      opened = await kind.open();
    });
    after(async () => {
      await opened?.close();
    });

    it('a sign-in and a token request land with their fields in columns, the rest as details, no token anywhere', async () => {
      const { store, calls } = watched(opened.store);
      const h: Harness = createHarness({ store: opened.store, serverStore: () => store, auditEvents: true });
      const user = await addUser(h, 'carol');
      const { client, tokens } = await obtainTokens(h, REVISIONS[1]!, { user: { username: 'carol', password: user.password } });
      await h.server.close();
      assert.equal(calls.flat().length, h.log.length, 'every event logged, written once');

      const kept = await opened.store.listAuditEvents({ limit: 50, clientId: client.client_id });
      const byName = new Map(kept.map((event) => [event.event, event]));
      const login = byName.get('login');
      assert.ok(login, `no login among ${kept.map((e) => e.event).join(', ')}`);
      assert.equal(login.userId, user.id);
      assert.equal(login.outcome, 'success');
      const issued = byName.get('token_issued');
      assert.ok(issued);
      assert.equal(issued.clientId, client.client_id);
      assert.equal(issued.userId, null);
      assert.match(issued.grantId ?? '', /.+/);
      assert.deepEqual(issued.details, { grant_type: 'authorization_code' });
      assert.equal(issued.occurredAt, h.clock.now * 1000, 'the time the event was logged, in ms');
      // The same events as the log, in the same order.
      assert.deepEqual(
        kept.map((e) => e.event).reverse(),
        h.log.filter((e) => e.client_id === client.client_id).map((e) => e.event),
      );
      const everything = JSON.stringify(kept);
      for (const secret of [tokens.access_token, tokens.refresh_token, user.password]) assert.ok(!everything.includes(String(secret)));
    });

    it('events logged in one turn are one write, after that turn; a few wait for the delay', async () => {
      const { store, calls } = watched(opened.store);
      const delays = delayedWrites();
      const writer = new AuditEventWriter(store, { warn: () => assert.fail('no warning'), flushDelayMs: 200, after: delays.after });
      for (let i = 0; i < 150; i++) writer.add(record(i), 1000 + i);
      assert.equal(calls.length, 0, 'not while the request runs');
      await turn();
      assert.equal(calls.length, 1, 'written in the next turn, without waiting for the delay');
      assert.equal(calls[0]!.length, 150);
      await writer.flush();
      for (let i = 0; i < 3; i++) writer.add(record(i), 2000 + i);
      await turn();
      assert.equal(calls.length, 1, 'three wait for the delay');
      assert.equal(delays.due, 200);
      delays.elapse();
      assert.equal(calls.length, 2);
      assert.equal(calls[1]!.length, 3);
      await writer.flush();
      assert.equal(writer.pending, 0);
      assert.equal((await keptFrom(opened.store, 2000)).length, 3);
      await writer.close();
    });

    it('a store that fails keeps the events, says so once, and delivers them when it is back', async () => {
      const { store, calls, mode } = watched(opened.store);
      const warnings: string[] = [];
      const delays = delayedWrites();
      const writer = new AuditEventWriter(store, { warn: (m) => warnings.push(m), flushDelayMs: 50, after: delays.after });
      mode.down = true;
      for (let i = 0; i < 5; i++) writer.add(record(i), 50_000 + i);
      await writer.flush();
      for (let i = 5; i < 8; i++) writer.add(record(i), 50_000 + i);
      // Retried after the delay, failing again, and again.
      for (let retry = 0; retry < 2; retry++) {
        assert.equal(delays.due, 50, 'the next try waits for the delay');
        delays.elapse();
        await turn();
      }
      assert.equal(calls.length, 3);
      assert.equal(writer.pending, 8);
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0]!, /cannot write audit events to the store \(connection refused\)/);
      mode.down = false;
      delays.elapse();
      await writer.flush();
      assert.equal(writer.pending, 0);
      const kept = await keptFrom(opened.store, 50_000);
      assert.deepEqual(
        kept.map((e) => e.details?.attempt),
        [0, 1, 2, 3, 4, 5, 6, 7],
        'all of them, in order',
      );
      assert.match(warnings.at(-1)!, /written to the store again/);
      await writer.close();
    });

    it('beyond the bound the oldest are dropped and counted, with one warning', async () => {
      const { store, mode } = watched(opened.store);
      const warnings: string[] = [];
      let dropped = 0;
      const writer = new AuditEventWriter(store, { warn: (m) => warnings.push(m), dropped: (n) => (dropped += n), maxPending: 10, flushDelayMs: 10_000 });
      mode.down = true;
      for (let i = 0; i < 25; i++) writer.add(record(i), 60_000 + i);
      await writer.flush();
      assert.equal(writer.pending, 10);
      assert.equal(dropped, 15);
      assert.equal(warnings.filter((m) => /dropping the oldest/.test(m)).length, 1, warnings.join('\n'));
      mode.down = false;
      await writer.flush();
      const kept = await keptFrom(opened.store, 60_000);
      assert.deepEqual(
        kept.map((e) => e.details?.attempt),
        [15, 16, 17, 18, 19, 20, 21, 22, 23, 24],
        'the newest ten',
      );
      assert.match(warnings.at(-1)!, /15 were dropped/);
      await writer.close();
    });

    it('close() writes what waits; a request never waits on a store that does not answer', async () => {
      const { store, mode } = watched(opened.store);
      const h: Harness = createHarness({ store: opened.store, serverStore: () => store, auditEvents: true });
      await addUser(h, 'dave');
      mode.hang = true;
      // A write that never ends is in flight; requests still answer.
      const first = h.request('/.well-known/oauth-authorization-server');
      assert.equal((await first).status, 200);
      const signIn = obtainTokens(h, REVISIONS[0]!, { user: { username: 'dave', password: 'correct horse battery' } });
      // The bound only reports a hang: a request that waited on the store would never answer.
      let stuck: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([signIn.then(() => 'answered'), new Promise((resolve) => (stuck = setTimeout(resolve, HANG_BOUND_MS, 'stuck')))]);
      clearTimeout(stuck);
      assert.equal(outcome, 'answered');
      mode.hang = false;

      const writer = new AuditEventWriter(opened.store, { warn: () => assert.fail('no warning'), flushDelayMs: 60_000 });
      for (let i = 0; i < 3; i++) writer.add(record(i), 70_000 + i);
      await writer.close();
      assert.equal((await keptFrom(opened.store, 70_000)).length, 3);
    });

    it('the sweep deletes only events older than the retention, and the metrics show it', async () => {
      const h: Harness = createHarness({ store: opened.store, auditEvents: { retentionDays: 7 }, metrics: true });
      const nowMs = h.clock.now * 1000;
      const at = (daysAgo: number, tag: string): AuditEventRecord => ({
        occurredAt: nowMs - daysAgo * DAY_MS,
        event: 'logout',
        outcome: 'success',
        reason: null,
        clientId: null,
        userId: null,
        grantId: null,
        address: null,
        provider: null,
        details: { tag },
      });
      await opened.store.recordAuditEvents([at(30, 'month'), at(8, 'week-and-a-day'), at(6.9, 'within'), at(0, 'now')]);
      const deleted = await h.server.sweep();
      assert.ok(deleted >= 2);
      const left = await opened.store.listAuditEvents({ limit: 10, event: 'logout' });
      assert.deepEqual(left.map((e) => e.details?.tag).sort(), ['now', 'within']);

      const text = await h.server.metrics!.metrics();
      const samples = prometheusSamples(text);
      assert.equal(samples.get('context_auth_sweep_running'), 0);
      assert.equal(samples.get('context_auth_sweep_last_deleted_rows'), deleted);
      assert.ok((samples.get('context_auth_sweep_last_completed_timestamp_seconds') ?? 0) > Date.now() / 1000 - 60);
      assert.ok((samples.get('context_auth_sweep_duration_seconds') ?? -1) >= 0);
      assert.equal(samples.get('context_auth_audit_events_pending'), 0);
      assert.equal(samples.get('context_auth_audit_events_dropped_total'), 0);
      await h.server.close();
    });
  });
}

describe('audit events in the store: off, or kept for 0 days', () => {
  it('off by default in the library; retention 0 writes none and the sweep deletes those kept before', async () => {
    const opened = await STORE_KINDS[0]!.open();
    try {
      const { store, calls } = watched(opened.store);
      const off = createHarness({ store: opened.store, serverStore: () => store });
      await addUser(off, 'erin');
      await obtainTokens(off, REVISIONS[0]!, { user: { username: 'erin', password: 'correct horse battery' } });
      await off.server.close();
      await opened.store.recordAuditEvents([
        {
          occurredAt: 1,
          event: 'logout',
          outcome: 'success',
          reason: null,
          clientId: null,
          userId: null,
          grantId: null,
          address: null,
          provider: null,
          details: null,
        },
      ]);
      await off.server.sweep();
      assert.equal((await opened.store.listAuditEvents({ limit: 10 })).length, 1, 'left alone when off');

      const none = createHarness({ store: opened.store, serverStore: () => store, auditEvents: { retentionDays: 0 } });
      await obtainTokens(none, REVISIONS[0]!, { user: { username: 'erin', password: 'correct horse battery' } });
      await none.server.close();
      assert.equal(calls.length, 0, 'nothing written');
      await none.server.sweep();
      assert.equal((await opened.store.listAuditEvents({ limit: 10 })).length, 0, 'none kept');
    } finally {
      await opened.close();
    }
  });

  it('refuses a retention that is not a whole number of days', () => {
    for (const retentionDays of [-1, 1.5, Number.NaN]) {
      assert.throws(() => createHarness({ auditEvents: { retentionDays } }), /auditEvents.retentionDays must be a whole number of days/);
    }
  });
});
