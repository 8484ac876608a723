/** Stored audit events (the auditEvents capability). */
import assert from 'node:assert/strict';
import type { AuditEventQuery, FullStore } from '../store.js';
import { steps, type Suite } from './harness.js';
import { NOW, makeAuditEvent } from './records.js';

export function auditEventTests(suite: Suite): void {
  const { describe, itNeeds } = suite;
  const { parties } = steps(suite);
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  describe('audit events', () => {
    const event = makeAuditEvent;

    itNeeds('auditEvents', 'keeps events with their fields and details, newest first, a page at a time', async () => {
      const recorded = [
        event({ event: 'login', userId: 'u1', address: '203.0.113.7', provider: 'corp', details: { method: 'upstream' } }),
        event({ event: 'login_failed', outcome: 'failure', reason: 'wrong password', occurredAt: NOW * 1000 + 1 }),
        event({
          event: 'token_issued',
          clientId: 'c1',
          userId: 'u1',
          grantId: 'g1',
          occurredAt: NOW * 1000 + 2,
          details: { grant_type: 'authorization_code', dpop: true, n: 3 },
        }),
      ];
      await store.recordAuditEvents(recorded);
      const all = await store.listAuditEvents({ limit: 10 });
      assert.deepEqual(
        all.map(({ seq: _seq, ...rest }) => rest),
        [...recorded].reverse(),
      );
      assert.ok(all[0]!.seq! > all[1]!.seq! && all[1]!.seq! > all[2]!.seq!, 'seq increases as events are recorded');
      const page = await store.listAuditEvents({ limit: 2 });
      const next = await store.listAuditEvents({ limit: 2, beforeSeq: page[1]!.seq });
      assert.deepEqual(
        [...page, ...next].map((e) => e.event),
        ['token_issued', 'login_failed', 'login'],
      );
    });

    itNeeds('auditEvents', 'filters by event, outcome, user, client, address and time', async () => {
      await store.recordAuditEvents([
        event({ event: 'login', userId: 'u1', address: 'a1', occurredAt: 1000 }),
        event({ event: 'login_failed', outcome: 'failure', userId: 'u2', address: 'a2', occurredAt: 2000 }),
        event({ event: 'rate_limited', outcome: 'failure', clientId: 'c1', address: 'a2', occurredAt: 3000 }),
      ]);
      const names = async (query: Omit<AuditEventQuery, 'limit'>) => (await store.listAuditEvents({ limit: 10, ...query })).map((e) => e.event);
      assert.deepEqual(await names({ event: 'login' }), ['login']);
      assert.deepEqual(await names({ outcome: 'failure' }), ['rate_limited', 'login_failed']);
      assert.deepEqual(await names({ userId: 'u2' }), ['login_failed']);
      assert.deepEqual(await names({ clientId: 'c1' }), ['rate_limited']);
      assert.deepEqual(await names({ address: 'a2' }), ['rate_limited', 'login_failed']);
      assert.deepEqual(await names({ since: 2000 }), ['rate_limited', 'login_failed']);
      assert.deepEqual(await names({ address: 'a2', outcome: 'failure', since: 2500 }), ['rate_limited']);
    });

    itNeeds(['auditEvents', 'upkeep'], 'the sweep deletes events older than their retention only when asked, and keeps the rest', async () => {
      await store.recordAuditEvents([event({ event: 'login', occurredAt: 1000 }), event({ event: 'logout', occurredAt: 5000 })]);
      await store.sweepExpired(NOW);
      assert.equal((await store.listAuditEvents({ limit: 10 })).length, 2, 'kept without auditEventsBefore');
      assert.ok((await store.sweepExpired(NOW, { auditEventsBefore: 5000 })) >= 1);
      assert.deepEqual(
        (await store.listAuditEvents({ limit: 10 })).map((e) => e.event),
        ['logout'],
      );
    });

    itNeeds(['auditEvents', 'administration'], 'an event outlives the client and the user it names', async () => {
      const { client, user } = await parties();
      await store.recordAuditEvents([event({ clientId: client.clientId, userId: user.id })]);
      await store.deleteClient(client.clientId);
      await store.deleteUser(user.username);
      assert.equal((await store.listAuditEvents({ limit: 10, clientId: client.clientId })).length, 1);
    });
  });
}
