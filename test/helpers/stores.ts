/**
 * The two real stores a deployment runs on, as data: a SQLite file in a temporary folder and a
 * new PostgreSQL database (helpers/postgres.ts). Each opens a store and can count the rows of
 * every table straight from the database, outside the store, so a test can prove that an attack
 * left nothing behind.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { openPostgresStore } from '../../src/store/postgres.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { FullStore } from '../../src/store/store.js';
import { startPostgres } from './postgres.js';

/** Tables whose rows an attacker would want created, changed or removed. */
export const TABLES = [
  'clients',
  'users',
  'interactions',
  'sessions',
  'consents',
  'grants',
  'authorization_codes',
  'refresh_tokens',
  'spent_refresh_tokens',
  'revocations',
  'used_assertions',
] as const;
export type Table = (typeof TABLES)[number];
export type RowCounts = Record<Table, number>;

export interface OpenedStore {
  store: FullStore;
  /** Rows per table, read with the database's own driver. */
  counts(): Promise<RowCounts>;
  /** Closes the store and removes the file or drops the database. */
  close(): Promise<void>;
}

export interface StoreKind {
  name: 'SQLite' | 'PostgreSQL';
  open(): Promise<OpenedStore>;
}

export const SQLITE: StoreKind = {
  name: 'SQLite',
  open: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ca-attack-'));
    const path = join(dir, 'store.db');
    const store = openSqliteStore({ path });
    return {
      store,
      counts: async () => {
        const db = new Database(path, { readonly: true });
        try {
          return Object.fromEntries(TABLES.map((table) => [table, (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n])) as RowCounts;
        } finally {
          db.close();
        }
      },
      close: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

export const POSTGRES: StoreKind = {
  name: 'PostgreSQL',
  open: async () => {
    const database = await startPostgres();
    const store = await openPostgresStore({ connectionString: database.connectionString });
    return {
      store,
      counts: async () => {
        const client = new pg.Client({ connectionString: database.connectionString });
        await client.connect();
        try {
          const sql = TABLES.map((table) => `SELECT '${table}' AS t, count(*)::int AS n FROM ${table}`).join(' UNION ALL ');
          const { rows } = await client.query<{ t: Table; n: number }>(sql);
          return Object.fromEntries(rows.map((row) => [row.t, row.n])) as RowCounts;
        } finally {
          await client.end();
        }
      },
      close: async () => {
        await store.close();
        await database.stop();
      },
    };
  },
};

/** Every store an attack, a fuzz run or a crash must be tried on. */
export const STORE_KINDS: readonly StoreKind[] = [SQLITE, POSTGRES];
