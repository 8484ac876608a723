/**
 * PostgreSQL: the refreshes of one event-loop turn go as one statement and commit once, each with
 * the answer it gets alone. Transactions are counted from the database: a trigger logs the
 * transaction (xid) that rotated each token.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { isStoreConflict, type FullStore } from '../../src/store/index.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { GROUP_COMMIT_MOST } from '../../src/store/sql/group-commit.js';
import type { GrantRecord, RefreshResult, RefreshTokenRecord } from '../../src/store/store.js';
import {
  addUser,
  issueFirstToken,
  makeClient,
  makeGrant,
  makeRefreshToken,
  makeUpstreamSession,
  NOW,
  refreshOf,
  repeatOf,
} from '../../src/store/testing/records.js';
import { countQueries, type QueryCounter } from '../helpers/pg-queries.js';
import { startPostgres, type TestDatabase } from '../helpers/postgres.js';

const N = 16;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('refreshes of one turn in one statement, PostgreSQL', () => {
  let database: TestDatabase;
  let store: FullStore;
  let sql: <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<R[]>;
  let monitor: pg.Client;

  before(async () => {
    database = await startPostgres();
    store = await openPostgresStore({ connectionString: database.connectionString });
    monitor = new pg.Client({ connectionString: database.connectionString });
    await monitor.connect();
    sql = async (text, values = []) => (await monitor.query(text, values)).rows;
    await sql('CREATE TABLE rotations (token_hash text, xid text)');
    await sql(`CREATE FUNCTION log_rotation() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO rotations VALUES (NEW.token_hash, pg_current_xact_id()::text); RETURN NULL; END $$`);
    await sql(`CREATE TRIGGER log_rotation AFTER UPDATE ON refresh_tokens FOR EACH ROW
      WHEN (OLD.token_hash <> NEW.token_hash) EXECUTE FUNCTION log_rotation()`);
  });
  after(async () => {
    await monitor.end();
    await store.close();
    await database.stop();
  });

  /** How many transactions rotated a token into one of these. */
  const transactionsThatIssued = async (tokens: RefreshTokenRecord[]): Promise<number> =>
    (await sql<{ n: number }>('SELECT count(DISTINCT xid)::int AS n FROM rotations WHERE token_hash = ANY($1)', [tokens.map((t) => t.tokenHash)]))[0]!.n;

  /** `n` grants of one client, each with a live refresh token. */
  async function chains(n: number, grant: Partial<GrantRecord> = {}): Promise<Array<{ grant: GrantRecord; token: RefreshTokenRecord }>> {
    const client = makeClient();
    await store.createClient(client);
    const user = await addUser(store);
    const made = [];
    for (let i = 0; i < n; i++) {
      const record = makeGrant(client.clientId, user.id, grant);
      const token = makeRefreshToken(record);
      await issueFirstToken(store, record, token);
      made.push({ grant: record, token });
    }
    return made;
  }

  /**
   * Starts every refresh in the same turn, after a lead refresh that goes first alone (a turn's
   * first runs at once under light load): the others are the batch.
   */
  async function together(refreshes: Array<() => Promise<RefreshResult>>): Promise<PromiseSettledResult<RefreshResult>[]> {
    const [lead] = await chains(1);
    await nextTurn();
    const leading = store.refreshGrant(refreshOf(lead!.token.tokenHash, makeRefreshToken(lead!.grant), NOW + 1));
    const results = Promise.allSettled(refreshes.map((refresh) => refresh()));
    assert.equal((await leading).status, 'ok');
    return results;
  }

  const statuses = (results: PromiseSettledResult<RefreshResult>[]) => results.map((r) => (r.status === 'fulfilled' ? r.value.status : r.reason));

  it(`${N} refreshes arriving together commit in one transaction, each spent and replaced`, async () => {
    const made = await chains(N);
    const next = made.map(({ grant }) => makeRefreshToken(grant));
    const results = await together(
      made.map(
        ({ token }, i) =>
          () =>
            store.refreshGrant(refreshOf(token.tokenHash, next[i]!, NOW + 1, { accessExpiresAt: NOW + 700 + i })),
      ),
    );
    assert.deepEqual(
      statuses(results),
      made.map(() => 'ok'),
    );
    assert.equal(await transactionsThatIssued(next), 1);
    for (const [i, { grant, token }] of made.entries()) {
      const result = (results[i] as PromiseFulfilledResult<RefreshResult>).value;
      assert.equal(result.status === 'ok' && result.grant.id, grant.id, 'each answer is its own grant');
      assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, NOW + 700 + i, 'each grant records its own access token');
      assert.equal((await store.getRefreshToken(next[i]!.tokenHash))?.grantId, grant.id);
      assert.equal(await store.getRefreshToken(token.tokenHash), undefined);
      // The spent record names its successor, as a refresh alone leaves it.
      assert.equal((await store.findSpentRefreshToken(token.tokenHash))?.successorUnused, true);
    }
  });

  it('the same token twice in one batch is spent once; the second is told it was replayed, as one after the other', async () => {
    const [{ grant, token }] = (await chains(1)) as [{ grant: GrantRecord; token: RefreshTokenRecord }];
    const next = [makeRefreshToken(grant), makeRefreshToken(grant)];
    const results = await together(next.map((successor) => () => store.refreshGrant(refreshOf(token.tokenHash, successor, NOW + 1))));
    assert.deepEqual(statuses(results), ['ok', 'replayed']);
    assert.ok(await store.getRefreshToken(next[0]!.tokenHash));
    assert.equal(await store.getRefreshToken(next[1]!.tokenHash), undefined);
    assert.deepEqual(
      (results[1] as PromiseFulfilledResult<RefreshResult>).value,
      await store.refreshGrant(refreshOf(token.tokenHash, makeRefreshToken(grant), NOW + 1)),
    );
  });

  it('the same token twice in one batch naming the same new token, as the server derives it: spent once, the other told it was replayed (no conflict), and its retry answered with that token', async () => {
    const [{ grant, token }] = (await chains(1)) as [{ grant: GrantRecord; token: RefreshTokenRecord }];
    const next = makeRefreshToken(grant);
    const results = await together([0, 1].map(() => () => store.refreshGrant(refreshOf(token.tokenHash, next, NOW + 1))));
    assert.deepEqual(statuses(results), ['ok', 'replayed']);
    assert.equal(await transactionsThatIssued([next]), 1);
    const repeated = await store.repeatRefresh!(repeatOf(token.tokenHash, next, NOW + 1, NOW - 60));
    assert.equal(repeated.status === 'ok' && repeated.successorHash, next.tokenHash);
    assert.deepEqual(await store.getRefreshToken(next.tokenHash), next);
  });

  it('a refusal in a batch answers what it answers alone, and changes nothing; the rest commit together', async () => {
    const fine = await chains(3);
    const [foreign, expired, revoked, spent] = await chains(4);
    await store.revokeGrant(revoked!.grant.id, NOW);
    await store.refreshGrant(refreshOf(spent!.token.tokenHash, makeRefreshToken(spent!.grant), NOW));
    const user = await addUser(store);
    const session = makeUpstreamSession(user.id);
    await store.createUpstreamSession(session);
    const [upstream] = await chains(1, { userId: user.id, upstreamSessionId: session.id });
    const next = fine.map(({ grant }) => makeRefreshToken(grant));
    const refusals: Array<[{ grant: GrantRecord; token: RefreshTokenRecord }, Parameters<typeof refreshOf>[3], number]> = [
      [foreign!, { clientId: 'someone-else' }, NOW + 1],
      [expired!, {}, NOW + 86_400],
      [revoked!, {}, NOW + 1],
      [spent!, {}, NOW + 1],
      [upstream!, { upstreamChecked: false }, NOW + 1],
    ];
    const results = await together([
      ...fine.map(
        ({ token }, i) =>
          () =>
            store.refreshGrant(refreshOf(token.tokenHash, next[i]!, NOW + 1)),
      ),
      ...refusals.map(
        ([{ grant, token }, overrides, at]) =>
          () =>
            store.refreshGrant(refreshOf(token.tokenHash, makeRefreshToken(grant), at, overrides)),
      ),
    ]);
    assert.deepEqual(statuses(results), ['ok', 'ok', 'ok', 'foreign', 'expired', 'revoked', 'replayed', 'upstream']);
    assert.equal(await transactionsThatIssued(next), 1);
    for (const [{ grant, token }] of refusals.filter(([chain]) => chain !== spent)) {
      assert.ok(await store.getRefreshToken(token.tokenHash), 'a refused token stays as it was');
      assert.equal(await store.findSpentRefreshToken(token.tokenHash), undefined);
      assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, 0, 'nothing issued: the expiry stays');
    }
  });

  it('a new token whose hash is taken fails that refresh alone (a conflict); the others of its batch succeed', async () => {
    const made = await chains(4);
    const next = made.map(({ grant }) => makeRefreshToken(grant));
    // The third's successor would take the hash of another grant's live token.
    const [taken] = await chains(1);
    next[2] = { ...next[2]!, tokenHash: taken!.token.tokenHash };
    const results = await together(
      made.map(
        ({ token }, i) =>
          () =>
            store.refreshGrant(refreshOf(token.tokenHash, next[i]!, NOW + 1)),
      ),
    );
    assert.deepEqual(
      statuses(results).map((s) => (isStoreConflict(s) ? 'conflict' : s)),
      ['ok', 'ok', 'conflict', 'ok'],
    );
    assert.ok(await store.getRefreshToken(made[2]!.token.tokenHash), 'the refresh that failed spent nothing');
    assert.equal(await store.findSpentRefreshToken(made[2]!.token.tokenHash), undefined);
  });

  it(`a batch holds at most ${GROUP_COMMIT_MOST} refreshes: more arriving together commit in as many statements as that takes`, async () => {
    const made = await chains(GROUP_COMMIT_MOST + 10);
    const next = made.map(({ grant }) => makeRefreshToken(grant));
    const results = await together(
      made.map(
        ({ token }, i) =>
          () =>
            store.refreshGrant(refreshOf(token.tokenHash, next[i]!, NOW + 1)),
      ),
    );
    assert.ok(results.every((r) => r.status === 'fulfilled' && r.value.status === 'ok'));
    assert.equal(await transactionsThatIssued(next), 2);
  });

  it('two replicas refreshing the same chains in opposite orders at once wait for each other, never deadlock: each token is spent once', async () => {
    const other = await openPostgresStore({ connectionString: database.connectionString });
    try {
      for (let round = 0; round < 5; round++) {
        const made = await chains(N);
        await nextTurn();
        const mine = made.map(({ grant, token }) => store.refreshGrant(refreshOf(token.tokenHash, makeRefreshToken(grant), NOW + 1)));
        const theirs = [...made].reverse().map(({ grant, token }) => other.refreshGrant(refreshOf(token.tokenHash, makeRefreshToken(grant), NOW + 1)));
        const [a, b] = await Promise.all([Promise.allSettled(mine), Promise.allSettled(theirs)]);
        const byChain = made.map((_, i) => [statuses(a)[i], statuses(b)[N - 1 - i]].sort());
        assert.deepEqual(
          byChain,
          made.map(() => ['ok', 'replayed']),
          `round ${round}`,
        );
      }
    } finally {
      await other.close();
    }
  });
});

describe('client lookups of one turn in one statement, PostgreSQL', () => {
  let database: TestDatabase;
  let store: FullStore;
  /** Statements node-postgres sent that read the clients table. */
  let lookups: QueryCounter;

  before(async () => {
    database = await startPostgres();
    store = await openPostgresStore({ connectionString: database.connectionString });
    lookups = countQueries(/FROM clients WHERE client_id/);
  });
  after(async () => {
    lookups.restore();
    await store.close();
    await database.stop();
  });

  it(`${N} lookups arriving together (some the same, some unknown) are one statement, each answered as alone`, async () => {
    const made = Array.from({ length: N / 2 }, () => makeClient());
    for (const client of made) await store.createClient(client);
    const ids = [...made.map((c) => c.clientId), made[0]!.clientId, made[1]!.clientId, ...Array.from({ length: N / 2 - 2 }, (_, i) => `unknown-${i}`)];
    await nextTurn();
    lookups.reset();
    const lead = store.getClient(made[0]!.clientId);
    const found = await Promise.all(ids.map((id) => store.getClient(id)));
    await lead;
    assert.equal(lookups.count, 2, 'the lead alone, then the rest of the turn in one statement');
    const alone = [];
    for (const id of ids) alone.push(await store.getClient(id));
    assert.deepEqual(found, alone);
    assert.deepEqual(found.slice(0, N / 2), made);
    assert.ok(found.slice(N / 2 + 2).every((client) => client === undefined));
  });
});
