/**
 * Group commit on the real SQL stores: the transactional programs of one event-loop turn share
 * one transaction and one COMMIT, with the semantics of one transaction each. Commits are counted
 * from the database itself: on SQLite the commit frames of the WAL file, on PostgreSQL the
 * transactions (xmin) that wrote the rows.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { isStoreConflict, type FullStore } from '../../src/store/index.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { GROUP_COMMIT_MOST } from '../../src/store/sql/group-commit.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { AuthorizationCodeRecord, GrantRecord, RefreshTokenRecord } from '../../src/store/store.js';
import { addUser, issueFirstToken, makeClient, makeCode, makeGrant, makeRefreshToken, NOW, refreshOf } from '../../src/store/testing/records.js';
import { startPostgres, type TestDatabase } from '../helpers/postgres.js';

const N = 16;

function fulfilled<T>(result: PromiseSettledResult<T>): T {
  if (result.status === 'rejected') throw result.reason;
  return result.value;
}

interface Harness {
  store: FullStore;
  /** Called just before a batch (SQLite counts commits from there: nothing else writes meanwhile). */
  mark(): void;
  /** How many transactions wrote the redemptions of these codes. */
  transactionsThatRedeemed(codeHashes: string[]): Promise<number>;
  /** Makes every COMMIT whose transaction inserted a refresh token with this hash fail (and only at COMMIT). */
  failCommitOfToken(tokenHash: string): Promise<void>;
  close(): Promise<void>;
}

/** Commit frames in the WAL (a frame's header holds the database size only on a commit's last frame), of its current generation. */
function walCommits(file: string): number {
  if (!fs.existsSync(`${file}-wal`)) return 0;
  const wal = fs.readFileSync(`${file}-wal`);
  if (wal.length < 32) return 0;
  const pageSize = wal.readUInt32BE(8);
  const [salt1, salt2] = [wal.readUInt32BE(16), wal.readUInt32BE(20)];
  let commits = 0;
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    // Frames left from before the WAL restarted carry the old salts.
    if (wal.readUInt32BE(at + 8) !== salt1 || wal.readUInt32BE(at + 12) !== salt2) break;
    if (wal.readUInt32BE(at + 4) !== 0) commits++;
  }
  return commits;
}

async function openSqlite(): Promise<Harness & { commitsSinceMark(): number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ca-group-commit-'));
  const file = path.join(dir, 'store.db');
  // Counted from the WAL: a checkpoint on another thread could let a commit restart it between two batches.
  const store = openSqliteStore({ path: file, checkpointsOffLoop: false });
  const checkpointer = new Database(file);
  return {
    store,
    // An empty WAL from here, so that an automatic checkpoint cannot restart it in the middle of a count.
    mark: () => {
      const [result] = checkpointer.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
      assert.equal(result?.busy, 0, 'the WAL could not be emptied');
    },
    commitsSinceMark: () => walCommits(file),
    transactionsThatRedeemed: async () => walCommits(file),
    failCommitOfToken: async (tokenHash) => {
      const db = new Database(file);
      try {
        // A deferred foreign key is checked at COMMIT: the insert itself succeeds.
        db.exec(`
          CREATE TABLE commit_guard_parent (id TEXT PRIMARY KEY);
          CREATE TABLE commit_guard (ref TEXT REFERENCES commit_guard_parent (id) DEFERRABLE INITIALLY DEFERRED);
          CREATE TRIGGER commit_guard AFTER INSERT ON refresh_tokens WHEN NEW.token_hash = '${tokenHash}'
          BEGIN INSERT INTO commit_guard VALUES ('missing'); END;
        `);
      } finally {
        db.close();
      }
    },
    close: async () => {
      checkpointer.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function openPostgres(): Promise<Harness> {
  const database: TestDatabase = await startPostgres();
  const store = await openPostgresStore({ connectionString: database.connectionString });
  const sql = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> => {
    const client = new pg.Client({ connectionString: database.connectionString });
    await client.connect();
    try {
      return (await client.query<R>(text, values)).rows;
    } finally {
      await client.end();
    }
  };
  // Each redemption logs its transaction: the top-level one, also from inside a savepoint (whose
  // rows carry a subtransaction's own id as their xmin).
  await sql('CREATE TABLE redemptions (code_hash text, xid text)');
  await sql(`CREATE FUNCTION log_redemption() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN INSERT INTO redemptions VALUES (NEW.code_hash, pg_current_xact_id()::text); RETURN NULL; END $$`);
  await sql(`CREATE TRIGGER log_redemption AFTER UPDATE ON authorization_codes FOR EACH ROW
    WHEN (OLD.consumed_at IS NULL AND NEW.consumed_at IS NOT NULL) EXECUTE FUNCTION log_redemption()`);
  return {
    store,
    mark: () => undefined,
    transactionsThatRedeemed: async (codeHashes) =>
      (await sql<{ n: number }>('SELECT count(DISTINCT xid)::int AS n FROM redemptions WHERE code_hash = ANY($1)', [codeHashes]))[0]!.n,
    failCommitOfToken: async (tokenHash) => {
      // A deferred constraint trigger runs at COMMIT: the insert itself succeeds.
      await sql(`CREATE FUNCTION commit_guard() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$`);
      await sql(`
        CREATE CONSTRAINT TRIGGER commit_guard AFTER INSERT ON refresh_tokens DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW WHEN (NEW.token_hash = '${tokenHash}') EXECUTE FUNCTION commit_guard()`);
    },
    close: async () => {
      await store.close();
      await database.stop();
    },
  };
}

/** `n` grants, each with a code not yet redeemed. */
async function grantsWithCodes(store: FullStore, n: number): Promise<Array<{ grant: GrantRecord; code: AuthorizationCodeRecord }>> {
  const client = makeClient();
  await store.createClient(client);
  const user = await addUser(store);
  const made = [];
  for (let i = 0; i < n; i++) {
    const grant = makeGrant(client.clientId, user.id);
    const code = makeCode(grant);
    await store.createGrant(grant, code);
    made.push({ grant, code });
  }
  return made;
}

/** The next turn of the event loop, where no program arrived yet. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Under light load (as in a test's set-up) a turn's first program runs at once, alone: this one,
 * a transaction that writes nothing, goes first in every burst below, so that the burst's
 * programs are the batch.
 */
async function afterLead<T>(h: Harness, burst: () => Promise<T>[]): Promise<PromiseSettledResult<T>[]> {
  await nextTurn();
  h.mark();
  const lead = h.store.revokeGrant('no-such-grant', NOW);
  const results = Promise.allSettled(burst());
  await lead;
  return results;
}

/** Redeems every code in the same turn of the event loop, issuing each `token`. */
function redeemTogether(h: Harness, codes: AuthorizationCodeRecord[], tokens: RefreshTokenRecord[]) {
  return afterLead(h, () =>
    codes.map((code, i) => h.store.redeemAuthorizationCode(code.codeHash, NOW, () => ({ accessExpiresAt: NOW + 600, refreshToken: tokens[i]! }))),
  );
}

for (const kind of [
  { name: 'SQLite', open: openSqlite },
  { name: 'PostgreSQL', open: openPostgres },
]) {
  describe(`group commit, ${kind.name}`, () => {
    let h: Harness;
    before(async () => {
      h = await kind.open();
    });
    after(() => h.close());

    it(`${N} code redemptions arriving together commit in one transaction, and all succeed`, async () => {
      const made = await grantsWithCodes(h.store, N);
      const tokens = made.map(({ grant }) => makeRefreshToken(grant));
      const results = await redeemTogether(
        h,
        made.map((m) => m.code),
        tokens,
      );
      assert.deepEqual(
        results.map((r) => r.status === 'fulfilled' && r.value.status),
        made.map(() => 'ok'),
      );
      assert.equal(await h.transactionsThatRedeemed(made.map((m) => m.code.codeHash)), 1);
      for (const token of tokens) assert.equal((await h.store.getRefreshToken(token.tokenHash))?.grantId, token.grantId);
    });

    it("the same code twice in one batch is redeemed once: the second sees the first's write", async () => {
      const { grant, code } = (await grantsWithCodes(h.store, 1))[0]!;
      const tokens = [makeRefreshToken(grant), makeRefreshToken(grant)];
      const results = await redeemTogether(h, [code, code!], tokens);
      const statuses = results.map((r) => r.status === 'fulfilled' && r.value.status);
      assert.deepEqual(statuses, ['ok', 'replayed']);
      assert.equal(await h.transactionsThatRedeemed([code.codeHash]), 1);
      assert.ok(await h.store.getRefreshToken(tokens[0]!.tokenHash));
      assert.equal(await h.store.getRefreshToken(tokens[1]!.tokenHash), undefined);
    });

    it('a program that fails rolls back its own work only: the rest of its batch commits, in one transaction', async () => {
      const made = await grantsWithCodes(h.store, 4);
      const tokens = made.map(({ grant }) => makeRefreshToken(grant));
      // The third issues a refresh token whose hash is already taken: a conflict, after its code was consumed.
      const [taken] = await grantsWithCodes(h.store, 1);
      const takenToken = makeRefreshToken(taken!.grant);
      await issueFirstToken(h.store, makeGrant(taken!.grant.clientId, taken!.grant.userId), takenToken);
      tokens[2] = { ...tokens[2]!, tokenHash: takenToken.tokenHash };
      const results = await redeemTogether(
        h,
        made.map((m) => m.code),
        tokens,
      );
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
      );
      assert.ok(isStoreConflict((results[2] as PromiseRejectedResult).reason));
      const redeemed = made.filter((_, i) => i !== 2).map((m) => m.code.codeHash);
      assert.equal(await h.transactionsThatRedeemed(redeemed), 1);
      // The failed redemption's consumption was undone with it: the code still works.
      const again = await h.store.redeemAuthorizationCode(made[2]!.code.codeHash, NOW, () => ({
        accessExpiresAt: NOW + 600,
        refreshToken: makeRefreshToken(made[2]!.grant),
      }));
      assert.equal(again.status, 'ok');
    });

    it('a COMMIT that fails rejects every program of its batch, and none of their work remains', async () => {
      const made = await grantsWithCodes(h.store, 4);
      const tokens = made.map(({ grant }) => makeRefreshToken(grant));
      await h.failCommitOfToken(tokens[1]!.tokenHash);
      const results = await redeemTogether(
        h,
        made.map((m) => m.code),
        tokens,
      );
      assert.deepEqual(
        results.map((r) => r.status),
        made.map(() => 'rejected'),
      );
      for (const token of tokens) assert.equal(await h.store.getRefreshToken(token.tokenHash), undefined);
      // Nothing was consumed: each code (but the one whose commit is refused) redeems alone now.
      const alone = await h.store.redeemAuthorizationCode(made[0]!.code.codeHash, NOW, () => ({ accessExpiresAt: NOW + 600, refreshToken: tokens[0]! }));
      assert.equal(alone.status, 'ok');
    });
  });
}

describe('group commit of refresh grants, SQLite', () => {
  let h: Awaited<ReturnType<typeof openSqlite>>;
  before(async () => {
    h = await openSqlite();
  });
  after(() => h.close());

  /** `n` grants, each with a live refresh token. */
  async function chains(n: number): Promise<Array<{ grant: GrantRecord; token: RefreshTokenRecord }>> {
    const client = makeClient();
    await h.store.createClient(client);
    const user = await addUser(h.store);
    const made = [];
    for (let i = 0; i < n; i++) {
      const grant = makeGrant(client.clientId, user.id);
      const token = makeRefreshToken(grant);
      await issueFirstToken(h.store, grant, token);
      made.push({ grant, token });
    }
    return made;
  }

  it('a refresh alone, under light load, runs at once: its commit is in the WAL before the next turn of the event loop', async () => {
    const { grant, token } = (await chains(1))[0]!;
    await nextTurn();
    h.mark();
    const refreshed = h.store.refreshGrant(refreshOf(token.tokenHash, makeRefreshToken(grant), NOW + 1));
    assert.equal(h.commitsSinceMark(), 1);
    assert.equal((await refreshed).status, 'ok');
  });

  it(`${N} refreshes arriving together commit once, and all succeed`, async () => {
    const made = await chains(N);
    const next = made.map(({ grant }) => makeRefreshToken(grant));
    const results = (await afterLead(h, () => made.map(({ token }, i) => h.store.refreshGrant(refreshOf(token.tokenHash, next[i]!, NOW + 1))))).map(fulfilled);
    assert.deepEqual(
      results.map((r) => r.status),
      made.map(() => 'ok'),
    );
    assert.equal(h.commitsSinceMark(), 1);
    for (const token of next) assert.ok(await h.store.getRefreshToken(token.tokenHash));
  });

  it("under load (the batch before held several), a turn's first refresh waits for the others: the next burst commits once, all of it", async () => {
    const made = await chains(2 * N);
    const refreshAll = (part: typeof made) =>
      part.map(({ grant, token }) => h.store.refreshGrant(refreshOf(token.tokenHash, makeRefreshToken(grant), NOW + 1)));
    await afterLead(h, () => refreshAll(made.slice(0, N)));
    // Issued in the turn that answered the first burst, with no lead.
    h.mark();
    const results = await Promise.all(refreshAll(made.slice(N)));
    assert.deepEqual(
      results.map((r) => r.status),
      made.slice(N).map(() => 'ok'),
    );
    assert.equal(h.commitsSinceMark(), 1);
  });

  it(`a batch holds at most ${GROUP_COMMIT_MOST} programs: more arriving together commit in as many batches as that takes`, async () => {
    const made = await chains(GROUP_COMMIT_MOST + 10);
    const results = await afterLead(h, () =>
      made.map(({ grant, token }) => h.store.refreshGrant(refreshOf(token.tokenHash, makeRefreshToken(grant), NOW + 1))),
    );
    assert.ok(results.every((r) => r.status === 'fulfilled' && r.value.status === 'ok'));
    assert.equal(h.commitsSinceMark(), 2);
  });

  it(`${N} grants without a code (client credentials) arriving together commit once`, async () => {
    const client = makeClient();
    await h.store.createClient(client);
    const grants = Array.from({ length: N }, () => makeGrant(client.clientId, null));
    const results = await afterLead(h, () => grants.map((grant) => h.store.createGrant(grant)));
    assert.ok(results.every((r) => r.status === 'fulfilled'));
    assert.equal(h.commitsSinceMark(), 1);
    for (const grant of grants) assert.equal((await h.store.getGrant(grant.id))?.id, grant.id);
  });

  it(`${N} records of use (DPoP proofs, client assertions) arriving together commit once; the same one twice is taken once`, async () => {
    const keys = Array.from({ length: N }, (_, i) => `proof-${i}`);
    const results = (await afterLead(h, () => [...keys, keys[0]!].map((key) => h.store.useAssertionId(key, NOW + 360, NOW)))).map(fulfilled);
    assert.deepEqual(results, [...keys.map(() => true), false]);
    assert.equal(h.commitsSinceMark(), 1);
  });

  it('the same refresh token twice in one batch is spent once; the second is told it was replayed, as one after the other', async () => {
    const { grant, token } = (await chains(1))[0]!;
    const next = [makeRefreshToken(grant), makeRefreshToken(grant)];
    const [first, second] = (await afterLead(h, () => next.map((successor) => h.store.refreshGrant(refreshOf(token.tokenHash, successor, NOW + 1))))).map(
      fulfilled,
    );
    assert.equal(h.commitsSinceMark(), 1);
    assert.equal(first!.status, 'ok');
    assert.equal(second!.status, 'replayed');
    assert.deepEqual(second, await h.store.refreshGrant(refreshOf(token.tokenHash, makeRefreshToken(grant), NOW + 1)));
    assert.ok(await h.store.getRefreshToken(next[0]!.tokenHash));
    assert.equal(await h.store.getRefreshToken(next[1]!.tokenHash), undefined);
  });
});
