/**
 * Every statement of the SQL stores, written once for both dialects (dialect.ts renders them).
 * Single use lives in the SQL itself: a conditional `UPDATE … RETURNING` or `DELETE … RETURNING`
 * that the database re-checks against the latest row when two requests meet, never a read
 * followed by a write. Orderings are byte order ({binary}), like the memory store's.
 */
import { REVOCATION_MARGIN, SPENT_KEY_CHARS } from '../internal.js';
import type { Statement } from './dialect.js';
import {
  AUDIT_EVENTS,
  AUTHORIZATION_CODES,
  CLIENTS,
  DEVICE_AUTHORIZATIONS,
  CONSENTS,
  GRANTS,
  INTERACTIONS,
  RATE_LIMITS,
  REFRESH_TOKENS,
  SESSIONS,
  SIGNING_KEYS,
  UPSTREAM_SESSIONS,
  USER_IDENTITIES,
  USERS,
  type Table,
} from './schema.js';
import { CLIENT_CHANNEL, type Dialect } from './dialect.js';

const int = (name: string): string => `CAST(:${name} AS BIGINT)`;

/**
 * A shared token bucket's whole step (rate-buckets.ts, `takeFromBucket`) in one UPSERT: a new
 * bucket starts full; an existing one is refilled for the time passed (at most from empty to
 * full, never backwards), then gives as many whole tokens as it holds, up to :want. Replicas
 * asking at once queue on the row and each sees the level the previous one left.
 */
const takeRateTokens = (d: Dialect): string => {
  const elapsed = `${d.least}(${d.greatest}(${int('now')} - rate_limits.updated_at, 0), ${int('fill_ms')})`;
  const refilled = `${d.least}(${int('capacity')}, rate_limits.level + ${elapsed} * ${int('rate')})`;
  const granted = `${d.least}(${int('want')}, ${refilled} / 1000000000)`;
  return `${insert(RATE_LIMITS).text as string}
    ON CONFLICT (bucket_key) DO UPDATE SET
      granted = ${granted},
      level = ${refilled} - ${granted} * 1000000000,
      updated_at = ${d.greatest}(rate_limits.updated_at, ${int('now')}),
      expires_at = excluded.expires_at
    RETURNING granted, level`;
};

const stmt = (name: string, text: Statement['text']): Statement => ({ name, text });

/** Deletes at most :batch rows of `table` matching `condition` (both dialects read it alike). */
const batched = (table: string, key: string, condition: string): Statement =>
  stmt(`sweep ${table}`, `DELETE FROM ${table} WHERE ${key} IN (SELECT ${key} FROM ${table} WHERE ${condition} LIMIT :batch)`);

/**
 * The sweep of a table walked in the order it is stored rather than found through an index on
 * expires_at: a slice of :batch keys after :after at a time. `slice` finds where the slice ends
 * (`last`) and how many keys it holds (`n`: fewer than :batch at the end of the table); `sweep`
 * deletes the rows in it that meet the condition. `first` is a key below every other.
 */
export interface WalkedSweep {
  first: (d: Dialect) => string | number;
  slice: Statement;
  sweep: Statement;
  /**
   * PostgreSQL (14 on, drivers that say `walkByPage`): the same walk in the heap's own order, a
   * range of pages at a time by ctid (a TID range scan). Along the key, a slice of random token
   * hashes lies on about as many heap pages as it has rows: 100 deletions dirtied 98 pages and,
   * after a checkpoint, wrote 98 full-page images (804 KB of WAL, which the next request to commit
   * has to flush); in page order, 140 deletions dirtied 2 pages and wrote 24 KB. `pages` is the
   * table's size in pages; `sweepPages` deletes the rows meeting the condition from tid :from up
   * to :until (`(page,0)`, the first row of a page).
   */
  pages: Statement;
  sweepPages: Statement;
}

/**
 * `key`: the primary key, in whose order the table is kept (SQLite's clustered tables), or, with
 * `inStorageOrder`, a key walked only where the dialect has no storage order (PostgreSQL, which
 * walks pages from version 14); SQLite walks its rowid, the order its rows are stored in.
 */
const walked = (table: string, key: string, condition = 'expires_at <= :now', { inStorageOrder = false } = {}): WalkedSweep => {
  const k = (d: Dialect): string => (inStorageOrder && d.storageOrder !== null ? d.storageOrder : key);
  return {
    first: (d) => (k(d) === key ? '' : 0),
    slice: stmt(
      `slice of ${table}`,
      (d) => `SELECT max(${k(d)}) AS last, count(*) AS n FROM (SELECT ${k(d)} FROM ${table} WHERE ${k(d)} > :after ORDER BY ${k(d)} LIMIT :batch) AS slice`,
    ),
    sweep: stmt(`sweep ${table} slice`, (d) => `DELETE FROM ${table} WHERE ${k(d)} > :after AND ${k(d)} <= :last AND ${condition}`),
    pages: stmt(`pages of ${table}`, `SELECT pg_relation_size('${table}') / current_setting('block_size')::int AS pages`),
    sweepPages: stmt(`sweep ${table} pages`, `DELETE FROM ${table} WHERE ctid >= CAST(:from AS tid) AND ctid < CAST(:until AS tid) AND ${condition}`),
  };
};

/** One step of a sweep: a table walked, or a batched statement run until it deletes less than a batch. */
export type SweepStep = { walk: WalkedSweep } | { drain: Statement };

/** `INSERT INTO table (a, b) VALUES (:a, :b)` for every column of the table. */
const insert = (table: Table): Statement => {
  const names = table.columns.map((c) => c.name);
  return stmt(`insert ${table.name}`, `INSERT INTO ${table.name} (${names.join(', ')}) VALUES (${names.map((n) => `:${n}`).join(', ')})`);
};

/** A grant's token that is unused, unexpired and whose grant stands, marked used — or nothing. */
const consume = (table: Table, key: string): Statement =>
  stmt(
    `consume ${table.name}`,
    `UPDATE ${table.name} SET consumed_at = :now
     WHERE ${key} = :${key} AND consumed_at IS NULL AND expires_at > :now
       AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = ${table.name}.grant_id AND g.revoked_at IS NOT NULL)
     RETURNING *`,
  );

/**
 * Records as revoked the grants matching `condition` (on `g`) that were revoked at :now and still
 * have an unexpired access token, each kept until the latest of their exp (access_expires_at).
 * Runs after the UPDATE that revoked them, in its transaction, holding their rows: a token being
 * issued meanwhile either raised access_expires_at before (and is covered) or finds the grant
 * revoked and is not issued.
 */
const recordRevokedGrants = (name: string, condition: string): Statement =>
  stmt(
    name,
    `INSERT INTO revocations (kind, id, revoked_at, expires_at)
     SELECT 'grant', g.id, :now, g.access_expires_at FROM grants g
     WHERE ${condition} AND g.revoked_at = :now AND g.access_expires_at > :now
     ON CONFLICT (kind, id) DO NOTHING`,
  );

/** Raises the grant's access_expires_at to :access_expires_at while it stands (never lowers it). */
const raiseAccessExpiry = (d: Dialect): string =>
  `UPDATE grants SET access_expires_at = ${d.greatest}(coalesce(access_expires_at, 0), ${int('access_expires_at')})`;

/**
 * A rotated token's row becomes its successor: one UPDATE that gives it the new hash, creation
 * and expiry (the grant, client and scope stay). Unlike a DELETE and an INSERT, it leaves the
 * row's grant_id as it was, so neither database checks the foreign key to grants again.
 */
const ROTATE_REFRESH = `UPDATE refresh_tokens SET token_hash = :next_hash, created_at = :next_created_at, expires_at = :next_expires_at`;

/**
 * What is kept of the token being rotated, read from its row before the UPDATE that rotates it,
 * with its successor's key. Two tokens whose hashes share the key's 132 bits would be a first:
 * the earlier record is kept.
 */
export const SPEND_REFRESH = 'INSERT INTO spent_refresh_tokens (token_key, grant_id, spent_at, expires_at, successor_key)';

/** Records an assertion's use unless a record of it is kept (one expired at :now counts as none); returns a row when it did. */
const USE_ASSERTION = `INSERT INTO used_assertions (assertion_key, expires_at) VALUES (:assertion_key, :expires_at)
     ON CONFLICT (assertion_key) DO UPDATE SET expires_at = excluded.expires_at WHERE used_assertions.expires_at <= :now
     RETURNING assertion_key`;

/** The key of a refresh token's spent record, from its hash (internal.ts `spentKey`). */
const keyOf = (hash: string): string => `substr(${hash}, 1, ${SPENT_KEY_CHARS})`;

/** Whether spent record `s`'s successor is still a live token of its grant: a retry may be answered with it. */
const SUCCESSOR_UNUSED = `EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.grant_id = s.grant_id AND ${keyOf('r.token_hash')} = s.successor_key)`;

/**
 * The successor a retry is answered with: the live, unexpired token whose full hash is one of
 * :successor_hashes (found by its primary key) and whose key the presented token's spent record
 * names, that token spent after :spent_after, with no live token under its hash (a live token
 * comes first). A record naming no successor matches nothing.
 */
const repeatable = (d: Dialect): string => `SELECT s.grant_id, r.token_hash AS successor_hash, r.scope
  FROM spent_refresh_tokens s JOIN refresh_tokens r ON r.grant_id = s.grant_id AND ${keyOf('r.token_hash')} = s.successor_key
  WHERE s.token_key = :token_key AND s.spent_at > :spent_after AND r.expires_at > :now
    AND r.token_hash IN (${d.textsOf(':successor_hashes')})
    AND NOT EXISTS (SELECT 1 FROM refresh_tokens WHERE token_hash = :token_hash)
  LIMIT 1`;

/**
 * A whole refresh in one statement (one round trip, one snapshot, one commit), where the dialect
 * writes inside WITH. The grant's row is updated first, which locks it: a revocation under way
 * is waited for and then seen (the UPDATE re-checks revoked_at on the newest row), one that comes
 * later waits for this commit and records the expiry raised here. Of two refreshes with the same
 * token, the second one's UPDATE finds the row under another hash once the first commits, and
 * spends nothing. The spent record reads the token's expiry in the statement's snapshot, before
 * the rotation. Returns the grant and the spent token's scope, or no row (the caller then asks why).
 */
const refreshInOneStatement = (d: Dialect): string | null => (!d.writesInWith ? null : `WITH ${refreshSteps(d, '')} ${REFRESHED}`);

/** The refresh's grant and its token's scope, from refreshSteps. */
const REFRESHED = 'SELECT g.*, rotated.scope AS token_scope FROM g JOIN rotated ON rotated.grant_id = g.id';

/** The steps of refreshInOneStatement after its WITH, the grant's update also under `condition` (a clause beginning with AND, or none). */
const refreshSteps = (d: Dialect, condition: string): string => `g AS (
    ${raiseAccessExpiry(d)}
    WHERE id = (SELECT grant_id FROM refresh_tokens WHERE token_hash = :token_hash AND client_id = :client_id AND expires_at > :now)
      AND revoked_at IS NULL AND (upstream_session_id IS NULL OR CAST(:upstream_checked AS BOOLEAN)) ${condition}
    RETURNING *
  ), rotated AS (
    ${ROTATE_REFRESH}
    FROM g WHERE refresh_tokens.token_hash = :token_hash AND refresh_tokens.grant_id = g.id AND refresh_tokens.expires_at > :now
    RETURNING refresh_tokens.grant_id, refresh_tokens.scope
  ), spent AS (
    ${SPEND_REFRESH}
    SELECT :token_key, grant_id, :now, (SELECT expires_at FROM refresh_tokens WHERE token_hash = :token_hash), :next_key FROM rotated
    ON CONFLICT (token_key) DO NOTHING
  )`;

/**
 * A refresh and the record of its assertion in one statement (one round trip, one commit), where
 * the dialect writes inside WITH: the record first (as useAssertion), and the refresh only when
 * it was taken. Its one row says whether it was (`assertion_taken`), with the refresh's columns,
 * null when nothing was spent (the caller then asks why).
 */
const refreshWithAssertionInOneStatement = (d: Dialect): string | null =>
  !d.writesInWith
    ? null
    : `
  WITH used AS (${USE_ASSERTION}), ${refreshSteps(d, 'AND EXISTS (SELECT 1 FROM used)')}
  SELECT EXISTS (SELECT 1 FROM used) AS assertion_taken, refreshed.* FROM (SELECT 1) AS one
    LEFT JOIN (${REFRESHED}) AS refreshed ON true`;

/**
 * A retry in one statement, as refreshInOneStatement: the successor read, then the grant's row
 * updated (which waits for a revocation, or a refresh of the family, under way, and re-checks
 * that the grant stands). No token is written: a retry racing the successor's own rotation is
 * answered as though it came first, with the successor the rotation then spends, itself retryable.
 */
const repeatInOneStatement = (d: Dialect): string | null =>
  !d.writesInWith
    ? null
    : `
  WITH s AS (${repeatable(d)}), g AS (
    ${raiseAccessExpiry(d)}
    WHERE id IN (SELECT grant_id FROM s) AND client_id = :client_id
      AND revoked_at IS NULL AND (upstream_session_id IS NULL OR CAST(:upstream_checked AS BOOLEAN))
    RETURNING *
  )
  SELECT g.*, s.scope AS token_scope, s.successor_hash FROM g JOIN s ON s.grant_id = g.id`;

const clientWrites = new WeakSet<Statement>();

/**
 * A write of the clients table. Where the dialect announces writes, it also announces itself on
 * CLIENT_CHANNEL, at COMMIT and only if it wrote a row, so that every process caching clients
 * drops what it holds (postgres-client-lookups.ts); it still counts the rows it wrote.
 */
const writesClients = (name: string, text: string): Statement => {
  const statement = stmt(name, (d) => (d.announced ? d.announced(text, CLIENT_CHANNEL) : text));
  clientWrites.add(statement);
  return statement;
};

/** Whether the statement writes the clients table. */
export const isClientWrite = (statement: Statement): boolean => clientWrites.has(statement);

/** Revokes every standing grant matching `condition` at :now. */
const revokeGrantsWhere = (name: string, condition: string): Statement =>
  stmt(name, `UPDATE grants SET revoked_at = :now WHERE ${condition} AND revoked_at IS NULL`);

const USER_BY_NAME = 'user_id IN (SELECT id FROM users WHERE username = :username)';

export const S = {
  insertClient: writesClients('insert clients', insert(CLIENTS).text as string),
  // A client ID metadata document fetched again replaces what it said before; the row's age stays.
  upsertClient: writesClients(
    'upsertClient',
    `${insert(CLIENTS).text as string} ON CONFLICT (client_id) DO UPDATE SET ${CLIENTS.columns
      .filter((c) => c.name !== 'client_id' && c.name !== 'created_at' && c.name !== 'last_used_at')
      .map((c) => `${c.name} = excluded.${c.name}`)
      .join(', ')}`,
  ),
  getClient: stmt('getClient', 'SELECT * FROM clients WHERE client_id = :client_id'),
  listClients: stmt('listClients', 'SELECT * FROM clients ORDER BY created_at, client_id{binary}'),
  deleteClient: writesClients('deleteClient', 'DELETE FROM clients WHERE client_id = :client_id'),
  // Before a client or a user goes, its grants are revoked and recorded: the cascade removes the
  // grants, not the access tokens already in clients' hands.
  revokeGrantsOfClient: revokeGrantsWhere('revokeGrantsOfClient', 'client_id = :client_id'),
  recordGrantsOfClient: recordRevokedGrants('recordGrantsOfClient', 'g.client_id = :client_id'),
  revokeGrantsOfUser: revokeGrantsWhere('revokeGrantsOfUser', USER_BY_NAME),
  recordGrantsOfUser: recordRevokedGrants('recordGrantsOfUser', `g.${USER_BY_NAME}`),
  touchClient: writesClients(
    'touchClient',
    'UPDATE clients SET last_used_at = :now WHERE client_id = :client_id AND (last_used_at IS NULL OR last_used_at <= CAST(:now AS BIGINT) - :granularity)',
  ),
  sweepUnusedClients: writesClients(
    'sweep clients',
    batched('clients', 'client_id', `registered_by = 'dynamic' AND coalesce(last_used_at, created_at) < :before`).text as string,
  ),

  // The admin console's pages: in key order after :after, narrowed by a lowercase LIKE pattern.
  listClientsPage: stmt(
    'listClientsPage',
    `SELECT * FROM clients WHERE client_id{binary} > :after
       AND (CAST(:search AS TEXT) IS NULL OR lower(client_id) LIKE :search ESCAPE '!' OR lower(coalesce(client_name, '')) LIKE :search ESCAPE '!')
     ORDER BY client_id{binary} LIMIT :limit`,
  ),

  insertUser: insert(USERS),
  listUsersPage: stmt(
    'listUsersPage',
    `SELECT * FROM users WHERE username{binary} > :after AND (CAST(:search AS TEXT) IS NULL OR lower(username) LIKE :search ESCAPE '!')
     ORDER BY username{binary} LIMIT :limit`,
  ),
  setUserAdmin: stmt('setUserAdmin', 'UPDATE users SET admin = :admin WHERE username = :username'),
  touchUserSignIn: stmt('touchUserSignIn', 'UPDATE users SET last_sign_in_at = :now WHERE id = :user_id'),
  getUserById: stmt('getUserById', 'SELECT * FROM users WHERE id = :id'),
  getUserByUsername: stmt('getUserByUsername', 'SELECT * FROM users WHERE username = :username'),
  listUsers: stmt('listUsers', 'SELECT * FROM users ORDER BY username{binary}'),
  deleteUser: stmt('deleteUser', 'DELETE FROM users WHERE username = :username'),
  setUserPassword: stmt('setUserPassword', 'UPDATE users SET password_hash = :password_hash WHERE username = :username RETURNING id'),
  deleteSessionsOfUser: stmt('deleteSessionsOfUser', 'DELETE FROM sessions WHERE user_id = :user_id'),
  deleteInteractionsOfUser: stmt('deleteInteractionsOfUser', 'DELETE FROM interactions WHERE user_id = :user_id'),
  insertIdentity: insert(USER_IDENTITIES),
  getUserByIdentity: stmt(
    'getUserByIdentity',
    'SELECT u.* FROM users u JOIN user_identities i ON i.user_id = u.id WHERE i.provider = :provider AND i.issuer = :issuer AND i.subject = :subject',
  ),
  listIdentities: stmt(
    'listIdentities',
    'SELECT * FROM user_identities WHERE (CAST(:user_id AS TEXT) IS NULL OR user_id = :user_id) ORDER BY user_id{binary}, provider{binary}, issuer{binary}, subject{binary}',
  ),

  insertInteraction: insert(INTERACTIONS),
  getInteraction: stmt('getInteraction', 'SELECT * FROM interactions WHERE id = :id AND expires_at > :now'),
  setInteractionUser: stmt('setInteractionUser', 'UPDATE interactions SET user_id = :user_id WHERE id = :id'),
  setInteractionUpstream: stmt('setInteractionUpstream', 'UPDATE interactions SET upstream = :upstream WHERE id = :id'),
  consumeInteraction: stmt('consumeInteraction', 'DELETE FROM interactions WHERE id = :id AND expires_at > :now RETURNING *'),

  insertSession: insert(SESSIONS),
  getSession: stmt('getSession', 'SELECT * FROM sessions WHERE id_hash = :id_hash AND expires_at > :now'),
  deleteSession: stmt('deleteSession', 'DELETE FROM sessions WHERE id_hash = :id_hash'),

  insertUpstreamSession: insert(UPSTREAM_SESSIONS),
  getUpstreamSession: stmt('getUpstreamSession', 'SELECT * FROM upstream_sessions WHERE id = :id'),
  updateUpstreamTokens: stmt('updateUpstreamTokens', 'UPDATE upstream_sessions SET sealed_tokens = :sealed_tokens WHERE id = :id'),

  getConsent: stmt('getConsent', 'SELECT * FROM consents WHERE user_id = :user_id AND client_id = :client_id AND resource = :resource'),
  // One statement, so concurrent widenings of the same consent both land: the conflicting insert
  // locks the row and merges with its latest version.
  upsertConsent: stmt(
    'upsertConsent',
    (d) => `${insert(CONSENTS).text as string}
      ON CONFLICT (user_id, client_id, resource) DO UPDATE SET
        scope = ${d.mergeJsonArrays('consents.scope', 'excluded.scope')},
        updated_at = excluded.updated_at`,
  ),
  listConsents: stmt(
    'listConsents',
    `SELECT * FROM consents
     WHERE (CAST(:user_id AS TEXT) IS NULL OR user_id = :user_id) AND (CAST(:client_id AS TEXT) IS NULL OR client_id = :client_id)
     ORDER BY user_id{binary}, client_id{binary}, resource{binary}`,
  ),
  deleteConsents: stmt('deleteConsents', 'DELETE FROM consents WHERE user_id = :user_id AND client_id = :client_id'),
  revokeGrantsOf: revokeGrantsWhere('revokeGrantsOf', 'user_id = :user_id AND client_id = :client_id'),
  recordGrantsOf: recordRevokedGrants('recordGrantsOf', 'g.user_id = :user_id AND g.client_id = :client_id'),

  insertGrant: insert(GRANTS),
  getGrant: stmt('getGrant', 'SELECT * FROM grants WHERE id = :id'),
  revokeGrant: revokeGrantsWhere('revokeGrant', 'id = :id'),
  recordGrant: recordRevokedGrants('recordGrant', 'g.id = :id'),

  insertCode: insert(AUTHORIZATION_CODES),
  getCode: stmt('getCode', 'SELECT * FROM authorization_codes WHERE code_hash = :code_hash'),
  consumeCode: consume(AUTHORIZATION_CODES, 'code_hash'),

  insertRefresh: insert(REFRESH_TOKENS),
  getRefresh: stmt('getRefresh', 'SELECT * FROM refresh_tokens WHERE token_hash = :token_hash'),
  // A refresh as a program, where the dialect cannot write inside WITH, in a transaction whose
  // writes are serialised (SQLite's IMMEDIATE): the grant first, as in refreshInOneStatement.
  raiseAccessExpiryOfRefresh: stmt(
    'raiseAccessExpiryOfRefresh',
    (d) => `${raiseAccessExpiry(d)}
     WHERE id = (SELECT grant_id FROM refresh_tokens WHERE token_hash = :token_hash AND client_id = :client_id AND expires_at > :now)
       AND revoked_at IS NULL AND (upstream_session_id IS NULL OR :upstream_checked)
     RETURNING *`,
  ),
  spendRefresh: stmt(
    'spendRefresh',
    `${SPEND_REFRESH} SELECT :token_key, grant_id, :now, expires_at, :next_key FROM refresh_tokens WHERE token_hash = :token_hash ON CONFLICT (token_key) DO NOTHING`,
  ),
  rotateRefresh: stmt('rotateRefresh', `${ROTATE_REFRESH} WHERE token_hash = :token_hash RETURNING scope`),
  refreshInOneStatement: stmt('refreshInOneStatement', refreshInOneStatement),
  refreshWithAssertionInOneStatement: stmt('refreshWithAssertionInOneStatement', refreshWithAssertionInOneStatement),
  // A retry as a program, in such a transaction: the successor, then the grant raised while it
  // stands (a refusal writes nothing).
  getRepeatable: stmt('getRepeatable', repeatable),
  raiseAccessExpiryOfRepeat: stmt(
    'raiseAccessExpiryOfRepeat',
    (d) => `${raiseAccessExpiry(d)}
     WHERE id = :grant_id AND client_id = :client_id AND revoked_at IS NULL AND (upstream_session_id IS NULL OR :upstream_checked)
     RETURNING *`,
  ),
  repeatInOneStatement: stmt('repeatInOneStatement', repeatInOneStatement),
  // A code's tokens: the grant's expiry raised, its row held (a revocation under way is waited
  // for and then seen; one that comes later sees the raised expiry).
  raiseAccessExpiry: stmt('raiseAccessExpiry', (d) => `${raiseAccessExpiry(d)} WHERE id = :grant_id RETURNING revoked_at`),
  // A token issued for a grant revoked meanwhile (a code replayed at the same moment): its
  // grant's revocation is recorded, or lengthened, to cover it.
  recordLateAccess: stmt(
    'recordLateAccess',
    `INSERT INTO revocations (kind, id, revoked_at, expires_at) VALUES ('grant', :grant_id, :revoked_at, :expires_at)
     ON CONFLICT (kind, id) DO UPDATE SET expires_at =
       CASE WHEN excluded.expires_at > revocations.expires_at THEN excluded.expires_at ELSE revocations.expires_at END`,
  ),
  getSpent: stmt(
    'getSpent',
    `SELECT s.grant_id, g.client_id, s.spent_at, s.expires_at, ${SUCCESSOR_UNUSED} AS successor_unused
     FROM spent_refresh_tokens s JOIN grants g ON g.id = s.grant_id WHERE s.token_key = :token_key`,
  ),

  recordAccess: stmt(
    'recordAccess',
    `INSERT INTO revocations (kind, id, revoked_at, expires_at) VALUES ('token', :jti, :now, :expires_at) ON CONFLICT (kind, id) DO NOTHING`,
  ),
  isAccessRevoked: stmt('isAccessRevoked', `SELECT 1 AS revoked FROM revocations WHERE kind = 'token' AND id = :jti`),

  // Inserted, or taken over from a record that has expired (not swept yet); a live record is left
  // as it is and no row comes back: the assertion was used before.
  useAssertion: stmt('useAssertion', USE_ASSERTION),

  insertDevice: insert(DEVICE_AUTHORIZATIONS),
  findPendingDevice: stmt(
    'findPendingDevice',
    `SELECT * FROM device_authorizations WHERE user_code_hash = :user_code_hash AND status = 'pending' AND expires_at > :now`,
  ),
  // A decision, taken once: the row is re-checked under its lock when two meet.
  decideDevice: stmt(
    'decideDevice',
    `UPDATE device_authorizations SET status = :status
     WHERE device_code_hash = :device_code_hash AND status = 'pending' AND expires_at > :now RETURNING expires_at`,
  ),
  // A poll reads the row locked (where writes are not serialised already), so the next poll sees this one.
  lockDevice: stmt('lockDevice', 'SELECT * FROM device_authorizations WHERE device_code_hash = :device_code_hash{forUpdate}'),
  recordDevicePoll: stmt(
    'recordDevicePoll',
    'UPDATE device_authorizations SET poll_interval = :poll_interval, last_polled_at = :last_polled_at WHERE device_code_hash = :device_code_hash',
  ),

  listRevocations: stmt(
    'listRevocations',
    'SELECT * FROM revocations WHERE revoked_at >= :since AND expires_at > :now ORDER BY revoked_at, kind{binary}, id{binary}',
  ),
  notifyRevocation: stmt('notifyRevocation', (d) => d.notifyRevocation),

  // The insertion order breaks ties between keys created in the same second: the later is newer.
  listKeys: stmt('listKeys', 'SELECT * FROM signing_keys ORDER BY created_at DESC, {order} DESC'),
  lockKeys: stmt('lockKeys', (d) => d.keyLock),
  getCurrentKey: stmt('getCurrentKey', `SELECT * FROM signing_keys WHERE status = 'current'`),
  insertKey: insert(SIGNING_KEYS),
  retirePreviousKey: stmt('retirePreviousKey', `UPDATE signing_keys SET status = 'retired' WHERE status = 'previous'`),
  demoteCurrentKey: stmt('demoteCurrentKey', `UPDATE signing_keys SET status = 'previous' WHERE status = 'current'`),

  takeRateTokens: stmt('takeRateTokens', takeRateTokens),

  insertAuditEvent: insert(AUDIT_EVENTS),
  // Newest first, a page before :before_seq; each filter given narrows it.
  listAuditEvents: stmt(
    'listAuditEvents',
    `SELECT {order} AS seq, * FROM audit_events
     WHERE {order} < :before_seq AND occurred_at >= :since
       AND (CAST(:event AS TEXT) IS NULL OR event = :event)
       AND (CAST(:outcome AS TEXT) IS NULL OR outcome = :outcome)
       AND (CAST(:user_id AS TEXT) IS NULL OR user_id = :user_id)
       AND (CAST(:client_id AS TEXT) IS NULL OR client_id = :client_id)
       AND (CAST(:address AS TEXT) IS NULL OR address = :address)
     ORDER BY {order} DESC LIMIT :limit`,
  ),
  sweepAuditEvents: batched('audit_events', '{order}', 'occurred_at < :before'),
  noSyncCommit: stmt('noSyncCommit', (d) => d.noSyncCommit),

  // Upkeep in batches of :batch rows, each its own short statement, so a sweep of millions of rows
  // never holds the database (or SQLite's event loop) for long. In this order: grants once their
  // codes and tokens are gone, upstream sign-ins once their grants are.
  sweep: [
    // Rotated at every refresh, so kept with no index on expires_at (schema version 10): walked.
    { walk: walked('refresh_tokens', 'token_hash') },
    { walk: walked('spent_refresh_tokens', 'token_key') },
    { drain: batched('authorization_codes', 'code_hash', 'expires_at <= :now') },
    { drain: batched('device_authorizations', 'device_code_hash', 'expires_at <= :now') },
    { drain: batched('sessions', 'id_hash', 'expires_at <= :now') },
    { drain: batched('interactions', 'id', 'expires_at <= :now') },
    { drain: batched('rate_limits', 'bucket_key', 'expires_at <= :now') },
    { drain: batched('used_assertions', 'assertion_key', 'expires_at <= :now') },
    {
      drain: stmt(
        'sweep revocations',
        `DELETE FROM revocations WHERE (kind, id) IN
           (SELECT kind, id FROM revocations WHERE expires_at <= CAST(:now AS BIGINT) - ${REVOCATION_MARGIN} LIMIT :batch)`,
      ),
    },
    // Grants whose codes and tokens are gone and whose access tokens expired. The 60 s margin
    // spares a grant created just now whose first code or token is about to be saved. Walked, not
    // found through created_at: most old grants still hold a live refresh token, and a batch that
    // looked for deletable ones among them read all of them in one statement, at every sweep
    // (docs/performance.md, "Upkeep").
    {
      walk: walked(
        'grants',
        'id',
        `created_at < CAST(:now AS BIGINT) - 60 AND coalesce(access_expires_at, 0) <= :now
           AND NOT EXISTS (SELECT 1 FROM authorization_codes c WHERE c.grant_id = grants.id)
           AND NOT EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.grant_id = grants.id)`,
        { inStorageOrder: true },
      ),
    },
    // An upstream sign-in past its lifetime, once no grant or browser session rests on it.
    {
      drain: batched(
        'upstream_sessions',
        'id',
        `expires_at <= :now
           AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.upstream_session_id = upstream_sessions.id)
           AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.upstream_session_id = upstream_sessions.id)`,
      ),
    },
  ] satisfies SweepStep[] as SweepStep[],
} as const;
