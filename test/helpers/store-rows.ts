/**
 * Rows written straight into a SQL store's database with the store's own INSERT statement, for
 * the tests of one backend that need what no flow makes: many live refresh tokens under one grant
 * (the contract issues a family's first token only by redeeming its code, and a family has one).
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { postgres, render, sqlite, type Dialect } from '../../src/store/sql/dialect.js';
import { mapper } from '../../src/store/sql/mapping.js';
import { REFRESH_TOKENS } from '../../src/store/sql/schema.js';
import { S } from '../../src/store/sql/statements.js';
import type { RefreshTokenRecord } from '../../src/store/store.js';

/** The INSERT of a refresh token in `d`, and its positional values for a token. */
function insertion(d: Dialect): { sql: string; values: (token: RefreshTokenRecord) => unknown[] } {
  const rendered = render(d, S.insertRefresh)!;
  const columns = mapper<RefreshTokenRecord>(d, REFRESH_TOKENS);
  return {
    sql: rendered.sql,
    values: (token) => {
      const params = columns.params(token);
      return rendered.names.map((name) => params[name]);
    },
  };
}

/** Inserts the tokens into the SQLite file (a second connection, beside the store's own). */
export function insertRefreshTokensSqlite(file: string, tokens: RefreshTokenRecord[]): void {
  const { sql, values } = insertion(sqlite);
  const db = new Database(file);
  try {
    db.pragma('busy_timeout = 5000');
    const statement = db.prepare(sql);
    db.transaction(() => {
      for (const token of tokens) statement.run(values(token));
    })();
  } finally {
    db.close();
  }
}

/** Inserts the tokens into the PostgreSQL database, in one transaction. */
export async function insertRefreshTokensPostgres(connectionString: string, tokens: RefreshTokenRecord[]): Promise<void> {
  const { sql, values } = insertion(postgres);
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query('BEGIN');
    for (const token of tokens) await client.query(sql, values(token));
    await client.query('COMMIT');
  } finally {
    await client.end();
  }
}
