/**
 * The SQLite store (better-sqlite3). One connection per process; better-sqlite3 is synchronous,
 * so every method runs to completion in one JS turn and single use only has to be atomic
 * against other processes sharing the file — which the conditional UPDATE … RETURNING
 * statements and IMMEDIATE transactions guarantee.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { sqliteMigrations } from './migrations/sqlite.js';
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

// ---------------------------------------------------------------------------------------------
// Rows (snake_case, as stored) and their mapping to records

interface ClientRow {
  client_id: string;
  client_secret_hash: string | null;
  token_endpoint_auth_method: string;
  redirect_uris: string;
  grant_types: string;
  response_types: string;
  client_name: string | null;
  scope: string | null;
  metadata: string;
  can_introspect: number;
  registered_by: string;
  created_at: number;
}

interface UserRow {
  id: string;
  username: string;
  password_hash: string;
  created_at: number;
}

interface InteractionRow {
  id: string;
  client_id: string;
  request: string;
  browser_binding_hash: string;
  csrf_token: string;
  user_id: string | null;
  created_at: number;
  expires_at: number;
}

interface SessionRow {
  id_hash: string;
  user_id: string;
  auth_time: number;
  created_at: number;
  expires_at: number;
}

interface ConsentRow {
  user_id: string;
  client_id: string;
  resource: string;
  scope: string;
  created_at: number;
  updated_at: number;
}

interface GrantRow {
  id: string;
  client_id: string;
  user_id: string | null;
  scope: string;
  resource: string;
  auth_time: number | null;
  created_at: number;
  revoked_at: number | null;
}

interface CodeRow {
  code_hash: string;
  grant_id: string;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  redirect_uri_provided: number;
  code_challenge: string;
  scope: string;
  resource: string;
  auth_time: number;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
}

interface RefreshTokenRow {
  token_hash: string;
  grant_id: string;
  client_id: string;
  scope: string;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
}

interface AccessTokenRow {
  jti: string;
  grant_id: string;
  client_id: string;
  expires_at: number;
  revoked_at: number | null;
}

interface SigningKeyRow {
  kid: string;
  alg: string;
  private_jwk: string;
  public_jwk: string;
  status: string;
  created_at: number;
}

const json = (value: unknown): string => JSON.stringify(value);
const parse = <T>(text: string): T => JSON.parse(text) as T;
const bool = (value: boolean): number => (value ? 1 : 0);

const clientToRow = (c: ClientRecord): ClientRow => ({
  client_id: c.clientId,
  client_secret_hash: c.clientSecretHash,
  token_endpoint_auth_method: c.tokenEndpointAuthMethod,
  redirect_uris: json(c.redirectUris),
  grant_types: json(c.grantTypes),
  response_types: json(c.responseTypes),
  client_name: c.clientName,
  scope: c.scope,
  metadata: json(c.metadata),
  can_introspect: bool(c.canIntrospect),
  registered_by: c.registeredBy,
  created_at: c.createdAt,
});

const clientFromRow = (r: ClientRow): ClientRecord => ({
  clientId: r.client_id,
  clientSecretHash: r.client_secret_hash,
  tokenEndpointAuthMethod: r.token_endpoint_auth_method as ClientRecord['tokenEndpointAuthMethod'],
  redirectUris: parse(r.redirect_uris),
  grantTypes: parse(r.grant_types),
  responseTypes: parse(r.response_types),
  clientName: r.client_name,
  scope: r.scope,
  metadata: parse(r.metadata),
  canIntrospect: r.can_introspect === 1,
  registeredBy: r.registered_by as ClientRecord['registeredBy'],
  createdAt: r.created_at,
});

const userToRow = (u: UserRecord): UserRow => ({
  id: u.id,
  username: u.username,
  password_hash: u.passwordHash,
  created_at: u.createdAt,
});

const userFromRow = (r: UserRow): UserRecord => ({
  id: r.id,
  username: r.username,
  passwordHash: r.password_hash,
  createdAt: r.created_at,
});

const interactionToRow = (i: InteractionRecord): InteractionRow => ({
  id: i.id,
  client_id: i.clientId,
  request: json(i.request),
  browser_binding_hash: i.browserBindingHash,
  csrf_token: i.csrfToken,
  user_id: i.userId,
  created_at: i.createdAt,
  expires_at: i.expiresAt,
});

const interactionFromRow = (r: InteractionRow): InteractionRecord => ({
  id: r.id,
  clientId: r.client_id,
  request: parse(r.request),
  browserBindingHash: r.browser_binding_hash,
  csrfToken: r.csrf_token,
  userId: r.user_id,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

const sessionToRow = (s: SessionRecord): SessionRow => ({
  id_hash: s.idHash,
  user_id: s.userId,
  auth_time: s.authTime,
  created_at: s.createdAt,
  expires_at: s.expiresAt,
});

const sessionFromRow = (r: SessionRow): SessionRecord => ({
  idHash: r.id_hash,
  userId: r.user_id,
  authTime: r.auth_time,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

const consentToRow = (c: ConsentRecord): ConsentRow => ({
  user_id: c.userId,
  client_id: c.clientId,
  resource: c.resource,
  scope: json(c.scope),
  created_at: c.createdAt,
  updated_at: c.updatedAt,
});

const consentFromRow = (r: ConsentRow): ConsentRecord => ({
  userId: r.user_id,
  clientId: r.client_id,
  resource: r.resource,
  scope: parse(r.scope),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const grantToRow = (g: GrantRecord): GrantRow => ({
  id: g.id,
  client_id: g.clientId,
  user_id: g.userId,
  scope: json(g.scope),
  resource: g.resource,
  auth_time: g.authTime,
  created_at: g.createdAt,
  revoked_at: g.revokedAt,
});

const grantFromRow = (r: GrantRow): GrantRecord => ({
  id: r.id,
  clientId: r.client_id,
  userId: r.user_id,
  scope: parse(r.scope),
  resource: r.resource,
  authTime: r.auth_time,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
});

const codeToRow = (c: AuthorizationCodeRecord): CodeRow => ({
  code_hash: c.codeHash,
  grant_id: c.grantId,
  client_id: c.clientId,
  user_id: c.userId,
  redirect_uri: c.redirectUri,
  redirect_uri_provided: bool(c.redirectUriProvided),
  code_challenge: c.codeChallenge,
  scope: json(c.scope),
  resource: c.resource,
  auth_time: c.authTime,
  created_at: c.createdAt,
  expires_at: c.expiresAt,
  consumed_at: c.consumedAt,
});

const codeFromRow = (r: CodeRow): AuthorizationCodeRecord => ({
  codeHash: r.code_hash,
  grantId: r.grant_id,
  clientId: r.client_id,
  userId: r.user_id,
  redirectUri: r.redirect_uri,
  redirectUriProvided: r.redirect_uri_provided === 1,
  codeChallenge: r.code_challenge,
  scope: parse(r.scope),
  resource: r.resource,
  authTime: r.auth_time,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  consumedAt: r.consumed_at,
});

const refreshToRow = (t: RefreshTokenRecord): RefreshTokenRow => ({
  token_hash: t.tokenHash,
  grant_id: t.grantId,
  client_id: t.clientId,
  scope: json(t.scope),
  created_at: t.createdAt,
  expires_at: t.expiresAt,
  consumed_at: t.consumedAt,
});

const refreshFromRow = (r: RefreshTokenRow): RefreshTokenRecord => ({
  tokenHash: r.token_hash,
  grantId: r.grant_id,
  clientId: r.client_id,
  scope: parse(r.scope),
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  consumedAt: r.consumed_at,
});

const accessToRow = (t: AccessTokenRecord): AccessTokenRow => ({
  jti: t.jti,
  grant_id: t.grantId,
  client_id: t.clientId,
  expires_at: t.expiresAt,
  revoked_at: t.revokedAt,
});

const accessFromRow = (r: AccessTokenRow): AccessTokenRecord => ({
  jti: r.jti,
  grantId: r.grant_id,
  clientId: r.client_id,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
});

const keyToRow = (k: SigningKeyRecord): SigningKeyRow => ({
  kid: k.kid,
  alg: k.alg,
  private_jwk: k.privateJwk,
  public_jwk: k.publicJwk,
  status: k.status,
  created_at: k.createdAt,
});

const keyFromRow = (r: SigningKeyRow): SigningKeyRecord => ({
  kid: r.kid,
  alg: r.alg,
  privateJwk: r.private_jwk,
  publicJwk: r.public_jwk,
  status: r.status as SigningKeyRecord['status'],
  createdAt: r.created_at,
});

/** `INSERT INTO table (a, b) VALUES (@a, @b)` for the columns of a row object. */
function insertSql(table: string, columns: readonly string[]): string {
  return `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`;
}

// ---------------------------------------------------------------------------------------------
// Errors

/** Primary result codes after which the database cannot serve requests (until an operator acts). */
const UNAVAILABLE_CODES = new Set([
  'SQLITE_BUSY',
  'SQLITE_CANTOPEN',
  'SQLITE_IOERR',
  'SQLITE_FULL',
  'SQLITE_READONLY',
  'SQLITE_CORRUPT',
  'SQLITE_NOTADB',
]);

function translateError(err: unknown, db: Database.Database): unknown {
  if (err instanceof Database.SqliteError) {
    // Extended codes (SQLITE_IOERR_WRITE, SQLITE_BUSY_SNAPSHOT, …) map by their primary code.
    const primary = /^SQLITE_[A-Z]+/.exec(err.code)?.[0] ?? err.code;
    if (UNAVAILABLE_CODES.has(primary)) return new StoreUnavailableError(`SQLite store unavailable: ${err.message}`, { cause: err });
    if (err.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || err.code === 'SQLITE_CONSTRAINT_UNIQUE') {
      return new StoreConflictError(err.message);
    }
    return err;
  }
  // Use after close(), e.g. a request still in flight while the server shuts down.
  if (!db.open) return new StoreUnavailableError('SQLite store is closed', { cause: err });
  return err;
}

// ---------------------------------------------------------------------------------------------
// Opening

function migrate(db: Database.Database): void {
  db.transaction(() => {
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > sqliteMigrations.length) {
      throw new Error(`database schema version ${version} is newer than this code knows (${sqliteMigrations.length})`);
    }
    for (const sql of sqliteMigrations.slice(version)) db.exec(sql);
    db.pragma(`user_version = ${sqliteMigrations.length}`);
  }).immediate();
}

function openDatabase(file: string): Database.Database {
  if (file !== ':memory:') {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    // Create the file 0600 before SQLite does (it would use 0644), so it is never readable by
    // others, not even briefly; chmod too in case it already existed. SQLite gives the -wal and
    // -shm files the same mode as the database file.
    fs.closeSync(fs.openSync(file, 'a', 0o600));
    fs.chmodSync(file, 0o600);
  }
  const db = new Database(file);
  try {
    // busy_timeout first, so that switching to WAL waits for other processes instead of failing.
    db.pragma('busy_timeout = 5000');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    migrate(db);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// The store

export function openSqliteStore(options: { path: string }): Store {
  let db: Database.Database;
  try {
    db = openDatabase(options.path);
  } catch (err) {
    // Whatever stops us opening (permissions, a full disk, a corrupt or too new file), the store is unusable.
    throw new StoreUnavailableError(`cannot open SQLite store at ${options.path}: ${String(err)}`, { cause: err });
  }

  const s = {
    insertClient: db.prepare<ClientRow>(
      insertSql('clients', [
        'client_id', 'client_secret_hash', 'token_endpoint_auth_method', 'redirect_uris', 'grant_types', 'response_types',
        'client_name', 'scope', 'metadata', 'can_introspect', 'registered_by', 'created_at',
      ]),
    ),
    getClient: db.prepare<[string], ClientRow>('SELECT * FROM clients WHERE client_id = ?'),
    listClients: db.prepare<[], ClientRow>('SELECT * FROM clients ORDER BY created_at, client_id'),
    deleteClient: db.prepare<[string]>('DELETE FROM clients WHERE client_id = ?'),

    insertUser: db.prepare<UserRow>(insertSql('users', ['id', 'username', 'password_hash', 'created_at'])),
    getUserById: db.prepare<[string], UserRow>('SELECT * FROM users WHERE id = ?'),
    getUserByUsername: db.prepare<[string], UserRow>('SELECT * FROM users WHERE username = ?'),
    listUsers: db.prepare<[], UserRow>('SELECT * FROM users ORDER BY username'),
    deleteUser: db.prepare<[string]>('DELETE FROM users WHERE username = ?'),

    insertInteraction: db.prepare<InteractionRow>(
      insertSql('interactions', ['id', 'client_id', 'request', 'browser_binding_hash', 'csrf_token', 'user_id', 'created_at', 'expires_at']),
    ),
    getInteraction: db.prepare<[string, number], InteractionRow>('SELECT * FROM interactions WHERE id = ? AND expires_at > ?'),
    setInteractionUser: db.prepare<[string, string]>('UPDATE interactions SET user_id = ? WHERE id = ?'),
    consumeInteraction: db.prepare<[string, number], InteractionRow>('DELETE FROM interactions WHERE id = ? AND expires_at > ? RETURNING *'),

    insertSession: db.prepare<SessionRow>(insertSql('sessions', ['id_hash', 'user_id', 'auth_time', 'created_at', 'expires_at'])),
    getSession: db.prepare<[string, number], SessionRow>('SELECT * FROM sessions WHERE id_hash = ? AND expires_at > ?'),
    deleteSession: db.prepare<[string]>('DELETE FROM sessions WHERE id_hash = ?'),

    getConsent: db.prepare<[string, string, string], ConsentRow>('SELECT * FROM consents WHERE user_id = ? AND client_id = ? AND resource = ?'),
    upsertConsent: db.prepare<ConsentRow>(
      `${insertSql('consents', ['user_id', 'client_id', 'resource', 'scope', 'created_at', 'updated_at'])}
       ON CONFLICT (user_id, client_id, resource) DO UPDATE SET scope = excluded.scope, updated_at = excluded.updated_at`,
    ),
    listConsents: db.prepare<{ user_id: string | null; client_id: string | null }, ConsentRow>(
      `SELECT * FROM consents
       WHERE (@user_id IS NULL OR user_id = @user_id) AND (@client_id IS NULL OR client_id = @client_id)
       ORDER BY user_id, client_id, resource`,
    ),
    deleteConsents: db.prepare<[string, string]>('DELETE FROM consents WHERE user_id = ? AND client_id = ?'),
    revokeGrantsOf: db.prepare<[number, string, string]>(
      'UPDATE grants SET revoked_at = ? WHERE user_id = ? AND client_id = ? AND revoked_at IS NULL',
    ),

    insertGrant: db.prepare<GrantRow>(
      insertSql('grants', ['id', 'client_id', 'user_id', 'scope', 'resource', 'auth_time', 'created_at', 'revoked_at']),
    ),
    getGrant: db.prepare<[string], GrantRow>('SELECT * FROM grants WHERE id = ?'),
    revokeGrant: db.prepare<[number, string]>('UPDATE grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),

    insertCode: db.prepare<CodeRow>(
      insertSql('authorization_codes', [
        'code_hash', 'grant_id', 'client_id', 'user_id', 'redirect_uri', 'redirect_uri_provided', 'code_challenge',
        'scope', 'resource', 'auth_time', 'created_at', 'expires_at', 'consumed_at',
      ]),
    ),
    getCode: db.prepare<[string], CodeRow>('SELECT * FROM authorization_codes WHERE code_hash = ?'),
    consumeCode: db.prepare<[number, string, number], CodeRow>(
      `UPDATE authorization_codes SET consumed_at = ?
       WHERE code_hash = ? AND consumed_at IS NULL AND expires_at > ?
         AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = authorization_codes.grant_id AND g.revoked_at IS NOT NULL)
       RETURNING *`,
    ),

    insertRefresh: db.prepare<RefreshTokenRow>(
      insertSql('refresh_tokens', ['token_hash', 'grant_id', 'client_id', 'scope', 'created_at', 'expires_at', 'consumed_at']),
    ),
    getRefresh: db.prepare<[string], RefreshTokenRow>('SELECT * FROM refresh_tokens WHERE token_hash = ?'),
    // The grant check sits in the same statement, so a revoked grant's token is left unconsumed.
    consumeRefresh: db.prepare<[number, string, number], RefreshTokenRow>(
      `UPDATE refresh_tokens SET consumed_at = ?
       WHERE token_hash = ? AND consumed_at IS NULL AND expires_at > ?
         AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = refresh_tokens.grant_id AND g.revoked_at IS NOT NULL)
       RETURNING *`,
    ),

    insertAccess: db.prepare<AccessTokenRow>(insertSql('access_tokens', ['jti', 'grant_id', 'client_id', 'expires_at', 'revoked_at'])),
    getAccess: db.prepare<[string], AccessTokenRow>('SELECT * FROM access_tokens WHERE jti = ?'),
    revokeAccess: db.prepare<[number, string]>('UPDATE access_tokens SET revoked_at = ? WHERE jti = ? AND revoked_at IS NULL'),

    // rowid breaks ties between keys created in the same second: the later insert is newer.
    listKeys: db.prepare<[], SigningKeyRow>('SELECT * FROM signing_keys ORDER BY created_at DESC, rowid DESC'),
    getCurrentKey: db.prepare<[], SigningKeyRow>(`SELECT * FROM signing_keys WHERE status = 'current'`),
    insertKey: db.prepare<SigningKeyRow>(insertSql('signing_keys', ['kid', 'alg', 'private_jwk', 'public_jwk', 'status', 'created_at'])),
    retirePreviousKey: db.prepare<[]>(`UPDATE signing_keys SET status = 'retired' WHERE status = 'previous'`),
    demoteCurrentKey: db.prepare<[]>(`UPDATE signing_keys SET status = 'previous' WHERE status = 'current'`),

    sweep: [
      'DELETE FROM authorization_codes WHERE expires_at <= @now',
      'DELETE FROM refresh_tokens WHERE expires_at <= @now',
      'DELETE FROM access_tokens WHERE expires_at <= @now',
      'DELETE FROM sessions WHERE expires_at <= @now',
      'DELETE FROM interactions WHERE expires_at <= @now',
      // Grants last, once their codes and tokens are gone. The 60 s margin spares a grant created
      // just now whose first code or token is about to be saved.
      `DELETE FROM grants WHERE created_at < @now - 60
         AND NOT EXISTS (SELECT 1 FROM authorization_codes c WHERE c.grant_id = grants.id)
         AND NOT EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.grant_id = grants.id)
         AND NOT EXISTS (SELECT 1 FROM access_tokens a WHERE a.grant_id = grants.id)`,
    ].map((sql) => db.prepare<{ now: number }>(sql)),
  };

  const rotateRefresh = db.transaction(
    (oldHash: string, next: RefreshTokenRecord, now: number): Awaited<ReturnType<Store['rotateRefreshToken']>> => {
      const used = s.consumeRefresh.get(now, oldHash, now);
      if (used) {
        s.insertRefresh.run(refreshToRow(next));
        return { status: 'ok', record: refreshFromRow(used) };
      }
      const row = s.getRefresh.get(oldHash);
      if (!row) return { status: 'missing' };
      const record = refreshFromRow(row);
      if (row.consumed_at !== null) return { status: 'replayed', record };
      if (row.expires_at <= now) return { status: 'expired', record };
      return { status: 'revoked', record };
    },
  );

  const saveConsent = db.transaction((consent: ConsentRecord): void => {
    const existing = s.getConsent.get(consent.userId, consent.clientId, consent.resource);
    const scope = new Set(consent.scope);
    if (existing) for (const value of parse<string[]>(existing.scope)) scope.add(value);
    s.upsertConsent.run(consentToRow({ ...consent, scope: [...scope].sort() }));
  });

  const revokeConsents = db.transaction((userId: string, clientId: string, now: number): number => {
    const { changes } = s.deleteConsents.run(userId, clientId);
    s.revokeGrantsOf.run(now, userId, clientId);
    return changes;
  });

  const rotateKey = db.transaction((key: SigningKeyRecord): void => {
    s.retirePreviousKey.run();
    s.demoteCurrentKey.run();
    s.insertKey.run(keyToRow({ ...key, status: 'current' }));
  });

  const ensureKey = db.transaction((key: SigningKeyRecord): SigningKeyRecord => {
    const current = s.getCurrentKey.get();
    if (current) return keyFromRow(current);
    const created: SigningKeyRecord = { ...key, status: 'current' };
    s.insertKey.run(keyToRow(created));
    return created;
  });

  const sweep = db.transaction((now: number): number => s.sweep.reduce((total, stmt) => total + stmt.run({ now }).changes, 0));

  /** Runs a synchronous database call as the async Store method, translating its errors. */
  const run = <T>(fn: () => T): Promise<T> => {
    try {
      return Promise.resolve(fn());
    } catch (err) {
      return Promise.reject(translateError(err, db));
    }
  };

  return {
    close: () => run(() => void db.close()),

    createClient: (client) => run(() => void s.insertClient.run(clientToRow(client))),
    getClient: (clientId) => run(() => mapOptional(s.getClient.get(clientId), clientFromRow)),
    listClients: () => run(() => s.listClients.all().map(clientFromRow)),
    deleteClient: (clientId) => run(() => s.deleteClient.run(clientId).changes > 0),

    createUser: (user) => run(() => void s.insertUser.run(userToRow(user))),
    getUserById: (id) => run(() => mapOptional(s.getUserById.get(id), userFromRow)),
    getUserByUsername: (username) => run(() => mapOptional(s.getUserByUsername.get(username), userFromRow)),
    listUsers: () => run(() => s.listUsers.all().map(userFromRow)),
    deleteUser: (username) => run(() => s.deleteUser.run(username).changes > 0),

    createInteraction: (interaction) => run(() => void s.insertInteraction.run(interactionToRow(interaction))),
    getInteraction: (id, now) => run(() => mapOptional(s.getInteraction.get(id, now), interactionFromRow)),
    setInteractionUser: (id, userId) => run(() => void s.setInteractionUser.run(userId, id)),
    consumeInteraction: (id, now) => run(() => mapOptional(s.consumeInteraction.get(id, now), interactionFromRow)),

    createSession: (session) => run(() => void s.insertSession.run(sessionToRow(session))),
    getSession: (idHash, now) => run(() => mapOptional(s.getSession.get(idHash, now), sessionFromRow)),
    deleteSession: (idHash) => run(() => void s.deleteSession.run(idHash)),

    getConsent: (userId, clientId, resource) => run(() => mapOptional(s.getConsent.get(userId, clientId, resource), consentFromRow)),
    saveConsent: (consent) => run(() => saveConsent.immediate(consent)),
    listConsents: (filter) =>
      run(() => s.listConsents.all({ user_id: filter.userId ?? null, client_id: filter.clientId ?? null }).map(consentFromRow)),
    revokeConsents: (userId, clientId, now) => run(() => revokeConsents.immediate(userId, clientId, now)),

    createGrant: (grant) => run(() => void s.insertGrant.run(grantToRow(grant))),
    getGrant: (id) => run(() => mapOptional(s.getGrant.get(id), grantFromRow)),
    revokeGrant: (id, now) => run(() => void s.revokeGrant.run(now, id)),

    saveAuthorizationCode: (code) => run(() => void s.insertCode.run(codeToRow(code))),
    consumeAuthorizationCode: (codeHash, now) =>
      run((): Awaited<ReturnType<Store['consumeAuthorizationCode']>> => {
        const used = s.consumeCode.get(now, codeHash, now);
        if (used) return { status: 'ok', record: codeFromRow(used) };
        // Only explains the failure; a used code never becomes usable again, so no race matters here.
        const row = s.getCode.get(codeHash);
        if (!row) return { status: 'missing' };
        const record = codeFromRow(row);
        if (row.consumed_at !== null) return { status: 'replayed', record };
        if (row.expires_at <= now) return { status: 'expired', record };
        return { status: 'revoked', record };
      }),

    saveRefreshToken: (token) => run(() => void s.insertRefresh.run(refreshToRow(token))),
    getRefreshToken: (tokenHash) => run(() => mapOptional(s.getRefresh.get(tokenHash), refreshFromRow)),
    rotateRefreshToken: (oldHash, next, now) => run(() => rotateRefresh.immediate(oldHash, next, now)),

    saveAccessToken: (token) => run(() => void s.insertAccess.run(accessToRow(token))),
    getAccessToken: (jti) => run(() => mapOptional(s.getAccess.get(jti), accessFromRow)),
    revokeAccessToken: (jti, now) => run(() => void s.revokeAccess.run(now, jti)),

    listSigningKeys: () => run(() => s.listKeys.all().map(keyFromRow)),
    rotateSigningKey: (key) => run(() => rotateKey.immediate(key)),
    ensureSigningKey: (key) => run(() => ensureKey.immediate(key)),

    sweepExpired: (now) => run(() => sweep.immediate(now)),
  };
}

function mapOptional<R, T>(row: R | undefined, map: (row: R) => T): T | undefined {
  return row === undefined ? undefined : map(row);
}
