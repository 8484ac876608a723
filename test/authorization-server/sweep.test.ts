/**
 * Storage does not grow without bound: expired codes, tokens, sessions, interactions and the
 * grants they leave behind are swept. Complete flows (login, consent, code, tokens, refresh), a
 * replayed code (a revoked grant) and abandoned ones (an interaction never finished, a code never
 * redeemed) are run against a real SQLite file and a real PostgreSQL database; the rows of every
 * table are counted straight from the database, outside the store.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createAuthorizationServer } from '../../src/authorization-server/index.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { FullStore } from '../../src/store/store.js';
import {
  addUser,
  authorize,
  authorizeUrl,
  Browser,
  ISSUER,
  OTHER_RESOURCE,
  pkcePair,
  postForm,
  redeemCode,
  registerClient,
  RESOURCE,
  REVISIONS,
  type Harness,
  type TestClient,
} from '../helpers/harness.js';
import { startPostgres } from '../helpers/postgres.js';

const TABLES = [
  'clients',
  'users',
  'interactions',
  'sessions',
  'consents',
  'grants',
  'authorization_codes',
  'refresh_tokens',
  'spent_refresh_tokens',
  'signing_keys',
  'revocations',
] as const;
type Table = (typeof TABLES)[number];
type Counts = Record<Table, number>;

/** Rows that expire or die with their grant: all of them must go. */
const TRANSIENT: readonly Table[] = ['authorization_codes', 'refresh_tokens', 'spent_refresh_tokens', 'sessions', 'interactions', 'grants', 'revocations'];
/** Rows an operator or a user made, which no amount of time removes. */
const LASTING: readonly Table[] = ['users', 'clients', 'consents', 'signing_keys'];

const DAY = 24 * 3600;
/** Past every default lifetime: code 60 s, access token 600 s, interaction 600 s, session 8 h, refresh token 14 days. */
const PAST_EVERY_LIFETIME = 15 * DAY;
const FLOWS = 6;

/** An authorization server on `store` with a clock the test moves, shaped as the harness helpers expect. */
function harnessOn(store: FullStore): Harness {
  const clock = { now: 1_800_000_000 };
  const log: Record<string, unknown>[] = [];
  const options = {
    issuer: ISSUER,
    store,
    resources: [RESOURCE, OTHER_RESOURCE],
    now: () => clock.now,
    log: (event: Record<string, unknown>) => log.push(event),
  };
  const server = createAuthorizationServer(options);
  return { server, options, store, clock, log, request: (path, init) => server.handle(new Request(new URL(path, ISSUER), init)) };
}

const USER = { username: 'alice', password: 'correct horse battery' };

/** What one batch of flows leaves in the tables, beyond what was there before. */
interface Batch {
  redeemed: number;
}

/**
 * `FLOWS` complete flows, each in a new browser (a new session) and alternating the revisions:
 * login, consent (the first time), code, tokens, one refresh. Then the leftovers of people who
 * gave up: one replayed code (its grant revoked), two interactions never finished, two codes
 * never redeemed.
 */
async function runFlows(h: Harness, client: TestClient): Promise<Batch> {
  let redeemed = 0;
  for (let i = 0; i < FLOWS; i++) {
    const revision = REVISIONS[i % REVISIONS.length]!;
    const { location, verifier } = await authorize(h, { client, user: USER, resource: revision.resource, state: `flow-${i}` });
    const code = location.searchParams.get('code');
    assert.ok(code, `no code: ${location}`);
    const exchanged = await redeemCode(h, client, code, verifier, { resource: revision.resource });
    assert.equal(exchanged.status, 200);
    redeemed++;
    const tokens = (await exchanged.json()) as { refresh_token: string };
    h.clock.now += 5;
    const refreshed = await postForm(h, '/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id });
    assert.equal(refreshed.status, 200);
  }

  // A code redeemed twice: the replay revokes the grant, whose token rows stay until they expire.
  const replay = await authorize(h, { client, user: USER, resource: RESOURCE, state: 'replay' });
  const replayCode = replay.location.searchParams.get('code')!;
  assert.equal((await redeemCode(h, client, replayCode, replay.verifier, { resource: RESOURCE })).status, 200);
  redeemed++;
  assert.equal((await redeemCode(h, client, replayCode, replay.verifier, { resource: RESOURCE })).status, 400);

  for (let i = 0; i < 2; i++) {
    // Abandoned at the login page: an interaction nobody finishes.
    const { challenge } = pkcePair();
    const started = await new Browser(h).fetch(
      authorizeUrl({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: 'http://127.0.0.1:33333/callback',
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: `abandoned-${i}`,
      }),
    );
    assert.equal(started.status, 303);
    assert.match(started.headers.get('location') ?? '', /\/interaction\//);
    // Approved, but the client never came back for the tokens.
    const unredeemed = await authorize(h, { client, user: USER, state: `unredeemed-${i}` });
    assert.ok(unredeemed.location.searchParams.get('code'));
  }
  return { redeemed };
}

/**
 * The scenario, for any store: flows; a sweep at "now + a little" removes only what has
 * expired; a sweep past every lifetime leaves only the lasting rows; a second batch and sweep
 * end at exactly the same counts.
 */
async function sweepScenario(store: FullStore, count: () => Promise<Counts>): Promise<void> {
  const h = harnessOn(store);
  await addUser(h, USER.username, USER.password);
  const client = await registerClient(h);

  const batch = await runFlows(h, client);
  const grown = await count();
  // Every kind of row exists before the sweep: each complete flow left its own session.
  assert.equal(grown.sessions, FLOWS + 3, 'one session per browser');
  assert.equal(grown.interactions, 2, 'the two abandoned interactions');
  assert.equal(grown.authorization_codes, batch.redeemed + 2);
  assert.equal(grown.grants, batch.redeemed + 2);
  assert.equal(grown.refresh_tokens, FLOWS + 1, 'the live ones: each flow’s rotated token and the replayed grant’s');
  assert.equal(grown.spent_refresh_tokens, FLOWS, 'the rotated ones stay as spent records until they expire, for reuse detection');

  // A sweep now removes nothing: every row is still within its lifetime.
  assert.equal(await store.sweepExpired(h.clock.now), 0);
  assert.deepEqual(await count(), grown);

  // Past the code, access token and interaction lifetimes, but not the session's nor the refresh token's.
  h.clock.now += 700;
  const partly = await store.sweepExpired(h.clock.now);
  const afterShortLived = await count();
  assert.equal(afterShortLived.authorization_codes, 0);
  assert.equal(afterShortLived.interactions, 0);
  assert.equal(afterShortLived.sessions, grown.sessions, 'live sessions are kept');
  assert.equal(afterShortLived.refresh_tokens, grown.refresh_tokens, 'live refresh tokens are kept');
  assert.equal(afterShortLived.spent_refresh_tokens, grown.spent_refresh_tokens, 'spent records are kept until their token would have expired');
  // The grants of the unredeemed codes had nothing left; the others still have refresh tokens.
  assert.equal(afterShortLived.grants, batch.redeemed);
  // …and the replayed code's revocation record, a minute after the last token it covers expired.
  assert.equal(grown.revocations, 1, 'the replay was recorded for resource servers');
  assert.equal(afterShortLived.revocations, 0);
  assert.equal(partly, grown.authorization_codes + grown.interactions + 2 + grown.revocations);

  // Past every lifetime: only what people and operators made is left.
  h.clock.now += PAST_EVERY_LIFETIME;
  await store.sweepExpired(h.clock.now);
  const first = await count();
  for (const table of TRANSIENT) assert.equal(first[table], 0, `${table} is empty after the sweep`);
  assert.deepEqual(Object.fromEntries(LASTING.map((table) => [table, first[table]])), { users: 1, clients: 1, consents: 1, signing_keys: 1 });

  // The same again: the tables end where they ended the first time, so nothing accumulates.
  const again = await runFlows(h, client);
  assert.equal(again.redeemed, batch.redeemed);
  assert.deepEqual(await count(), grown, 'a second batch leaves as many rows as the first');
  h.clock.now += PAST_EVERY_LIFETIME;
  await store.sweepExpired(h.clock.now);
  assert.deepEqual(await count(), first, 'no growth from one sweep to the next');

  // The remaining client and user still work after all that sweeping.
  const { location } = await authorize(h, { client, user: USER, resource: RESOURCE });
  assert.ok(location.searchParams.get('code'));
}

describe('sweeping expired rows', () => {
  it('SQLite: expired codes, tokens, sessions, interactions and grants are swept; storage does not grow', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'ca-sweep-'));
    const path = join(folder, 'context-auth.db');
    const store = openSqliteStore({ path });
    const reader = new Database(path, { readonly: true, fileMustExist: true });
    try {
      const count = async (): Promise<Counts> =>
        Object.fromEntries(TABLES.map((table) => [table, (reader.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n])) as Counts;
      await sweepScenario(store, count);
    } finally {
      reader.close();
      await store.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });

  describe('PostgreSQL', () => {
    let stopDatabase: (() => Promise<void>) | undefined;
    after(async () => {
      await stopDatabase?.();
    });

    it('PostgreSQL: expired codes, tokens, sessions, interactions and grants are swept; storage does not grow', async () => {
      const database = await startPostgres();
      stopDatabase = () => database.stop();
      const store = await openPostgresStore({ connectionString: database.connectionString });
      const reader = new pg.Client({ connectionString: database.connectionString });
      await reader.connect();
      try {
        const count = async (): Promise<Counts> => {
          const sql = TABLES.map((table) => `SELECT '${table}' AS name, count(*)::int AS n FROM ${table}`).join(' UNION ALL ');
          const { rows } = await reader.query<{ name: Table; n: number }>(sql);
          return Object.fromEntries(TABLES.map((table) => [table, rows.find((row) => row.name === table)!.n])) as Counts;
        };
        await sweepScenario(store, count);
      } finally {
        await reader.end();
        await store.close();
      }
    });
  });
});
