/**
 * The PostgreSQL store (node-postgres), so several `context-auth serve` replicas can share one
 * database. Same semantics, orderings and error mapping as the SQLite store (sqlite.ts).
 *
 * Concurrency: the replicas (and the connections of one pool) race each other for real here, so
 * single use lives in the SQL itself — a conditional `UPDATE … RETURNING` or `DELETE … RETURNING`
 * that PostgreSQL re-checks against the latest row version when two of them meet, never a read
 * followed by a write. Changes spanning statements run in one transaction; signing key changes
 * and migrations additionally hold a transaction-scoped advisory lock, so concurrent callers in
 * different processes run one after the other.
 */
import pg from 'pg';
import { MIGRATION_LOCK, SIGNING_KEY_LOCK, postgresMigrations } from './migrations/postgres.js';
import {
  StoreConflictError,
  StoreUnavailableError,
  type AccessTokenRecord,
  type AuthorizationCodeRecord,
  type ClientRecord,
  type ConsentRecord,
  type GrantRecord,
  type InteractionRecord,
  type RefreshTokenRecord,
  type SessionRecord,
  type SigningKeyRecord,
  type Store,
  type UserRecord,
} from './store.js';

export interface PostgresStoreOptions {
  /** `postgresql://user:password@host:5432/database?sslmode=…` (anything node-postgres accepts). */
  connectionString: string;
  /** Pool size per process (default 10). */
  maxConnections?: number;
  /** How long to wait for a connection, new or from the pool (default 5000 ms). */
  connectionTimeoutMs?: number;
  /** Server-side `statement_timeout` (default 10 000 ms). */
  statementTimeoutMs?: number;
}

// ---------------------------------------------------------------------------------------------
// Rows (snake_case, as stored) and their mapping to records. bigint columns arrive as numbers
// (the pool's own type parser, below), booleans as booleans and jsonb as fresh parsed values, so
// every record returned is a new object the caller may mutate.

type ClientRow = {
  client_id: string;
  client_secret_hash: string | null;
  token_endpoint_auth_method: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  client_name: string | null;
  scope: string | null;
  metadata: Record<string, unknown>;
  can_introspect: boolean;
  registered_by: string;
  created_at: number;
};

type UserRow = {
  id: string;
  username: string;
  password_hash: string;
  created_at: number;
};

type InteractionRow = {
  id: string;
  client_id: string;
  request: InteractionRecord['request'];
  browser_binding_hash: string;
  csrf_token: string;
  user_id: string | null;
  created_at: number;
  expires_at: number;
};

type SessionRow = {
  id_hash: string;
  user_id: string;
  auth_time: number;
  created_at: number;
  expires_at: number;
};

type ConsentRow = {
  user_id: string;
  client_id: string;
  resource: string;
  scope: string[];
  created_at: number;
  updated_at: number;
};

type GrantRow = {
  id: string;
  client_id: string;
  user_id: string | null;
  scope: string[];
  resource: string;
  auth_time: number | null;
  created_at: number;
  revoked_at: number | null;
};

type CodeRow = {
  code_hash: string;
  grant_id: string;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  redirect_uri_provided: boolean;
  code_challenge: string;
  scope: string[];
  resource: string;
  auth_time: number;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
};

type RefreshTokenRow = {
  token_hash: string;
  grant_id: string;
  client_id: string;
  scope: string[];
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
};

type AccessTokenRow = {
  jti: string;
  grant_id: string;
  client_id: string;
  expires_at: number;
  revoked_at: number | null;
};

type SigningKeyRow = {
  kid: string;
  alg: string;
  private_jwk: string;
  public_jwk: string;
  status: string;
  created_at: number;
};

/**
 * jsonb parameters go in as JSON text: node-postgres would turn a JS array into a PostgreSQL
 * array literal, not JSON.
 */
const json = (value: unknown): string => JSON.stringify(value);

/** A record as the positional parameters of its INSERT, in the order of its column list. */
type Params = unknown[];

const CLIENT_COLUMNS = [
  'client_id', 'client_secret_hash', 'token_endpoint_auth_method', 'redirect_uris', 'grant_types', 'response_types',
  'client_name', 'scope', 'metadata', 'can_introspect', 'registered_by', 'created_at',
] as const;
const clientParams = (c: ClientRecord): Params => [
  c.clientId, c.clientSecretHash, c.tokenEndpointAuthMethod, json(c.redirectUris), json(c.grantTypes), json(c.responseTypes),
  c.clientName, c.scope, json(c.metadata), c.canIntrospect, c.registeredBy, c.createdAt,
];
const clientFromRow = (r: ClientRow): ClientRecord => ({
  clientId: r.client_id,
  clientSecretHash: r.client_secret_hash,
  tokenEndpointAuthMethod: r.token_endpoint_auth_method as ClientRecord['tokenEndpointAuthMethod'],
  redirectUris: r.redirect_uris,
  grantTypes: r.grant_types as ClientRecord['grantTypes'],
  responseTypes: r.response_types,
  clientName: r.client_name,
  scope: r.scope,
  metadata: r.metadata,
  canIntrospect: r.can_introspect,
  registeredBy: r.registered_by as ClientRecord['registeredBy'],
  createdAt: r.created_at,
});

const USER_COLUMNS = ['id', 'username', 'password_hash', 'created_at'] as const;
const userParams = (u: UserRecord): Params => [u.id, u.username, u.passwordHash, u.createdAt];
const userFromRow = (r: UserRow): UserRecord => ({
  id: r.id,
  username: r.username,
  passwordHash: r.password_hash,
  createdAt: r.created_at,
});

const INTERACTION_COLUMNS = ['id', 'client_id', 'request', 'browser_binding_hash', 'csrf_token', 'user_id', 'created_at', 'expires_at'] as const;
const interactionParams = (i: InteractionRecord): Params => [
  i.id, i.clientId, json(i.request), i.browserBindingHash, i.csrfToken, i.userId, i.createdAt, i.expiresAt,
];
const interactionFromRow = (r: InteractionRow): InteractionRecord => ({
  id: r.id,
  clientId: r.client_id,
  request: r.request,
  browserBindingHash: r.browser_binding_hash,
  csrfToken: r.csrf_token,
  userId: r.user_id,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

const SESSION_COLUMNS = ['id_hash', 'user_id', 'auth_time', 'created_at', 'expires_at'] as const;
const sessionParams = (s: SessionRecord): Params => [s.idHash, s.userId, s.authTime, s.createdAt, s.expiresAt];
const sessionFromRow = (r: SessionRow): SessionRecord => ({
  idHash: r.id_hash,
  userId: r.user_id,
  authTime: r.auth_time,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

const CONSENT_COLUMNS = ['user_id', 'client_id', 'resource', 'scope', 'created_at', 'updated_at'] as const;
const consentParams = (c: ConsentRecord): Params => [c.userId, c.clientId, c.resource, json(c.scope), c.createdAt, c.updatedAt];
const consentFromRow = (r: ConsentRow): ConsentRecord => ({
  userId: r.user_id,
  clientId: r.client_id,
  resource: r.resource,
  scope: r.scope,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const GRANT_COLUMNS = ['id', 'client_id', 'user_id', 'scope', 'resource', 'auth_time', 'created_at', 'revoked_at'] as const;
const grantParams = (g: GrantRecord): Params => [g.id, g.clientId, g.userId, json(g.scope), g.resource, g.authTime, g.createdAt, g.revokedAt];
const grantFromRow = (r: GrantRow): GrantRecord => ({
  id: r.id,
  clientId: r.client_id,
  userId: r.user_id,
  scope: r.scope,
  resource: r.resource,
  authTime: r.auth_time,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
});

const CODE_COLUMNS = [
  'code_hash', 'grant_id', 'client_id', 'user_id', 'redirect_uri', 'redirect_uri_provided', 'code_challenge',
  'scope', 'resource', 'auth_time', 'created_at', 'expires_at', 'consumed_at',
] as const;
const codeParams = (c: AuthorizationCodeRecord): Params => [
  c.codeHash, c.grantId, c.clientId, c.userId, c.redirectUri, c.redirectUriProvided, c.codeChallenge,
  json(c.scope), c.resource, c.authTime, c.createdAt, c.expiresAt, c.consumedAt,
];
const codeFromRow = (r: CodeRow): AuthorizationCodeRecord => ({
  codeHash: r.code_hash,
  grantId: r.grant_id,
  clientId: r.client_id,
  userId: r.user_id,
  redirectUri: r.redirect_uri,
  redirectUriProvided: r.redirect_uri_provided,
  codeChallenge: r.code_challenge,
  scope: r.scope,
  resource: r.resource,
  authTime: r.auth_time,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  consumedAt: r.consumed_at,
});

const REFRESH_COLUMNS = ['token_hash', 'grant_id', 'client_id', 'scope', 'created_at', 'expires_at', 'consumed_at'] as const;
const refreshParams = (t: RefreshTokenRecord): Params => [
  t.tokenHash, t.grantId, t.clientId, json(t.scope), t.createdAt, t.expiresAt, t.consumedAt,
];
const refreshFromRow = (r: RefreshTokenRow): RefreshTokenRecord => ({
  tokenHash: r.token_hash,
  grantId: r.grant_id,
  clientId: r.client_id,
  scope: r.scope,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  consumedAt: r.consumed_at,
});

const ACCESS_COLUMNS = ['jti', 'grant_id', 'client_id', 'expires_at', 'revoked_at'] as const;
const accessParams = (t: AccessTokenRecord): Params => [t.jti, t.grantId, t.clientId, t.expiresAt, t.revokedAt];
const accessFromRow = (r: AccessTokenRow): AccessTokenRecord => ({
  jti: r.jti,
  grantId: r.grant_id,
  clientId: r.client_id,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
});

const KEY_COLUMNS = ['kid', 'alg', 'private_jwk', 'public_jwk', 'status', 'created_at'] as const;
const keyParams = (k: SigningKeyRecord): Params => [k.kid, k.alg, k.privateJwk, k.publicJwk, k.status, k.createdAt];
const keyFromRow = (r: SigningKeyRow): SigningKeyRecord => ({
  kid: r.kid,
  alg: r.alg,
  privateJwk: r.private_jwk,
  publicJwk: r.public_jwk,
  status: r.status as SigningKeyRecord['status'],
  createdAt: r.created_at,
});

/** `INSERT INTO table (a, b) VALUES ($1, $2)` for a list of columns. */
function insertSql(table: string, columns: readonly string[]): string {
  return `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`;
}

// ---------------------------------------------------------------------------------------------
// Statements. Orderings compare with COLLATE "C" (byte order), like SQLite's BINARY collation,
// whatever the database's locale. Times compared with arithmetic are cast to bigint explicitly.

const SQL = {
  insertClient: insertSql('clients', CLIENT_COLUMNS),
  getClient: 'SELECT * FROM clients WHERE client_id = $1',
  listClients: 'SELECT * FROM clients ORDER BY created_at, client_id COLLATE "C"',
  deleteClient: 'DELETE FROM clients WHERE client_id = $1',

  insertUser: insertSql('users', USER_COLUMNS),
  getUserById: 'SELECT * FROM users WHERE id = $1',
  getUserByUsername: 'SELECT * FROM users WHERE username = $1',
  listUsers: 'SELECT * FROM users ORDER BY username COLLATE "C"',
  deleteUser: 'DELETE FROM users WHERE username = $1',

  insertInteraction: insertSql('interactions', INTERACTION_COLUMNS),
  getInteraction: 'SELECT * FROM interactions WHERE id = $1 AND expires_at > $2',
  setInteractionUser: 'UPDATE interactions SET user_id = $1 WHERE id = $2',
  consumeInteraction: 'DELETE FROM interactions WHERE id = $1 AND expires_at > $2 RETURNING *',

  insertSession: insertSql('sessions', SESSION_COLUMNS),
  getSession: 'SELECT * FROM sessions WHERE id_hash = $1 AND expires_at > $2',
  deleteSession: 'DELETE FROM sessions WHERE id_hash = $1',

  getConsent: 'SELECT * FROM consents WHERE user_id = $1 AND client_id = $2 AND resource = $3',
  // One statement, so concurrent widenings of the same consent both land: the conflicting insert
  // locks the row and merges with its latest version. Scope values are ASCII (RFC 6749 §3.3),
  // where byte order is JS's default sort order.
  upsertConsent: `${insertSql('consents', CONSENT_COLUMNS)}
    ON CONFLICT (user_id, client_id, resource) DO UPDATE SET
      scope = (
        SELECT coalesce(jsonb_agg(value ORDER BY value COLLATE "C"), '[]'::jsonb)
        FROM (SELECT DISTINCT jsonb_array_elements_text(consents.scope || excluded.scope) AS value) AS merged
      ),
      updated_at = excluded.updated_at`,
  listConsents: `SELECT * FROM consents
    WHERE ($1::text IS NULL OR user_id = $1) AND ($2::text IS NULL OR client_id = $2)
    ORDER BY user_id COLLATE "C", client_id COLLATE "C", resource COLLATE "C"`,
  deleteConsents: 'DELETE FROM consents WHERE user_id = $1 AND client_id = $2',
  revokeGrantsOf: 'UPDATE grants SET revoked_at = $1 WHERE user_id = $2 AND client_id = $3 AND revoked_at IS NULL',

  insertGrant: insertSql('grants', GRANT_COLUMNS),
  getGrant: 'SELECT * FROM grants WHERE id = $1',
  revokeGrant: 'UPDATE grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL',

  insertCode: insertSql('authorization_codes', CODE_COLUMNS),
  getCode: 'SELECT * FROM authorization_codes WHERE code_hash = $1',
  consumeCode: `UPDATE authorization_codes SET consumed_at = $1
    WHERE code_hash = $2 AND consumed_at IS NULL AND expires_at > $1
      AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = authorization_codes.grant_id AND g.revoked_at IS NOT NULL)
    RETURNING *`,

  insertRefresh: insertSql('refresh_tokens', REFRESH_COLUMNS),
  getRefresh: 'SELECT * FROM refresh_tokens WHERE token_hash = $1',
  // The grant check sits in the same statement, so a revoked grant's token is left unconsumed.
  consumeRefresh: `UPDATE refresh_tokens SET consumed_at = $1
    WHERE token_hash = $2 AND consumed_at IS NULL AND expires_at > $1
      AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = refresh_tokens.grant_id AND g.revoked_at IS NOT NULL)
    RETURNING *`,

  insertAccess: insertSql('access_tokens', ACCESS_COLUMNS),
  getAccess: 'SELECT * FROM access_tokens WHERE jti = $1',
  revokeAccess: 'UPDATE access_tokens SET revoked_at = $1 WHERE jti = $2 AND revoked_at IS NULL',

  // seq breaks ties between keys created in the same second: the later insert is newer.
  listKeys: 'SELECT * FROM signing_keys ORDER BY created_at DESC, seq DESC',
  lockKeys: `SELECT pg_advisory_xact_lock(${SIGNING_KEY_LOCK})`,
  getCurrentKey: `SELECT * FROM signing_keys WHERE status = 'current'`,
  insertKey: insertSql('signing_keys', KEY_COLUMNS),
  retirePreviousKey: `UPDATE signing_keys SET status = 'retired' WHERE status = 'previous'`,
  demoteCurrentKey: `UPDATE signing_keys SET status = 'previous' WHERE status = 'current'`,

  sweep: [
    'DELETE FROM authorization_codes WHERE expires_at <= $1',
    'DELETE FROM refresh_tokens WHERE expires_at <= $1',
    'DELETE FROM access_tokens WHERE expires_at <= $1',
    'DELETE FROM sessions WHERE expires_at <= $1',
    'DELETE FROM interactions WHERE expires_at <= $1',
    // Grants last, once their codes and tokens are gone. The 60 s margin spares a grant created
    // just now whose first code or token is about to be saved.
    `DELETE FROM grants WHERE created_at < $1::bigint - 60
       AND NOT EXISTS (SELECT 1 FROM authorization_codes c WHERE c.grant_id = grants.id)
       AND NOT EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.grant_id = grants.id)
       AND NOT EXISTS (SELECT 1 FROM access_tokens a WHERE a.grant_id = grants.id)`,
  ],
} as const;

// ---------------------------------------------------------------------------------------------
// Errors

/** SQLSTATEs after which the database cannot serve the request now (an outage, not a bug). */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down, recovering)
  '57P04', // database_dropped
  '57P05', // idle_session_timeout
  '57014', // query_canceled (statement_timeout)
  '55P03', // lock_not_available
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '25006', // read_only_sql_transaction (a standby after failover)
  '28000', // invalid_authorization_specification
  '28P01', // invalid_password
  '3D000', // invalid_catalog_name (no such database)
  'XX001', // data_corrupted
  'XX002', // index_corrupted
]);
/** Whole SQLSTATE classes: 08 connection exception, 53 insufficient resources (53300 too many connections), 58 system error. */
const UNAVAILABLE_CLASSES = new Set(['08', '53', '58']);

/** Node socket errors (no SQLSTATE) meaning the server cannot be reached. */
const UNAVAILABLE_NODE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'EPIPE',
]);

/** node-postgres's own messages for a lost, refused or timed-out connection. */
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|not queryable|Cannot use a pool after calling end|server closed the connection|The server does not support SSL/i;

function isUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const { code, syscall } = err as Error & { code?: unknown; syscall?: unknown };
  if (typeof code === 'string') {
    if (/^[0-9A-Z]{5}$/.test(code)) return UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_CLASSES.has(code.slice(0, 2));
    if (UNAVAILABLE_NODE_CODES.has(code)) return true;
    // ENOENT and the like on connect: a Unix socket that is not there.
    if (syscall === 'connect' || syscall === 'getaddrinfo') return true;
  }
  return UNAVAILABLE_MESSAGES.test(err.message);
}

/**
 * What to say about the database in messages: host, port and database name, never the user's
 * password (nor the rest of the connection string, which may carry one in `password=` form).
 */
function describeTarget(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    const host = url.hostname || url.searchParams.get('host') || 'localhost';
    return `${host}:${url.port || '5432'}${url.pathname}`;
  } catch {
    return 'the configured database';
  }
}

/** Removes the password from a message, should a driver error ever echo it. */
function redactor(connectionString: string): (text: string) => string {
  const secrets: string[] = [];
  try {
    const url = new URL(connectionString);
    if (url.password) secrets.push(url.password, decodeURIComponent(url.password));
    const param = url.searchParams.get('password');
    if (param) secrets.push(param);
  } catch {
    const match = /password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)/i.exec(connectionString);
    if (match?.[1]) secrets.push(match[1], match[1].replace(/^'|'$/g, ''));
  }
  const nonEmpty = [...new Set(secrets.filter((secret) => secret.length > 0))];
  return (text) => nonEmpty.reduce((result, secret) => result.split(secret).join('***'), text);
}

// ---------------------------------------------------------------------------------------------
// Opening

/** What both the pool and a checked-out client can run. */
interface Queryable {
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/** bigint (int8) as a JS number: epoch seconds and identity values fit comfortably. */
function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RangeError(`bigint out of the safe integer range: ${text}`);
  return value;
}

/** Per-pool type parsers (never the global pg.types), so other node-postgres users in the process are unaffected. */
const typeParsers: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 && format !== 'binary' ? parseInt8 : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

async function migrate(client: pg.PoolClient): Promise<void> {
  await client.query('BEGIN');
  try {
    // First, before anything else: another replica migrating at the same time waits here, then
    // sees the versions it applied.
    await client.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`);
    await client.query(
      'CREATE TABLE IF NOT EXISTS context_auth_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const { rows } = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM context_auth_migrations');
    const version = rows[0]?.version ?? 0;
    if (version > postgresMigrations.length) {
      throw new Error(`database schema version ${version} is newer than this code knows (${postgresMigrations.length})`);
    }
    for (const [index, sql] of postgresMigrations.entries()) {
      if (index < version) continue;
      await client.query(sql);
      await client.query('INSERT INTO context_auth_migrations (version, applied_at) VALUES ($1, now())', [index + 1]);
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// The store

export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const target = describeTarget(options.connectionString);
  const redact = redactor(options.connectionString);

  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5000,
    idleTimeoutMillis: 30_000,
    statement_timeout: options.statementTimeoutMs ?? 10_000,
    application_name: 'context-auth',
    keepAlive: true,
    types: typeParsers,
  });
  // An idle connection that breaks (the server restarted, a proxy dropped it) is reported here,
  // and the pool discards it; without a listener the 'error' event would crash the process. The
  // next request opens a new connection, or fails with StoreUnavailableError while the database
  // is away: there is nothing to do here.
  pool.on('error', () => undefined);

  let closed = false;

  const translate = (err: unknown): unknown => {
    if (err instanceof StoreConflictError || err instanceof StoreUnavailableError) return err;
    if (closed) return new StoreUnavailableError('PostgreSQL store is closed', { cause: err });
    const code = (err as { code?: unknown } | null)?.code;
    if (code === '23505') return new StoreConflictError(redact((err as Error).message));
    if (isUnavailable(err)) {
      const message = err instanceof Error ? err.message || (err as Error & { code?: string }).code || err.name : String(err);
      return new StoreUnavailableError(`PostgreSQL store unavailable (${target}): ${redact(message)}`, { cause: err });
    }
    return err;
  };

  /** Runs a store method, translating its errors. */
  const run = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      throw translate(err);
    }
  };

  /**
   * Runs `fn` on one pooled connection. While checked out, the pool no longer listens for the
   * connection's errors: one lost between two statements would otherwise be an unhandled 'error'
   * event (the next statement fails with it anyway). Unlike `pool.query`, which discards the
   * connection after any error, a duplicate key included, the connection goes back to the pool
   * unless it failed as a connection (or `discard` was called).
   */
  const withClient = async <T>(fn: (client: pg.PoolClient, discard: (err: Error) => void) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    let broken: Error | undefined;
    const discard = (err: Error): void => {
      broken ??= err;
    };
    client.on('error', discard);
    try {
      return await fn(client, discard);
    } catch (err) {
      if (isUnavailable(err)) discard(err as Error);
      throw err;
    } finally {
      client.off('error', discard);
      client.release(broken);
    }
  };

  const query = async <R extends pg.QueryResultRow>(sql: string, params: unknown[] = [], db?: Queryable): Promise<pg.QueryResult<R>> =>
    db ? db.query<R>(sql, params) : withClient((client) => client.query<R>(sql, params));
  const rows = async <R extends pg.QueryResultRow>(sql: string, params: unknown[] = [], db?: Queryable): Promise<R[]> =>
    (await query<R>(sql, params, db)).rows;
  const first = async <R extends pg.QueryResultRow>(sql: string, params: unknown[] = [], db?: Queryable): Promise<R | undefined> =>
    (await rows<R>(sql, params, db))[0];
  const changes = async (sql: string, params: unknown[], db?: Queryable): Promise<number> => (await query(sql, params, db)).rowCount ?? 0;

  /** BEGIN … COMMIT on one connection; ROLLBACK on any error, which is rethrown. */
  const transaction = <T>(fn: (db: pg.PoolClient) => Promise<T>): Promise<T> =>
    withClient(async (client, discard) => {
      await client.query('BEGIN');
      try {
        const result = await fn(client);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        // A connection that cannot even roll back is not returned to the pool.
        await client.query('ROLLBACK').catch((rollbackError: unknown) => discard(rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError))));
        throw err;
      }
    });

  try {
    const client = await pool.connect();
    try {
      await migrate(client);
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end().catch(() => undefined);
    const message = err instanceof Error ? err.message || (err as Error & { code?: string }).code || err.name : String(err);
    throw new StoreUnavailableError(`cannot open PostgreSQL store at ${target}: ${redact(message)}`, { cause: err });
  }

  return {
    close: async () => {
      if (closed) return;
      closed = true;
      await pool.end();
    },

    createClient: (client) => run(async () => void (await query(SQL.insertClient, clientParams(client)))),
    getClient: (clientId) => run(async () => mapOptional(await first<ClientRow>(SQL.getClient, [clientId]), clientFromRow)),
    listClients: () => run(async () => (await rows<ClientRow>(SQL.listClients)).map(clientFromRow)),
    deleteClient: (clientId) => run(async () => (await changes(SQL.deleteClient, [clientId])) > 0),

    createUser: (user) => run(async () => void (await query(SQL.insertUser, userParams(user)))),
    getUserById: (id) => run(async () => mapOptional(await first<UserRow>(SQL.getUserById, [id]), userFromRow)),
    getUserByUsername: (username) => run(async () => mapOptional(await first<UserRow>(SQL.getUserByUsername, [username]), userFromRow)),
    listUsers: () => run(async () => (await rows<UserRow>(SQL.listUsers)).map(userFromRow)),
    deleteUser: (username) => run(async () => (await changes(SQL.deleteUser, [username])) > 0),

    createInteraction: (interaction) => run(async () => void (await query(SQL.insertInteraction, interactionParams(interaction)))),
    getInteraction: (id, now) => run(async () => mapOptional(await first<InteractionRow>(SQL.getInteraction, [id, now]), interactionFromRow)),
    setInteractionUser: (id, userId) => run(async () => void (await query(SQL.setInteractionUser, [userId, id]))),
    consumeInteraction: (id, now) =>
      run(async () => mapOptional(await first<InteractionRow>(SQL.consumeInteraction, [id, now]), interactionFromRow)),

    createSession: (session) => run(async () => void (await query(SQL.insertSession, sessionParams(session)))),
    getSession: (idHash, now) => run(async () => mapOptional(await first<SessionRow>(SQL.getSession, [idHash, now]), sessionFromRow)),
    deleteSession: (idHash) => run(async () => void (await query(SQL.deleteSession, [idHash]))),

    getConsent: (userId, clientId, resource) =>
      run(async () => mapOptional(await first<ConsentRow>(SQL.getConsent, [userId, clientId, resource]), consentFromRow)),
    saveConsent: (consent) =>
      run(async () => void (await query(SQL.upsertConsent, consentParams({ ...consent, scope: [...new Set(consent.scope)].sort() })))),
    listConsents: (filter) =>
      run(async () => (await rows<ConsentRow>(SQL.listConsents, [filter.userId ?? null, filter.clientId ?? null])).map(consentFromRow)),
    revokeConsents: (userId, clientId, now) =>
      run(() =>
        transaction(async (db) => {
          const count = await changes(SQL.deleteConsents, [userId, clientId], db);
          await query(SQL.revokeGrantsOf, [now, userId, clientId], db);
          return count;
        }),
      ),

    createGrant: (grant) => run(async () => void (await query(SQL.insertGrant, grantParams(grant)))),
    getGrant: (id) => run(async () => mapOptional(await first<GrantRow>(SQL.getGrant, [id]), grantFromRow)),
    revokeGrant: (id, now) => run(async () => void (await query(SQL.revokeGrant, [now, id]))),

    saveAuthorizationCode: (code) => run(async () => void (await query(SQL.insertCode, codeParams(code)))),
    consumeAuthorizationCode: (codeHash, now) =>
      run(async (): Promise<Awaited<ReturnType<Store['consumeAuthorizationCode']>>> => {
        const used = await first<CodeRow>(SQL.consumeCode, [now, codeHash]);
        if (used) return { status: 'ok', record: codeFromRow(used) };
        // Only explains the failure; a used code never becomes usable again, so no race matters here.
        const row = await first<CodeRow>(SQL.getCode, [codeHash]);
        if (!row) return { status: 'missing' };
        const record = codeFromRow(row);
        if (row.consumed_at !== null) return { status: 'replayed', record };
        if (row.expires_at <= now) return { status: 'expired', record };
        return { status: 'revoked', record };
      }),

    saveRefreshToken: (token) => run(async () => void (await query(SQL.insertRefresh, refreshParams(token)))),
    getRefreshToken: (tokenHash) => run(async () => mapOptional(await first<RefreshTokenRow>(SQL.getRefresh, [tokenHash]), refreshFromRow)),
    rotateRefreshToken: (oldHash, next, now) =>
      run(() =>
        transaction(async (db): Promise<Awaited<ReturnType<Store['rotateRefreshToken']>>> => {
          // A concurrent rotation of the same token waits on the row lock, then re-checks the
          // condition against the committed row: only one of them gets it back.
          const used = await first<RefreshTokenRow>(SQL.consumeRefresh, [now, oldHash], db);
          if (used) {
            // A failure here (a duplicate hash) rolls the consumption back with it.
            await query(SQL.insertRefresh, refreshParams(next), db);
            return { status: 'ok', record: refreshFromRow(used) };
          }
          const row = await first<RefreshTokenRow>(SQL.getRefresh, [oldHash], db);
          if (!row) return { status: 'missing' };
          const record = refreshFromRow(row);
          if (row.consumed_at !== null) return { status: 'replayed', record };
          if (row.expires_at <= now) return { status: 'expired', record };
          return { status: 'revoked', record };
        }),
      ),

    saveAccessToken: (token) => run(async () => void (await query(SQL.insertAccess, accessParams(token)))),
    getAccessToken: (jti) => run(async () => mapOptional(await first<AccessTokenRow>(SQL.getAccess, [jti]), accessFromRow)),
    revokeAccessToken: (jti, now) => run(async () => void (await query(SQL.revokeAccess, [now, jti]))),

    listSigningKeys: () => run(async () => (await rows<SigningKeyRow>(SQL.listKeys)).map(keyFromRow)),
    rotateSigningKey: (key) =>
      run(() =>
        transaction(async (db) => {
          await query(SQL.lockKeys, [], db);
          await query(SQL.retirePreviousKey, [], db);
          await query(SQL.demoteCurrentKey, [], db);
          await query(SQL.insertKey, keyParams({ ...key, status: 'current' }), db);
        }),
      ),
    ensureSigningKey: (key) =>
      run(() =>
        transaction(async (db) => {
          // Under the lock, each statement sees what the previous holder committed.
          await query(SQL.lockKeys, [], db);
          const current = await first<SigningKeyRow>(SQL.getCurrentKey, [], db);
          if (current) return keyFromRow(current);
          const created: SigningKeyRecord = { ...key, status: 'current' };
          await query(SQL.insertKey, keyParams(created), db);
          return created;
        }),
      ),

    sweepExpired: (now) =>
      run(() =>
        transaction(async (db) => {
          let total = 0;
          for (const sql of SQL.sweep) total += await changes(sql, [now], db);
          return total;
        }),
      ),
  };
}

function mapOptional<R, T>(row: R | undefined, map: (row: R) => T): T | undefined {
  return row === undefined ? undefined : map(row);
}
