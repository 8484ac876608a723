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
import { openPostgresStore } from '../../src/store/postgres.js';
import { SCHEMA_VERSION } from '../../src/store/sql/schema.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { startPostgresServer, type PostgresServer } from '../helpers/postgres.js';
import * as v1 from './fixtures/v1-records.js';

const FIXTURES = path.join(import.meta.dirname, 'fixtures');

async function assertRecordsOfV1(store: Store): Promise<void> {
  const now = v1.T;
  assert.deepEqual(await store.getClient(v1.client.clientId), { ...v1.client, lastUsedAt: null });
  assert.deepEqual(await store.getUserById(v1.user.id), v1.user);
  // Columns added since read back as null.
  assert.deepEqual(await store.getInteraction(v1.interaction.id, now), { ...v1.interaction, upstream: null });
  assert.deepEqual(await store.getSession(v1.session.idHash, now), { ...v1.session, upstreamSessionId: null });
  assert.deepEqual(await store.getConsent(v1.user.id, v1.client.clientId, v1.consent.resource), v1.consent);
  assert.deepEqual(await store.getGrant(v1.grant.id), { ...v1.grant, upstreamSessionId: null });
  assert.deepEqual(await store.getRefreshToken(v1.refresh.tokenHash), v1.refresh);
  assert.deepEqual(await store.getAccessToken(v1.access.jti), v1.access);
  assert.deepEqual(await store.listSigningKeys(), [v1.key]);
  // Still working: the code and the refresh token are single use as before.
  assert.deepEqual(await store.consumeAuthorizationCode(v1.code.codeHash, now), { status: 'ok', record: { ...v1.code, consumedAt: now } });
  const next = { ...v1.refresh, tokenHash: 'refresh-hash-2', consumedAt: null };
  assert.equal((await store.rotateRefreshToken(v1.refresh.tokenHash, next, now)).status, 'ok');
  assert.equal((await store.rotateRefreshToken(v1.refresh.tokenHash, next, now)).status, 'replayed');
  // Version 5's table: the shared rate-limit buckets.
  assert.deepEqual(await store.takeRateTokens({ key: 'register:192.0.2.1', want: 1, burst: 2, perSecond: 1, nowMs: now * 1000 }), { granted: 1, level: 1 });
  // Version 6: revoking the old grant records it for resource servers, until its access token expires.
  assert.deepEqual(await store.listRevocations(0, now), []);
  await store.revokeGrant(v1.grant.id, now);
  assert.deepEqual(await store.listRevocations(0, now), [{ kind: 'grant', id: v1.grant.id, revokedAt: now, expiresAt: v1.access.expiresAt }]);
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
    db.close();

    const fresh = path.join(dir, 'fresh.db');
    await openSqliteStore({ path: fresh }).close();
    assert.deepEqual(schemaOf(file), schemaOf(fresh));
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
      columns: await query(url, `SELECT table_name, column_name, data_type, is_nullable, is_identity FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 2`),
      constraints: await query(url, `SELECT conrelid::regclass::text AS table, pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2`),
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
    assert.deepEqual(versions.map((v) => v.version), Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1));

    const fresh = await server.createDatabase();
    await (await openPostgresStore({ connectionString: fresh })).close();
    assert.deepEqual(await schemaOf(url), await schemaOf(fresh));
  });
});
