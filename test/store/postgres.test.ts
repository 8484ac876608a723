import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { isStoreUnavailable, type FullStore } from '../../src/store/store.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { CURRENT_TABLES, SCHEMA_VERSION } from '../../src/store/sql/schema.js';
import { startPostgres, startPostgresServer, type TestDatabase } from '../helpers/postgres.js';
import { runStoreSuite } from '../../src/store/testing/index.js';
import {
  addGrant,
  addUser,
  issueFirstToken,
  makeClient,
  makeCode,
  makeConsent,
  makeGrant,
  makeRefreshToken,
  makeSigningKey,
  makeUser,
  NOW,
  refreshOf,
} from '../../src/store/testing/records.js';
import { insertRefreshTokensPostgres } from '../helpers/store-rows.js';
import { postgresProbes } from '../helpers/store-probes.js';

// Every table of the schema, so that none keeps rows from one test to the next.
const TABLES = CURRENT_TABLES.map((table) => table.name);

/** Runs one statement on a database, outside any store. */
async function sql<R extends pg.QueryResultRow = pg.QueryResultRow>(connectionString: string, text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

// The shared suite: one new database for the suite; each test gets the store opened on it, emptied.
const suiteDb = await startPostgres();
runStoreSuite({
  name: 'PostgreSQL store',
  capabilities: 'all',
  batchedSweep: true,
  open: async () => {
    const store = await openPostgresStore({ connectionString: suiteDb.connectionString });
    await sql(suiteDb.connectionString, `TRUNCATE ${TABLES.join(', ')} RESTART IDENTITY CASCADE`);
    const probes = postgresProbes(suiteDb.connectionString);
    return {
      store,
      probes,
      close: async () => {
        await probes.close();
        await store.close();
      },
    };
  },
});
after(() => suiteDb.stop());

describe('PostgreSQL store, PostgreSQL only', () => {
  const databases: TestDatabase[] = [];
  /** A new, empty database (migrations not applied yet). */
  const newDatabase = async (): Promise<string> => {
    const db = await startPostgres();
    databases.push(db);
    return db.connectionString;
  };
  after(async () => {
    for (const db of databases) await db.stop();
  });

  it('announces a revocation committed by one store to another that watches (LISTEN/NOTIFY), and only then', async () => {
    const connectionString = await newDatabase();
    const [a, b] = [await openPostgresStore({ connectionString }), await openPostgresStore({ connectionString })];
    let calls = 0;
    let announced: () => void = () => undefined;
    const stop = await b.watchRevocations!(() => {
      calls++;
      announced();
    });
    try {
      assert.equal(calls, 1, 'a first call once listening, to catch up');
      const client = makeClient();
      const user = makeUser();
      await a.createClient(client);
      await a.createUser(user);
      const grant = makeGrant(client.clientId, user.id);
      await issueFirstToken(a, grant, makeRefreshToken(grant), { accessExpiresAt: NOW + 600 });
      const heard = new Promise<void>((resolve) => (announced = resolve));
      await a.revokeGrant(grant.id, NOW);
      await heard;
      assert.equal(calls, 2);
      assert.deepEqual(
        (await b.listRevocations(0, NOW)).map((r) => r.id),
        [grant.id],
      );
      // A revocation with nothing left to refuse records nothing and announces nothing.
      const quiet = makeGrant(client.clientId, user.id);
      await a.createGrant(quiet);
      await a.revokeGrant(quiet.id, NOW);
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(calls, 2);
    } finally {
      await stop();
      await a.close();
      await b.close();
    }
  });

  it('applies migrations once: opening again changes nothing', async () => {
    const connectionString = await newDatabase();
    const user = makeUser();
    const first = await openPostgresStore({ connectionString });
    await first.createUser(user);
    await first.close();
    const second = await openPostgresStore({ connectionString });
    try {
      assert.deepEqual(await second.listUsers(), [user]);
    } finally {
      await second.close();
    }
    const versions = await sql<{ version: number }>(connectionString, 'SELECT version FROM context_auth_migrations ORDER BY version');
    assert.deepEqual(
      versions.map((row) => row.version),
      Array.from({ length: SCHEMA_VERSION }, (_, index) => index + 1),
    );
  });

  it('two stores opening the same new database at once both migrate it safely', async () => {
    const connectionString = await newDatabase();
    const stores = await Promise.all([openPostgresStore({ connectionString }), openPostgresStore({ connectionString })]);
    try {
      const [a, b] = stores as [FullStore, FullStore];
      const user = makeUser();
      await a.createUser(user);
      assert.deepEqual(await b.getUser({ id: user.id }), user);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
    const versions = await sql<{ count: string }>(connectionString, 'SELECT count(*)::text AS count FROM context_auth_migrations');
    assert.equal(versions[0]?.count, String(SCHEMA_VERSION));
  });

  it('refuses a database from a newer version of the code', async () => {
    const connectionString = await newDatabase();
    await (await openPostgresStore({ connectionString })).close();
    await sql(connectionString, 'INSERT INTO context_auth_migrations (version, applied_at) VALUES ($1, now())', [SCHEMA_VERSION + 1]);
    await assert.rejects(openPostgresStore({ connectionString }), isStoreUnavailable);
  });

  it('keeps its state across closing and reopening the pool', async () => {
    const connectionString = await newDatabase();
    const client = makeClient();
    const user = makeUser();
    const grant = makeGrant(client.clientId, user.id);
    const code = makeCode(grant);
    let store = await openPostgresStore({ connectionString });
    await store.createClient(client);
    await store.createUser(user);
    await store.createGrant(grant, code);
    assert.equal((await store.redeemAuthorizationCode(code.codeHash, NOW, () => undefined)).status, 'ok');
    await store.close();
    await store.close(); // twice is harmless
    await assert.rejects(store.getClient(client.clientId), isStoreUnavailable);

    store = await openPostgresStore({ connectionString });
    try {
      assert.deepEqual(await store.getClient(client.clientId), client);
      assert.deepEqual(await store.getUser({ username: user.username }), user);
      assert.deepEqual(await store.getGrant(grant.id), grant);
      assert.equal((await store.redeemAuthorizationCode(code.codeHash, NOW, () => undefined)).status, 'replayed');
    } finally {
      await store.close();
    }
  });

  it('sweeps refresh tokens page by page (a TID range), not along their key', async () => {
    // Along the key, each row of a slice of random hashes is on a page of its own (a full-page
    // image in the WAL after every checkpoint); by page, a slice is a few pages.
    const connectionString = await newDatabase();
    const store = await openPostgresStore({ connectionString });
    const holder = new pg.Client({ connectionString });
    await holder.connect();
    try {
      const { grant } = await addGrant(store);
      const tokens = Array.from({ length: 400 }, (_, i) => makeRefreshToken(grant, { expiresAt: i % 2 ? NOW - 1 : NOW + 60 }));
      await insertRefreshTokensPostgres(connectionString, tokens);
      // An expired row held locked: the sweep's statement that reaches it waits, in view.
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM refresh_tokens WHERE token_hash = $1 FOR UPDATE', [tokens[1]!.tokenHash]);
      const sweep = store.sweepExpired(NOW);
      let waiting: string | undefined;
      for (let waited = 0; waiting === undefined; waited += 20) {
        assert.ok(waited < 10_000, 'the sweep never reached the locked row');
        await new Promise((resolve) => setTimeout(resolve, 20));
        const rows = await holder.query<{ query: string }>(
          `SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND datname = current_database()`,
        );
        waiting = rows.rows[0]?.query;
      }
      await holder.query('COMMIT');
      assert.equal(await sweep, 200);
      assert.match(waiting, /WHERE ctid >= CAST\(\$1 AS tid\) AND ctid < CAST\(\$2 AS tid\)/);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
      await store.close();
    }
  });

  it('statements prepared on a connection: a table changed by another replica costs one an unavailable StoreError, then the store reads it again', async () => {
    const connectionString = await newDatabase();
    // One connection, so the statement prepared first is the one used again.
    const store = await openPostgresStore({ connectionString, maxConnections: 1 });
    try {
      const user = await addUser(store);
      assert.deepEqual(await store.getUser({ id: user.id }), user);
      const [prepared] = await sql<{ n: number }>(
        connectionString,
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'context-auth' AND query = 'SELECT * FROM users WHERE id = $1'",
      );
      assert.equal(prepared?.n, 1, 'the store read through its own connection');
      // What a newer replica's migration does: a column more for SELECT * to return.
      await sql(connectionString, 'ALTER TABLE users ADD COLUMN added_later integer');
      await assert.rejects(store.getUser({ id: user.id }), isStoreUnavailable);
      assert.deepEqual(await store.getUser({ id: user.id }), user);
      assert.deepEqual(await store.getUser({ id: user.id }), user);
    } finally {
      await store.close();
    }
  });

  it('spends an assertion id in one round trip: its one statement, no BEGIN and COMMIT around it', async () => {
    const connectionString = await newDatabase();
    const store = await openPostgresStore({ connectionString });
    const queries: string[] = [];
    const query = pg.Client.prototype.query;
    try {
      await store.getUser({ id: 'warms the pool' }); // the connection opened and migrated before counting
      pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
        const [first] = args as [string | { text: string }];
        queries.push(typeof first === 'string' ? first : first.text);
        return (query as (...a: unknown[]) => unknown).apply(this, args);
      } as typeof query;
      assert.equal(await store.useAssertionId('assertion-1', NOW + 60, NOW), true);
      assert.equal(queries.length, 1, queries.join('\n'));
      assert.match(queries[0]!, /^INSERT INTO used_assertions/);
      assert.equal(await store.useAssertionId('assertion-1', NOW + 60, NOW), false, 'still refused the second time');
    } finally {
      pg.Client.prototype.query = query;
      await store.close();
    }
  });

  it('parses bigint columns per pool, leaving the global pg.types alone', async () => {
    const connectionString = await newDatabase();
    const store = await openPostgresStore({ connectionString });
    try {
      const user = makeUser({ createdAt: 4_102_444_800 }); // beyond int4
      await store.createUser(user);
      assert.equal((await store.getUser({ id: user.id }))?.createdAt, 4_102_444_800);
      const [row] = await sql<{ value: unknown }>(connectionString, 'SELECT 1::bigint AS value');
      assert.equal(row?.value, '1');
    } finally {
      await store.close();
    }
  });

  it('replicas race: two stores (two pools) on one database, exactly one consumption and one rotation win', async () => {
    const connectionString = await newDatabase();
    const a = await openPostgresStore({ connectionString });
    const b = await openPostgresStore({ connectionString });
    try {
      const client = makeClient();
      const user = makeUser();
      const grant = makeGrant(client.clientId, user.id);
      const old = makeRefreshToken(grant);
      const coded = makeGrant(client.clientId, user.id);
      const code = makeCode(coded);
      await a.createClient(client);
      await a.createUser(user);
      await issueFirstToken(a, grant, old);
      await a.createGrant(coded, code);

      const replicas = [a, b];
      const attempts = 50;
      const nexts = Array.from({ length: attempts * 2 }, () => makeRefreshToken(grant));
      const [codes, rotations] = await Promise.all([
        Promise.all(Array.from({ length: attempts * 2 }, (_, i) => replicas[i % 2]!.redeemAuthorizationCode(code.codeHash, NOW, () => undefined))),
        Promise.all(nexts.map((next, i) => replicas[i % 2]!.refreshGrant(refreshOf(old.tokenHash, next, NOW)))),
      ]);

      assert.equal(codes.filter((r) => r.status === 'ok').length, 1);
      assert.equal(codes.filter((r) => r.status === 'replayed').length, attempts * 2 - 1);
      assert.equal(rotations.filter((r) => r.status === 'ok').length, 1);
      assert.equal(rotations.filter((r) => r.status === 'replayed').length, attempts * 2 - 1);
      const stored = await Promise.all(nexts.map((next) => b.getRefreshToken(next.tokenHash)));
      assert.equal(stored.filter((t) => t !== undefined).length, 1);
      const winner = rotations.findIndex((r) => r.status === 'ok');
      assert.deepEqual(stored[winner], nexts[winner]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('a revocation committed while a redemption waits on its grant still covers the access token the redemption issues', async () => {
    // The grant's row held by a revocation not yet committed: the code is consumed (the grant
    // still looks standing), then the redemption waits on the row, and finds it revoked.
    const connectionString = await newDatabase();
    const store = await openPostgresStore({ connectionString });
    const holder = new pg.Client({ connectionString });
    await holder.connect();
    try {
      const { grant, code } = await addGrant(store, makeCode);
      await holder.query('BEGIN');
      await holder.query('UPDATE grants SET revoked_at = $1 WHERE id = $2', [NOW, grant.id]);
      const redeeming = store.redeemAuthorizationCode(code.codeHash, NOW, () => ({ accessExpiresAt: NOW + 600, refreshToken: makeRefreshToken(grant) }));
      for (let waited = 0; ; waited += 20) {
        assert.ok(waited < 10_000, 'the redemption never waited on the grant');
        await new Promise((resolve) => setTimeout(resolve, 20));
        const rows = await holder.query(
          `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND datname = current_database()`,
        );
        if (rows.rowCount) break;
      }
      await holder.query('COMMIT');
      assert.equal((await redeeming).status, 'ok');
      assert.deepEqual(await store.listRevocations(0, NOW), [{ kind: 'grant', id: grant.id, revokedAt: NOW, expiresAt: NOW + 600 }]);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
      await store.close();
    }
  });

  it('replicas rotating signing keys at once leave exactly one current and one previous key', async () => {
    const connectionString = await newDatabase();
    const a = await openPostgresStore({ connectionString });
    const b = await openPostgresStore({ connectionString });
    try {
      const keys = Array.from({ length: 20 }, () => makeSigningKey());
      await Promise.all([
        ...keys.map((key, i) => (i % 2 === 0 ? a : b).rotateSigningKey(key)),
        ...Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? b : a).ensureSigningKey(makeSigningKey())),
      ]);
      const listed = await a.listSigningKeys();
      const statuses = listed.map((key) => key.status);
      assert.equal(statuses.filter((status) => status === 'current').length, 1);
      assert.equal(statuses.filter((status) => status === 'previous').length, 1);
      // Every rotation landed; an ensure that ran first may have added one more.
      for (const key of keys)
        assert.ok(
          listed.some((k) => k.kid === key.kid),
          key.kid,
        );
      assert.ok(listed.length === keys.length || listed.length === keys.length + 1);
      // Listed newest first: the current key is the last one inserted, then the previous one.
      assert.equal(listed[0]?.status, 'current');
      assert.equal(listed[1]?.status, 'previous');
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('concurrent widenings of one consent from two replicas all land', async () => {
    const connectionString = await newDatabase();
    const a = await openPostgresStore({ connectionString });
    const b = await openPostgresStore({ connectionString });
    try {
      const client = makeClient();
      const user = makeUser();
      await a.createClient(client);
      await a.createUser(user);
      const scopes = Array.from({ length: 20 }, (_, i) => `scope-${String(i).padStart(2, '0')}`);
      await Promise.all(scopes.map((scope, i) => (i % 2 === 0 ? a : b).saveConsent(makeConsent(user.id, client.clientId, { scope: [scope, 'read'] }))));
      assert.deepEqual((await b.getConsent(user.id, client.clientId, 'https://mcp.example/'))?.scope, ['read', ...scopes].sort());
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('identifies itself as context-auth and applies statement_timeout: a statement stuck on a lock is an unavailable StoreError', async () => {
    const connectionString = await newDatabase();
    const store = await openPostgresStore({ connectionString, statementTimeoutMs: 300 });
    const blocker = new pg.Client({ connectionString });
    await blocker.connect();
    try {
      const names = await sql<{ application_name: string }>(
        connectionString,
        'SELECT DISTINCT application_name FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name <> $1',
        [''],
      );
      assert.deepEqual(
        names.map((row) => row.application_name),
        ['context-auth'],
      );

      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE users IN ACCESS EXCLUSIVE MODE');
      const started = Date.now();
      await assert.rejects(store.getUser({ id: 'anyone' }), isStoreUnavailable);
      assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`);
      await blocker.query('ROLLBACK');
      assert.equal(await store.getUser({ id: 'anyone' }), undefined);
    } finally {
      await blocker.end();
      await store.close();
    }
  });

  it('a server that accepts but never answers: opening fails with an unavailable StoreError after the connection timeout', async () => {
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as net.AddressInfo;
    try {
      const started = Date.now();
      await assert.rejects(
        openPostgresStore({ connectionString: `postgresql://context:s3cret@127.0.0.1:${port}/context_auth`, connectionTimeoutMs: 300 }),
        (err: unknown) => isStoreUnavailable(err) && !err.message.includes('s3cret'),
      );
      const elapsed = Date.now() - started;
      assert.ok(elapsed >= 250 && elapsed < 3000, `took ${elapsed} ms`);
    } finally {
      silent.close();
      silent.unref();
    }
  });

  it('an unreachable database: opening fails fast with an unavailable StoreError, and no secret in the message', async () => {
    const port = await closedPort();
    const started = Date.now();
    const err = await openPostgresStore({
      connectionString: `postgresql://context:s3cret-pa55word@127.0.0.1:${port}/context_auth`,
      connectionTimeoutMs: 3000,
    }).then(
      () => assert.fail('opened a store on a closed port'),
      (error: unknown) => error,
    );
    assert.ok(isStoreUnavailable(err), String(err));
    assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`);
    assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}/context_auth`));
    assert.doesNotMatch(err.message, /s3cret|pa55word/);
    assert.doesNotMatch(err.stack ?? '', /s3cret|pa55word/);
  });
});

describe('PostgreSQL store, the database going away', () => {
  it('fails with an unavailable StoreError while the server is down, and the same store works again once it is back', async () => {
    const server = await startPostgresServer();
    try {
      const connectionString = await server.createDatabase();
      const store = await openPostgresStore({ connectionString, connectionTimeoutMs: 2000 });
      try {
        const client = makeClient();
        const user = makeUser();
        const grant = makeGrant(client.clientId, user.id);
        const old = makeRefreshToken(grant);
        await store.createClient(client);
        await store.createUser(user);
        await issueFirstToken(store, grant, old);
        // Several pooled connections, idle when the server goes away.
        await Promise.all(Array.from({ length: 5 }, () => store.getUser({ id: user.id })));

        await server.pause();
        await assert.rejects(store.getUser({ id: user.id }), isStoreUnavailable);
        await assert.rejects(store.createUser(makeUser()), isStoreUnavailable);
        await assert.rejects(store.refreshGrant(refreshOf(old.tokenHash, makeRefreshToken(grant), NOW)), isStoreUnavailable);
        await assert.rejects(store.sweepExpired(NOW), isStoreUnavailable);

        await server.resume();
        assert.deepEqual(await store.getUser({ id: user.id }), user);
        const next = makeRefreshToken(grant);
        assert.equal((await store.refreshGrant(refreshOf(old.tokenHash, next, NOW))).status, 'ok');
        assert.deepEqual(await store.getRefreshToken(next.tokenHash), next);
      } finally {
        await store.close();
      }
    } finally {
      await server.stop();
    }
  });
});

/** A port nothing listens on (bound, then released). */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
