/**
 * The schema, described once: tables, columns (with the record field each maps to and how its
 * value is encoded), keys, references and indexes. Each dialect's DDL (dialect.ts) and the
 * row↔record mapping (mapping.ts) follow from it.
 *
 * Migrations are versions of this description: every table, column and index says `since` which
 * version it exists. Migration n creates the tables of version n, adds the columns and indexes of
 * version n to older tables, and is never changed once shipped (add a version instead).
 * Codes and tokens reference only their grant: the grant carries the client and the user, so
 * deleting a client or a user cascades through its grants to everything they issued.
 */

import { SPENT_KEY_CHARS } from '../internal.js';

/** How a value is kept: text; int (epoch seconds and counts); bool; json (arrays and objects). */
export type ColumnType = 'text' | 'int' | 'bool' | 'json';

export interface Column {
  name: string;
  /** Stored as this text where the record has null (for a NOT NULL column made before null was allowed). */
  nullAs?: string;
  /** The record's property (camelCase of `name` unless given). */
  field: string;
  type: ColumnType;
  nullable: boolean;
  /** Allowed values (a CHECK constraint). */
  oneOf?: readonly string[];
  unique?: boolean;
  references?: { table: string; column: string };
  since: number;
  /** The version whose migration drops the column (it is then listed in its table's `retired`). */
  until?: number;
}

export interface Index {
  name: string;
  columns: string[];
  unique?: boolean;
  /** A partial index's condition, in SQL both dialects read the same. */
  where?: string;
  since: number;
  /** The version whose migration drops the index. */
  until?: number;
}

export interface Table {
  name: string;
  columns: Column[];
  primaryKey: string[];
  indexes: Index[];
  /** Reads in insertion order (SQLite's rowid; an identity column in PostgreSQL). */
  insertionOrder?: boolean;
  /** Rows kept in primary-key order with no separate key index (SQLite's WITHOUT ROWID): for small rows with a text key. */
  clustered?: boolean;
  /** For a table made before it was clustered: the version whose migration rebuilds it so (SQLite; nothing on PostgreSQL). */
  clusteredSince?: number;
  /**
   * For a table whose primary key changed: the key it had, and the version whose migration gives it
   * `primaryKey` (a rebuild on SQLite, which cannot change a key in place; the constraint replaced on PostgreSQL).
   */
  formerPrimaryKey?: { columns: string[]; until: number };
  /** Columns the code no longer reads or writes, kept here so that migrations before `until` still make them. */
  retired?: Column[];
  /** Statements that move existing data when a migration reaches `since`: after its tables, columns and indexes, before its drops. */
  backfill?: { since: number; statements: string[] }[];
  since: number;
  /** The version whose migration drops the table (after every backfill of that version). */
  until?: number;
}

type ColumnOptions = Partial<Omit<Column, 'name' | 'type'>>;
const camel = (name: string): string => name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
const col = (name: string, type: ColumnType, options: ColumnOptions = {}): Column => ({
  name,
  type,
  field: options.field ?? camel(name),
  nullable: options.nullable ?? false,
  since: options.since ?? 1,
  ...(options.oneOf ? { oneOf: options.oneOf } : {}),
  ...(options.nullAs !== undefined ? { nullAs: options.nullAs } : {}),
  ...(options.unique ? { unique: true } : {}),
  ...(options.references ? { references: options.references } : {}),
});
const ref = (table: string, column: string) => ({ references: { table, column } });
const index = (name: string, columns: string[], options: Partial<Omit<Index, 'name' | 'columns'>> = {}): Index => ({ name, columns, since: 1, ...options });

export const CLIENTS: Table = {
  name: 'clients',
  since: 1,
  primaryKey: ['client_id'],
  columns: [
    col('client_id', 'text'),
    col('client_secret_hash', 'text', { nullable: true }),
    col('token_endpoint_auth_method', 'text'),
    col('redirect_uris', 'json'),
    col('grant_types', 'json'),
    col('response_types', 'json'),
    col('client_name', 'text', { nullable: true }),
    col('scope', 'text', { nullable: true }),
    col('metadata', 'json'),
    col('can_introspect', 'bool'),
    col('registered_by', 'text', { oneOf: ['dynamic', 'admin'] }),
    col('created_at', 'int'),
    // Version 4: when the client last came to /authorize or /token (at most one write a day), so
    // dynamically registered clients nobody uses can be swept.
    col('last_used_at', 'int', { nullable: true, since: 4 }),
  ],
  indexes: [],
};

export const USERS: Table = {
  name: 'users',
  since: 1,
  primaryKey: ['id'],
  // A user who signs in upstream has no password: '' in the column, null in the record.
  columns: [
    col('id', 'text'),
    col('username', 'text', { unique: true }),
    col('password_hash', 'text', { nullAs: '' }),
    col('created_at', 'int'),
    // Version 15: administrators (null is no), and the last sign-in the admin console shows.
    col('admin', 'bool', { nullable: true, since: 15 }),
    col('last_sign_in_at', 'int', { nullable: true, since: 15 }),
  ],
  indexes: [],
};

/** Version 3: the upstream sign-in behind a browser session and a grant (third-party authorization). */
export const UPSTREAM_SESSIONS: Table = {
  name: 'upstream_sessions',
  since: 3,
  primaryKey: ['id'],
  columns: [
    col('id', 'text', { since: 3 }),
    col('user_id', 'text', { since: 3, ...ref('users', 'id') }),
    col('provider', 'text', { since: 3 }),
    col('subject', 'text', { since: 3 }),
    // The provider's tokens, sealed (AES-256-GCM) with this row's id bound in.
    col('sealed_tokens', 'text', { since: 3 }),
    col('created_at', 'int', { since: 3 }),
    col('expires_at', 'int', { since: 3 }),
  ],
  indexes: [index('upstream_sessions_user_id', ['user_id'], { since: 3 }), index('upstream_sessions_expires_at', ['expires_at'], { since: 3 })],
};

/**
 * Version 3: who a local user is at an upstream provider (never the email). Version 11 keys it by
 * provider, issuer and subject: two providers may share an issuer name (a plain OAuth 2.0
 * provider's is the operator's choice), and one's subjects must never find the other's users.
 * Every row has had its provider since version 3, so the new key needs no data.
 */
export const USER_IDENTITIES: Table = {
  name: 'user_identities',
  since: 3,
  primaryKey: ['provider', 'issuer', 'subject'],
  formerPrimaryKey: { columns: ['issuer', 'subject'], until: 11 },
  columns: [
    col('issuer', 'text', { since: 3 }),
    col('subject', 'text', { since: 3 }),
    col('provider', 'text', { since: 3 }),
    col('user_id', 'text', { since: 3, ...ref('users', 'id') }),
    col('email', 'text', { since: 3, nullable: true }),
    col('name', 'text', { since: 3, nullable: true }),
    col('created_at', 'int', { since: 3 }),
  ],
  indexes: [index('user_identities_user_id', ['user_id'], { since: 3 })],
};

export const INTERACTIONS: Table = {
  name: 'interactions',
  since: 1,
  primaryKey: ['id'],
  columns: [
    col('id', 'text'),
    col('client_id', 'text', ref('clients', 'client_id')),
    col('request', 'json'),
    col('browser_binding_hash', 'text'),
    col('csrf_token', 'text'),
    col('user_id', 'text', { nullable: true, ...ref('users', 'id') }),
    col('created_at', 'int'),
    col('expires_at', 'int'),
    // The upstream provider chosen, and (sealed) what its callback must be checked against.
    col('upstream', 'json', { nullable: true, since: 3 }),
    // Version 14: the device authorization an interaction from the verification page decides.
    col('device', 'json', { nullable: true, since: 14 }),
  ],
  indexes: [index('interactions_client_id', ['client_id']), index('interactions_user_id', ['user_id']), index('interactions_expires_at', ['expires_at'])],
};

export const SESSIONS: Table = {
  name: 'sessions',
  since: 1,
  primaryKey: ['id_hash'],
  columns: [
    col('id_hash', 'text'),
    col('user_id', 'text', ref('users', 'id')),
    col('auth_time', 'int'),
    col('created_at', 'int'),
    col('expires_at', 'int'),
    col('upstream_session_id', 'text', { nullable: true, since: 3, ...ref('upstream_sessions', 'id') }),
  ],
  indexes: [
    index('sessions_user_id', ['user_id']),
    index('sessions_expires_at', ['expires_at']),
    index('sessions_upstream_session_id', ['upstream_session_id'], { since: 3 }),
  ],
};

export const CONSENTS: Table = {
  name: 'consents',
  since: 1,
  primaryKey: ['user_id', 'client_id', 'resource'],
  columns: [
    col('user_id', 'text', ref('users', 'id')),
    col('client_id', 'text', ref('clients', 'client_id')),
    col('resource', 'text'),
    col('scope', 'json'),
    col('created_at', 'int'),
    col('updated_at', 'int'),
  ],
  indexes: [index('consents_client_id', ['client_id'])],
};

export const GRANTS: Table = {
  name: 'grants',
  since: 1,
  primaryKey: ['id'],
  columns: [
    col('id', 'text'),
    col('client_id', 'text', ref('clients', 'client_id')),
    col('user_id', 'text', { nullable: true, ...ref('users', 'id') }),
    col('scope', 'json'),
    col('resource', 'text'),
    col('auth_time', 'int', { nullable: true }),
    col('created_at', 'int'),
    col('revoked_at', 'int', { nullable: true }),
    col('upstream_session_id', 'text', { nullable: true, since: 3, ...ref('upstream_sessions', 'id') }),
    // Version 8: the latest exp of the access tokens issued under the grant, which are no longer
    // stored one by one (access_tokens, dropped): a revocation is recorded until then. Not
    // indexed, so raising it at every refresh is a HOT update on PostgreSQL.
    col('access_expires_at', 'int', { nullable: true, since: 8 }),
  ],
  backfill: [
    {
      since: 8,
      statements: ['UPDATE grants SET access_expires_at = (SELECT max(a.expires_at) FROM access_tokens a WHERE a.grant_id = grants.id)'],
    },
  ],
  indexes: [
    index('grants_client_id', ['client_id']),
    index('grants_upstream_session_id', ['upstream_session_id'], { since: 3 }),
    index('grants_user_id_client_id', ['user_id', 'client_id']),
    // Until version 2 only the PostgreSQL schema had it. The sweep found grants through it until it
    // walked them (statements.ts); nothing reads it now, and dropping it is left to a version of its own.
    index('grants_created_at', ['created_at'], { since: 2 }),
  ],
};

const grantChild = (name: string, key: string, columns: Column[]): Table => ({
  name,
  since: 1,
  primaryKey: [key],
  columns: [col(key, 'text'), col('grant_id', 'text', ref('grants', 'id')), ...columns],
  indexes: [index(`${name}_grant_id`, ['grant_id']), index(`${name}_expires_at`, ['expires_at'])],
});

export const AUTHORIZATION_CODES = grantChild('authorization_codes', 'code_hash', [
  col('client_id', 'text'),
  col('user_id', 'text'),
  col('redirect_uri', 'text'),
  col('redirect_uri_provided', 'bool'),
  col('code_challenge', 'text'),
  col('scope', 'json'),
  col('resource', 'text'),
  col('auth_time', 'int'),
  col('created_at', 'int'),
  col('expires_at', 'int'),
  col('consumed_at', 'int', { nullable: true }),
  col('nonce', 'text', { nullable: true, since: 16 }),
]);

/** Refresh tokens not yet used. Once rotated, a token lives on as a spent record (below). */
export const REFRESH_TOKENS: Table = {
  ...grantChild('refresh_tokens', 'token_hash', [col('client_id', 'text'), col('scope', 'json'), col('created_at', 'int'), col('expires_at', 'int')]),
  // Version 9: kept in token_hash order, with no rowid tree beside the key's: a refresh, which
  // deletes one row and inserts another, writes one page fewer to the WAL (25.2 KiB against
  // 29.5 KiB per refresh) and finds its row in one tree instead of two.
  clustered: true,
  clusteredSince: 9,
  // Version 10: no index on expires_at. A refresh deletes a row and inserts one, and each index
  // is two more B-tree edits and a page more in the WAL per commit; the sweep walks the primary
  // key instead, a slice at a time (statements.ts).
  indexes: [index('refresh_tokens_grant_id', ['grant_id']), index('refresh_tokens_expires_at', ['expires_at'], { until: 10 })],
  // Until version 7 a rotated token stayed here in full, marked used; version 7 moves it to spent_refresh_tokens.
  retired: [col('consumed_at', 'int', { nullable: true, until: 7 })],
};

/**
 * Version 7: what is kept of a rotated refresh token until it would have expired, so that a second
 * use is recognised and revokes its grant: a prefix of its hash, its grant, when it was spent,
 * when to forget it: far less than the full row (sizes in docs/performance.md).
 * No foreign key: a grant's deletion leaves its spent records to expire on their own (they name
 * nothing but a grant that no longer exists, which reuse detection then ignores), so deleting a
 * grant needs no index on grant_id here.
 */
export const SPENT_REFRESH_TOKENS: Table = {
  name: 'spent_refresh_tokens',
  since: 7,
  primaryKey: ['token_key'],
  clustered: true,
  columns: [
    col('token_key', 'text', { since: 7 }),
    col('grant_id', 'text', { since: 7 }),
    col('spent_at', 'int', { since: 7 }),
    col('expires_at', 'int', { since: 7 }),
    // Version 12: the key (hash prefix) of the token the rotation issued, so that a retry of the
    // refresh is answered with it while it is unused. Null for records made before, and for a
    // successor replaced by the retry of earlier versions: neither is ever retried. 22 bytes more
    // a record on SQLite, 24 on PostgreSQL (100k rotations, after VACUUM).
    col('successor_key', 'text', { since: 12, nullable: true }),
  ],
  // Version 10: no index on expires_at, as for refresh_tokens: one page fewer written per refresh.
  indexes: [index('spent_refresh_tokens_expires_at', ['expires_at'], { since: 7, until: 10 })],
  backfill: [
    {
      since: 7,
      statements: [
        `INSERT INTO spent_refresh_tokens (token_key, grant_id, spent_at, expires_at)
         SELECT substr(token_hash, 1, ${SPENT_KEY_CHARS}), grant_id, consumed_at, expires_at FROM refresh_tokens WHERE consumed_at IS NOT NULL
         ON CONFLICT (token_key) DO NOTHING`,
        'DELETE FROM refresh_tokens WHERE consumed_at IS NOT NULL',
      ],
    },
  ],
};

/**
 * Until version 8, a row per issued access token. Version 8 drops it: a token's JWT names its
 * grant, the grant keeps the latest expiry (grants.access_expires_at, backfilled from here), and a
 * revoked token has its revocation record (kept since version 6).
 */
export const ACCESS_TOKENS: Table = {
  ...grantChild('access_tokens', 'jti', [col('client_id', 'text'), col('expires_at', 'int'), col('revoked_at', 'int', { nullable: true })]),
  until: 8,
};

/**
 * Version 6: the revocation feed. Not a child of grants (no reference): it must outlive the grant
 * it names, which the sweep or a deleted client may remove while its access tokens still work.
 * `revoked_at` is the pollers' cursor; `expires_at` (the latest exp of the tokens it affects) says
 * when it can go.
 */
export const REVOCATIONS: Table = {
  name: 'revocations',
  since: 6,
  primaryKey: ['kind', 'id'],
  columns: [
    col('kind', 'text', { since: 6, oneOf: ['grant', 'token'] }),
    col('id', 'text', { since: 6 }),
    col('revoked_at', 'int', { since: 6 }),
    col('expires_at', 'int', { since: 6 }),
  ],
  indexes: [index('revocations_revoked_at', ['revoked_at'], { since: 6 }), index('revocations_expires_at', ['expires_at'], { since: 6 })],
};

export const SIGNING_KEYS: Table = {
  name: 'signing_keys',
  since: 1,
  primaryKey: ['kid'],
  insertionOrder: true,
  columns: [
    col('kid', 'text'),
    col('alg', 'text'),
    col('private_jwk', 'text'),
    col('public_jwk', 'text'),
    col('status', 'text', { oneOf: ['current', 'previous', 'retired'] }),
    col('created_at', 'int'),
  ],
  // At most one current and one previous key, whatever the code does (or however many replicas).
  indexes: [
    index('signing_keys_one_current', ['status'], { unique: true, where: "status = 'current'" }),
    index('signing_keys_one_previous', ['status'], { unique: true, where: "status = 'previous'" }),
  ],
};

/**
 * Version 5: the rate limiters' token buckets, shared by replicas (rate-buckets.ts has the
 * arithmetic). One row per client address and limit; a row whose bucket is full again is swept.
 */
export const RATE_LIMITS: Table = {
  name: 'rate_limits',
  since: 5,
  primaryKey: ['bucket_key'],
  columns: [
    col('bucket_key', 'text', { since: 5 }),
    // Billionths of a token, and the millisecond it was computed at.
    col('level', 'int', { since: 5 }),
    col('updated_at', 'int', { since: 5 }),
    // Tokens the last request was granted: what the UPSERT that computes it returns.
    col('granted', 'int', { since: 5 }),
    col('expires_at', 'int', { since: 5 }),
  ],
  indexes: [index('rate_limits_expires_at', ['expires_at'], { since: 5 })],
};

/**
 * Version 13: the JWT assertions already used (client assertions, authorization grants), each by
 * a hash of its issuer and `jti`, kept until the assertion expires: a second use is refused on
 * every replica. The sweep removes what expired.
 */
export const USED_ASSERTIONS: Table = {
  name: 'used_assertions',
  since: 13,
  primaryKey: ['assertion_key'],
  columns: [col('assertion_key', 'text', { since: 13 }), col('expires_at', 'int', { since: 13 })],
  indexes: [index('used_assertions_expires_at', ['expires_at'], { since: 13 })],
};

/**
 * Version 14: device authorization requests (RFC 8628), by the hash of the device code; the user
 * code's hash is unique too (the verification page finds them by it). Approval creates the grant
 * and a code under the device code's hash, in authorization_codes; what is left here expires.
 */
export const DEVICE_AUTHORIZATIONS: Table = {
  name: 'device_authorizations',
  since: 14,
  primaryKey: ['device_code_hash'],
  columns: [
    col('device_code_hash', 'text', { since: 14 }),
    col('user_code_hash', 'text', { since: 14, unique: true }),
    col('client_id', 'text', { since: 14, ...ref('clients', 'client_id') }),
    col('scope', 'json', { since: 14 }),
    col('resource', 'text', { since: 14 }),
    // Not `interval`, a PostgreSQL keyword.
    col('poll_interval', 'int', { since: 14, field: 'interval' }),
    col('last_polled_at', 'int', { since: 14, nullable: true }),
    col('status', 'text', { since: 14, oneOf: ['pending', 'approved', 'denied'] }),
    col('created_at', 'int', { since: 14 }),
    col('expires_at', 'int', { since: 14 }),
  ],
  indexes: [index('device_authorizations_client_id', ['client_id'], { since: 14 }), index('device_authorizations_expires_at', ['expires_at'], { since: 14 })],
};

/**
 * Version 15: the audit events kept for the admin console, in the order they were recorded. They
 * reference nothing: an event outlives the client or user it names, until its retention ends.
 */
export const AUDIT_EVENTS: Table = {
  name: 'audit_events',
  since: 15,
  primaryKey: [],
  insertionOrder: true,
  columns: [
    // Epoch milliseconds, unlike the other tables' seconds: events within a second keep their order.
    col('occurred_at', 'int', { since: 15 }),
    col('event', 'text', { since: 15 }),
    col('outcome', 'text', { since: 15, oneOf: ['success', 'failure'] }),
    col('reason', 'text', { since: 15, nullable: true }),
    col('client_id', 'text', { since: 15, nullable: true }),
    col('user_id', 'text', { since: 15, nullable: true }),
    col('grant_id', 'text', { since: 15, nullable: true }),
    col('address', 'text', { since: 15, nullable: true }),
    col('provider', 'text', { since: 15, nullable: true }),
    col('details', 'json', { since: 15, nullable: true }),
  ],
  indexes: [index('audit_events_occurred_at', ['occurred_at'], { since: 15 })],
};

/** Every table, parents before children (the order they are created in). */
export const TABLES: readonly Table[] = [
  CLIENTS,
  USERS,
  UPSTREAM_SESSIONS,
  USER_IDENTITIES,
  INTERACTIONS,
  SESSIONS,
  CONSENTS,
  GRANTS,
  AUTHORIZATION_CODES,
  REFRESH_TOKENS,
  SPENT_REFRESH_TOKENS,
  ACCESS_TOKENS,
  SIGNING_KEYS,
  RATE_LIMITS,
  REVOCATIONS,
  USED_ASSERTIONS,
  DEVICE_AUTHORIZATIONS,
  AUDIT_EVENTS,
];

/** The tables of the current version. */
export const CURRENT_TABLES: readonly Table[] = TABLES.filter((t) => t.until === undefined);

/** The newest schema version this code knows. */
export const SCHEMA_VERSION = Math.max(
  ...TABLES.flatMap((t) => [
    t.since,
    t.until ?? t.since,
    ...t.columns.map((c) => c.since),
    ...t.indexes.map((i) => i.until ?? i.since),
    t.clusteredSince ?? t.since,
    t.formerPrimaryKey?.until ?? t.since,
    ...(t.retired ?? []).map((c) => c.until ?? c.since),
    ...(t.backfill ?? []).map((b) => b.since),
  ]),
);
