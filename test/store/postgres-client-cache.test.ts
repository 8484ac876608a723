/**
 * The PostgreSQL store's clients in memory: first the rules of what is kept (ClientCache with a
 * lookup that answers when told), then two replicas on one real database, where a change on one
 * must reach the other's lookups.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { FullStore } from '../../src/store/index.js';
import { ClientCache } from '../../src/store/client-cache.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { makeClient } from '../../src/store/testing/records.js';
import { countQueries, type QueryCounter } from '../helpers/pg-queries.js';
import { startPostgres, type TestDatabase } from '../helpers/postgres.js';

/** A cache over a table held here, counting the lookups that reach it; `hold` makes the next lookup wait for `release`. */
function cacheOver(rows: Map<string, string>, options: { ttlMs?: number; most?: number; now?: () => number } = {}) {
  let fetched = 0;
  let held: { release: () => void } | undefined;
  let holdNext = false;
  const cache = new ClientCache<string>({
    ...options,
    fetch: async (clientId) => {
      fetched++;
      const answer = rows.get(clientId);
      if (holdNext) {
        holdNext = false;
        await new Promise<void>((resolve) => (held = { release: resolve }));
      }
      return answer;
    },
  });
  return {
    cache,
    fetched: () => fetched,
    hold: () => void (holdNext = true),
    release: () => held!.release(),
  };
}

describe('ClientCache', () => {
  it('keeps a client found while announcements are heard, and nothing while they are not', async () => {
    const rows = new Map([['a', 'A']]);
    const c = cacheOver(rows);
    assert.equal(await c.cache.get('a'), 'A');
    assert.equal(await c.cache.get('a'), 'A');
    assert.equal(c.fetched(), 2, 'not listening: every lookup asks the database');
    c.cache.listening(true);
    await c.cache.get('a');
    await c.cache.get('a');
    assert.equal(c.fetched(), 3);
    c.cache.listening(false);
    rows.set('a', 'A2');
    assert.equal(await c.cache.get('a'), 'A2', 'the connection lost: what was kept is not used');
  });

  it('never keeps a client that was not found: a made-up ID always asks, and a new client is seen at once', async () => {
    const rows = new Map<string, string>();
    const c = cacheOver(rows);
    c.cache.listening(true);
    assert.equal(await c.cache.get('new'), undefined);
    rows.set('new', 'N');
    assert.equal(await c.cache.get('new'), 'N');
    assert.equal(c.cache.size, 1);
  });

  it('an announcement drops everything kept, and a lookup under way when it came is not kept', async () => {
    const rows = new Map([
      ['a', 'A'],
      ['b', 'B'],
    ]);
    const c = cacheOver(rows);
    c.cache.listening(true);
    await c.cache.get('a');
    c.cache.changed();
    assert.equal(c.cache.size, 0);
    c.hold();
    const reading = c.cache.get('b');
    await new Promise((resolve) => setImmediate(resolve));
    c.cache.changed();
    c.release();
    assert.equal(await reading, 'B');
    assert.equal(c.cache.size, 0, 'read before the change, perhaps: not kept');
  });

  it('while this process writes, nothing is read from memory or kept; when the write ends, everything is dropped', async () => {
    const rows = new Map([['a', 'A']]);
    const c = cacheOver(rows);
    c.cache.listening(true);
    await c.cache.get('a');
    const write = c.cache.writing();
    rows.set('a', 'A2');
    assert.equal(await c.cache.get('a'), 'A2', 'the write may have committed: the database answers');
    assert.equal(c.cache.size, 0);
    write.done();
    write.done();
    await c.cache.get('a');
    assert.equal(c.cache.size, 1, 'kept again once the write ended (done twice counts once)');
  });

  it(`keeps a row at most ttlMs, and at most \`most\` rows`, async () => {
    let now = 0;
    const rows = new Map([
      ['a', 'A'],
      ['b', 'B'],
      ['c', 'C'],
    ]);
    const c = cacheOver(rows, { ttlMs: 1000, most: 2, now: () => now });
    c.cache.listening(true);
    await c.cache.get('a');
    now = 999;
    await c.cache.get('a');
    assert.equal(c.fetched(), 1);
    now = 1000;
    await c.cache.get('a');
    assert.equal(c.fetched(), 2, 'older than ttlMs: asked again');
    await c.cache.get('b');
    assert.equal(c.cache.size, 2);
    await c.cache.get('c');
    assert.equal(c.cache.size, 1, 'at the bound, all dropped, then the new one kept');
  });
});

describe('clients kept in memory by PostgreSQL replicas', () => {
  let database: TestDatabase;
  let mine: FullStore;
  let theirs: FullStore;
  let monitor: pg.Client;
  /** Statements node-postgres sent that read the clients table. */
  let lookups: QueryCounter;

  before(async () => {
    database = await startPostgres();
    mine = await openPostgresStore({ connectionString: database.connectionString });
    theirs = await openPostgresStore({ connectionString: database.connectionString });
    monitor = new pg.Client({ connectionString: database.connectionString });
    await monitor.connect();
    lookups = countQueries(/FROM clients WHERE client_id/);
  });
  after(async () => {
    lookups.restore();
    await monitor.end();
    await mine.close();
    await theirs.close();
    await database.stop();
  });

  /** The pid of the connection that listens for client changes, once it listens. */
  async function listenerPid(other?: number): Promise<number> {
    for (let attempt = 0; attempt < 200; attempt++) {
      const { rows } = await monitor.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'context-auth clients' AND query LIKE 'LISTEN%' AND pid <> $1",
        [other ?? 0],
      );
      if (rows.length === 1) return rows[0]!.pid;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('no listening connection');
  }

  /** Mine's lookup, until it answers `expected` (the announcement is on its way), for at most 2 s. */
  async function eventually<T>(lookup: () => Promise<T>, expected: T): Promise<void> {
    for (let attempt = 0; attempt < 80; attempt++) {
      const found = await lookup();
      try {
        assert.deepEqual(found, expected);
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
    assert.deepEqual(await lookup(), expected);
  }

  it('a client looked up again is answered from memory: no statement', async () => {
    const client = makeClient();
    await mine.createClient(client);
    await mine.getClient(client.clientId);
    await listenerPid();
    await mine.getClient(client.clientId);
    lookups.reset();
    assert.deepEqual(await mine.getClient(client.clientId), client);
    assert.equal(lookups.count, 0);
  });

  it('a client replaced or removed by another replica is seen so by this one once the announcement arrives', async () => {
    const client = makeClient();
    await theirs.createClient(client);
    await listenerPid();
    assert.deepEqual(await mine.getClient(client.clientId), client);
    const replaced = { ...client, redirectUris: ['http://127.0.0.1:9/elsewhere'] };
    await theirs.saveClient(replaced);
    await eventually(() => mine.getClient(client.clientId), replaced);
    assert.equal(await theirs.deleteClient(client.clientId), true);
    await eventually(() => mine.getClient(client.clientId), undefined);
  });

  it('a replica reads what it wrote itself at once, without waiting for the announcement', async () => {
    const client = makeClient();
    await mine.createClient(client);
    await listenerPid();
    await mine.getClient(client.clientId);
    const replaced = { ...client, clientName: 'Renamed' };
    await mine.saveClient(replaced);
    assert.deepEqual(await mine.getClient(client.clientId), replaced);
    await mine.deleteClient(client.clientId);
    assert.equal(await mine.getClient(client.clientId), undefined);
  });

  it('a change made while the listening connection was away is seen after it is back', async () => {
    const client = makeClient();
    await mine.createClient(client);
    const before = await listenerPid();
    await mine.getClient(client.clientId);
    await monitor.query('SELECT pg_terminate_backend($1)', [before]);
    const replaced = { ...client, clientName: 'Changed while nobody listened' };
    await theirs.saveClient(replaced);
    await listenerPid(before);
    assert.deepEqual(await mine.getClient(client.clientId), replaced);
  });
});
