/**
 * Upgrading in place: a SQLite file and a PostgreSQL database made by release 0.1.0 (schema
 * version 1, fixtures written by make-v1.ts with that release's code) open with today's code,
 * migrate, read back every record as it was, keep working, and end with the same schema as a
 * database made new today.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createAuthorizationServer } from '../../src/authorization-server/index.js';
import { hashSecret } from '../../src/core/secrets.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { migrationDdl, postgres, sqlite, type Dialect } from '../../src/store/sql/dialect.js';
import { SCHEMA_VERSION, SPENT_REFRESH_TOKENS, TABLES, USER_IDENTITIES } from '../../src/store/sql/schema.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { FullStore } from '../../src/store/store.js';
import { startPostgresServer, type PostgresServer } from '../helpers/postgres.js';
import * as v1 from './fixtures/v1-records.js';
import { refreshOf } from '../../src/store/testing/records.js';

const FIXTURES = path.join(import.meta.dirname, 'fixtures');

async function assertRecordsOfV1(store: FullStore): Promise<void> {
  const now = v1.T;
  assert.deepEqual(await store.getClient(v1.client.clientId), { ...v1.client, lastUsedAt: null });
  // Columns added since come back as null: not an administrator, never signed in since.
  assert.deepEqual(await store.getUser({ id: v1.user.id }), { ...v1.user, admin: null, lastSignInAt: null });
  // Columns added since read back as null.
  assert.deepEqual(await store.getInteraction(v1.interaction.id, now), { ...v1.interaction, upstream: null, device: null });
  assert.deepEqual(await store.getSession(v1.session.idHash, now), { ...v1.session, upstreamSessionId: null });
  assert.deepEqual(await store.getConsent(v1.user.id, v1.client.clientId, v1.consent.resource), v1.consent);
  // Version 8 keeps the latest expiry of the grant's access tokens on the grant, from the table it drops.
  assert.deepEqual(await store.getGrant(v1.grant.id), { ...v1.grant, upstreamSessionId: null, accessExpiresAt: v1.access.expiresAt });
  // Unused, it stays a refresh token; the column that marked use went with version 7.
  const { consumedAt, ...unused } = v1.refresh;
  assert.equal(consumedAt, null);
  assert.deepEqual(await store.getRefreshToken(v1.refresh.tokenHash), unused);
  assert.equal(await store.isAccessTokenRevoked(v1.access.jti), false);
  assert.deepEqual(await store.listSigningKeys(), [v1.key]);
  // Still working: the code and the refresh token are single use as before.
  assert.deepEqual(await store.redeemAuthorizationCode(v1.code.codeHash, now, () => undefined), {
    status: 'ok',
    record: { ...v1.code, nonce: null, consumedAt: now },
  });
  const next = { ...unused, tokenHash: 'refresh-hash-2' };
  assert.equal((await store.refreshGrant(refreshOf(v1.refresh.tokenHash, next, now))).status, 'ok');
  assert.equal((await store.refreshGrant(refreshOf(v1.refresh.tokenHash, next, now))).status, 'replayed');
  // Version 5's table: the shared rate-limit buckets.
  assert.deepEqual(await store.takeRateTokens({ key: 'register:192.0.2.1', want: 1, burst: 2, perSecond: 1, nowMs: now * 1000 }), { granted: 1, level: 1 });
  // Version 6: revoking the old grant records it for resource servers, until its access token expires.
  assert.deepEqual(await store.listRevocations(0, now), []);
  await store.revokeGrant(v1.grant.id, now);
  assert.deepEqual(await store.listRevocations(0, now), [
    { kind: 'grant', id: v1.grant.id, revokedAt: now, expiresAt: Math.max(v1.access.expiresAt, now + 600) },
  ]);
}

// ---------------------------------------------------------------------------------------------
// Mid-life: a store in use when spent records came, with a refresh token already rotated.

/** The last version that kept a rotated refresh token as a full row, marked used. */
const BEFORE_SPENT = SPENT_REFRESH_TOKENS.since - 1;
const ROTATED = 'the refresh token rotated before the upgrade';
const SUCCESSOR = 'the refresh token it was rotated to';
const SECRET = 'the fixture client secret';

/**
 * The v1 fixture brought to BEFORE_SPENT with the migrations of the versions between, then used
 * as that code used it: its refresh token rotated 5 s before T (marked used, a successor saved).
 * Its client gets a secret we know and its placeholder signing key goes, so a server can answer.
 */
function midLife(d: Dialect): string[] {
  const statements: string[] = [];
  for (let version = 2; version <= BEFORE_SPENT; version++) statements.push(...migrationDdl(d, TABLES, version));
  statements.push(
    `UPDATE clients SET client_secret_hash = '${hashSecret(SECRET)}'`,
    'DELETE FROM signing_keys',
    `UPDATE refresh_tokens SET token_hash = '${hashSecret(ROTATED)}', consumed_at = ${v1.T - 5}`,
    `INSERT INTO refresh_tokens (token_hash, grant_id, client_id, scope, created_at, expires_at, consumed_at)
     SELECT '${hashSecret(SUCCESSOR)}', grant_id, client_id, scope, ${v1.T - 5}, ${v1.T - 5 + 86_400}, NULL FROM refresh_tokens`,
  );
  return statements;
}

/** After the upgrade: the rotated token is a spent record, and presenting it again revokes its grant. */
async function assertReuseStillDetected(store: FullStore): Promise<void> {
  assert.equal(await store.getRefreshToken(hashSecret(ROTATED)), undefined);
  // Made before spent records named their successor: never taken for a retry of a lost answer.
  assert.deepEqual(await store.findSpentRefreshToken(hashSecret(ROTATED)), {
    grantId: v1.grant.id,
    clientId: v1.client.clientId,
    spentAt: v1.T - 5,
    expiresAt: v1.refresh.expiresAt,
    successorUnused: false,
  });
  assert.equal((await store.getRefreshToken(hashSecret(SUCCESSOR)))?.grantId, v1.grant.id);

  const issuer = new URL(v1.grant.resource).origin;
  const server = createAuthorizationServer({ issuer, store, resources: [v1.grant.resource], now: () => v1.T, log: () => undefined });
  const refresh = (token: string) =>
    server.handle(
      new Request(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${v1.client.clientId}:${SECRET}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token }),
      }),
    );
  // The family goes on as before: the successor rotates.
  const rotated = await refresh(SUCCESSOR);
  assert.equal(rotated.status, 200, await rotated.clone().text());
  const newest = ((await rotated.json()) as { refresh_token: string }).refresh_token;
  // The token rotated before the upgrade, presented again: a replay, and the family is revoked.
  const replayed = await refresh(ROTATED);
  assert.equal(replayed.status, 400);
  assert.equal(((await replayed.json()) as { error: string }).error, 'invalid_grant');
  assert.equal((await store.getGrant(v1.grant.id))?.revokedAt, v1.T);
  assert.equal((await refresh(newest)).status, 400, 'the newest token of the family is revoked with it');
}

// ---------------------------------------------------------------------------------------------
// Upstream identities found by issuer and subject alone, until they were keyed by provider too.

/** The last version whose upstream identities were keyed by issuer and subject. */
const BEFORE_REKEY = USER_IDENTITIES.formerPrimaryKey!.until - 1;
const HUB = { provider: 'hub', issuer: 'https://hub.example', subject: '1001' };

/** The v1 fixture brought to BEFORE_REKEY, its user signed in once through a GitHub-style provider. */
function withIdentity(d: Dialect): string[] {
  const statements: string[] = [];
  for (let version = 2; version <= BEFORE_REKEY; version++) statements.push(...migrationDdl(d, TABLES, version));
  statements.push(
    `INSERT INTO user_identities (issuer, subject, provider, user_id, email, name, created_at)
     VALUES ('${HUB.issuer}', '${HUB.subject}', '${HUB.provider}', '${v1.user.id}', 'alice@example.com', 'Alice', ${v1.T})`,
  );
  return statements;
}

/**
 * After the upgrade the identity still finds its user; another provider that shares the issuer
 * name, and has a person with the same id, finds no one and gets a user of its own.
 */
async function assertIdentityRekeyed(store: FullStore): Promise<void> {
  assert.equal((await store.getUser({ identity: HUB }))?.id, v1.user.id);
  const forge = { ...HUB, provider: 'forge' };
  assert.equal(await store.getUser({ identity: forge }), undefined);
  const bob = { id: 'user-2', username: 'forge:bob', passwordHash: null, createdAt: v1.T };
  await store.createUserWithIdentity(bob, { ...forge, userId: bob.id, email: 'bob@example.com', name: 'Bob', createdAt: v1.T });
  assert.equal((await store.getUser({ identity: forge }))?.id, bob.id);
  assert.equal((await store.getUser({ identity: HUB }))?.id, v1.user.id);
  assert.deepEqual(await store.listUserIdentities({ userId: v1.user.id }), [
    { ...HUB, userId: v1.user.id, email: 'alice@example.com', name: 'Alice', createdAt: v1.T },
  ]);
}

describe('upgrading a SQLite data folder made by release 0.1.0', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ca-upgrade-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** Tables, columns, indexes and foreign keys, as SQLite reports them. */
  function schemaOf(file: string): unknown {
    const db = new Database(file, { readonly: true });
    try {
      const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).pluck().all() as string[];
      return tables.map((table) => ({
        table,
        columns: db.pragma(`table_info(${table})`),
        indexes: (db.pragma(`index_list(${table})`) as Array<{ name: string }>)
          .map((index) => ({ ...index, columns: db.pragma(`index_info(${index.name})`) }))
          .sort((a, b) => a.name.localeCompare(b.name)),
        references: db.pragma(`foreign_key_list(${table})`),
      }));
    } finally {
      db.close();
    }
  }

  it('migrates, keeps every record, and ends with the schema of a new database', async () => {
    const file = path.join(dir, 'context-auth.db');
    fs.copyFileSync(path.join(FIXTURES, 'v1.sqlite'), file);
    const store = openSqliteStore({ path: file });
    await assertRecordsOfV1(store);
    await store.close();

    const db = new Database(file, { readonly: true });
    assert.equal(db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
    assert.ok(db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'grants_created_at'`).get(), 'the index the sweep needs');
    assert.ok(db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'revocations_revoked_at'`).get(), 'the index the revocation poll needs');
    // Version 9 rebuilt refresh_tokens WITHOUT ROWID (one tree fewer written per refresh), indexes and all.
    const tables = db.pragma('table_list') as { name: string; wr: number }[];
    assert.equal(tables.find((t) => t.name === 'refresh_tokens')?.wr, 1, 'refresh_tokens is WITHOUT ROWID');
    // Version 10 dropped the expires_at indexes of the two tables a refresh writes.
    const indexes = (table: string) => (db.pragma(`index_list(${table})`) as { name: string }[]).map((i) => i.name).sort();
    assert.deepEqual(indexes('refresh_tokens'), ['refresh_tokens_grant_id', 'sqlite_autoindex_refresh_tokens_1']);
    assert.deepEqual(indexes('spent_refresh_tokens'), ['sqlite_autoindex_spent_refresh_tokens_1']);
    db.close();

    const fresh = path.join(dir, 'fresh.db');
    await openSqliteStore({ path: fresh }).close();
    assert.deepEqual(schemaOf(file), schemaOf(fresh));
  });

  it('upgraded mid-life, still detects the reuse of a refresh token rotated before the upgrade', async () => {
    const file = path.join(dir, 'mid-life.db');
    fs.copyFileSync(path.join(FIXTURES, 'v1.sqlite'), file);
    const db = new Database(file);
    db.transaction(() => {
      for (const sql of midLife(sqlite)) db.exec(sql);
      db.pragma(`user_version = ${BEFORE_SPENT}`);
    })();
    db.close();

    const store = openSqliteStore({ path: file });
    try {
      await assertReuseStillDetected(store);
    } finally {
      await store.close();
    }
    const upgraded = new Database(file, { readonly: true });
    assert.deepEqual(upgraded.prepare('SELECT count(*) AS n FROM refresh_tokens').get(), { n: 1 }, 'only the live token is left as a full row');
    assert.deepEqual(upgraded.prepare('SELECT count(*) AS n FROM spent_refresh_tokens').get(), { n: 2 });
    upgraded.close();
  });

  it('upgraded with upstream identities keyed by issuer and subject: each keeps its user, and another provider sharing the issuer gets its own', async () => {
    const file = path.join(dir, 'identities.db');
    fs.copyFileSync(path.join(FIXTURES, 'v1.sqlite'), file);
    const db = new Database(file);
    db.transaction(() => {
      for (const sql of withIdentity(sqlite)) db.exec(sql);
      db.pragma(`user_version = ${BEFORE_REKEY}`);
    })();
    db.close();

    const store = openSqliteStore({ path: file });
    try {
      await assertIdentityRekeyed(store);
    } finally {
      await store.close();
    }
  });
});

describe('upgrading a PostgreSQL database made by release 0.1.0', () => {
  let server: PostgresServer;
  before(async () => {
    server = await startPostgresServer();
  });
  after(() => server?.stop());

  async function query<R extends pg.QueryResultRow>(url: string, sql: string): Promise<R[]> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query<R>(sql)).rows;
    } finally {
      await client.end();
    }
  }

  /** Columns, constraints and indexes, as the catalogue reports them. */
  async function schemaOf(url: string): Promise<unknown> {
    return {
      columns: await query(
        url,
        `SELECT table_name, column_name, data_type, is_nullable, is_identity FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 2`,
      ),
      constraints: await query(
        url,
        `SELECT conrelid::regclass::text AS table, pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2`,
      ),
      indexes: await query(url, `SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1, 2`),
    };
  }

  it('migrates, keeps every record, and ends with the schema of a new database', async () => {
    const url = await server.createDatabase();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(fs.readFileSync(path.join(FIXTURES, 'v1.postgres.sql'), 'utf8'));
    await client.end();

    const store = await openPostgresStore({ connectionString: url });
    try {
      await assertRecordsOfV1(store);
    } finally {
      await store.close();
    }
    const versions = await query<{ version: number }>(url, 'SELECT version FROM context_auth_migrations ORDER BY version');
    assert.deepEqual(
      versions.map((v) => v.version),
      Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1),
    );

    const fresh = await server.createDatabase();
    await (await openPostgresStore({ connectionString: fresh })).close();
    assert.deepEqual(await schemaOf(url), await schemaOf(fresh));
  });

  it('upgraded mid-life, still detects the reuse of a refresh token rotated before the upgrade', async () => {
    const url = await server.createDatabase();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(fs.readFileSync(path.join(FIXTURES, 'v1.postgres.sql'), 'utf8'));
    await client.query('SET search_path TO public'); // the dump emptied it
    await client.query('BEGIN');
    for (const sql of midLife(postgres)) await client.query(sql);
    for (let version = 2; version <= BEFORE_SPENT; version++) await client.query('INSERT INTO context_auth_migrations (version) VALUES ($1)', [version]);
    await client.query('COMMIT');
    await client.end();

    const store = await openPostgresStore({ connectionString: url });
    try {
      await assertReuseStillDetected(store);
    } finally {
      await store.close();
    }
    assert.deepEqual(await query(url, 'SELECT count(*)::int AS n FROM refresh_tokens'), [{ n: 1 }], 'only the live token is left as a full row');
    assert.deepEqual(await query(url, 'SELECT count(*)::int AS n FROM spent_refresh_tokens'), [{ n: 2 }]);
  });
  it('upgraded with upstream identities keyed by issuer and subject: each keeps its user, and another provider sharing the issuer gets its own', async () => {
    const url = await server.createDatabase();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(fs.readFileSync(path.join(FIXTURES, 'v1.postgres.sql'), 'utf8'));
    await client.query('SET search_path TO public'); // the dump emptied it
    await client.query('BEGIN');
    for (const sql of withIdentity(postgres)) await client.query(sql);
    for (let version = 2; version <= BEFORE_REKEY; version++) await client.query('INSERT INTO context_auth_migrations (version) VALUES ($1)', [version]);
    await client.query('COMMIT');
    await client.end();

    const store = await openPostgresStore({ connectionString: url });
    try {
      await assertIdentityRekeyed(store);
    } finally {
      await store.close();
    }
  });
});
