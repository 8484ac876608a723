/**
 * The store suite's probes (context-auth/store/testing) for the SQL stores: how many rows a kind
 * of record has in its table, read beside the store on a connection of their own, as a store's
 * author would give them.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import type { RecordKind, StoreProbes } from '../../src/store/testing/index.js';

const TABLE_OF: Record<RecordKind, string> = {
  clients: 'clients',
  users: 'users',
  userIdentities: 'user_identities',
  consents: 'consents',
  interactions: 'interactions',
  sessions: 'sessions',
  upstreamSessions: 'upstream_sessions',
  grants: 'grants',
  authorizationCodes: 'authorization_codes',
  refreshTokens: 'refresh_tokens',
  spentRefreshTokens: 'spent_refresh_tokens',
  deviceAuthorizations: 'device_authorizations',
  usedAssertions: 'used_assertions',
  revocations: 'revocations',
  signingKeys: 'signing_keys',
};

/** Probes of the SQLite file at `file`, and the function that closes their connection. */
export function sqliteProbes(file: string): StoreProbes & { close(): void } {
  let db: Database.Database | undefined;
  return {
    countRecords: async (kind) => {
      db ??= new Database(file, { readonly: true, fileMustExist: true });
      return (db.prepare(`SELECT count(*) AS n FROM ${TABLE_OF[kind]}`).get() as { n: number }).n;
    },
    close: () => db?.close(),
  };
}

/** Probes of the PostgreSQL database at `connectionString`, and the function that closes their connection. */
export function postgresProbes(connectionString: string): StoreProbes & { close(): Promise<void> } {
  let client: Promise<pg.Client> | undefined;
  const connected = (): Promise<pg.Client> =>
    (client ??= (async () => {
      const c = new pg.Client({ connectionString });
      await c.connect();
      return c;
    })());
  return {
    countRecords: async (kind) => Number((await (await connected()).query<{ n: string }>(`SELECT count(*) AS n FROM ${TABLE_OF[kind]}`)).rows[0]!.n),
    close: async () => {
      if (client) await (await client).end();
    },
  };
}
