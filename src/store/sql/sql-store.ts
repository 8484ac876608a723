/**
 * The Store over SQL, written once for SQLite and PostgreSQL. Each method is a program: a
 * generator that yields the statements to run and receives their results. A driver runs it:
 * SQLite's synchronously, inside a better-sqlite3 IMMEDIATE transaction where one is needed (so
 * single use is atomic across processes sharing the file); PostgreSQL's asynchronously, on one
 * pooled connection between BEGIN and COMMIT. The same logic, the same statements, two drivers;
 * where the databases differ, the dialect says how as data (dialect.ts), and nothing here asks
 * which database it runs on. PostgreSQL's fast paths (a turn's refreshes in one statement, its
 * client lookups in one query, clients kept in memory) decorate this store in postgres.ts.
 */
import type {
  AuditEventRecord,
  AuthorizationCodeRecord,
  ClientRecord,
  ConsentRecord,
  DeviceAuthorizationRecord,
  GrantRecord,
  InteractionRecord,
  PageQuery,
  RefreshRequest,
  RefreshResult,
  RefreshTokenRecord,
  RepeatRefreshResult,
  RevocationRecord,
  SessionRecord,
  SpentRefreshTokenRecord,
  SigningKeyRecord,
  FullStore,
  UpstreamSessionRecord,
  UserIdentityRecord,
  UserRecord,
} from '../store.js';
import { CLIENT_USE_GRANULARITY, devicePoll, explainConsumeFailure, explainRefreshFailure, spentKey, systemNow } from '../internal.js';
import { bucketParams, bucketResult, takeFromBucket } from '../rate-buckets.js';
import type { Dialect, Statement } from './dialect.js';
import { mapper } from './mapping.js';
import {
  AUDIT_EVENTS,
  AUTHORIZATION_CODES,
  CLIENTS,
  CONSENTS,
  DEVICE_AUTHORIZATIONS,
  GRANTS,
  INTERACTIONS,
  REFRESH_TOKENS,
  REVOCATIONS,
  SESSIONS,
  SIGNING_KEYS,
  UPSTREAM_SESSIONS,
  USER_IDENTITIES,
  USERS,
} from './schema.js';
import { S, type WalkedSweep } from './statements.js';

export type Row = Record<string, unknown>;
export type Step = { statement: Statement; params: Row; mode: 'get' | 'all' | 'run' };
/** What a driver answers a step with: the row (or undefined), the rows, or the number of rows changed. */
export type Program<T> = Generator<Step, T, unknown>;

function* get(statement: Statement, params: Row = {}): Program<Row | undefined> {
  return (yield { statement, params, mode: 'get' }) as Row | undefined;
}
function* all(statement: Statement, params: Row = {}): Program<Row[]> {
  return (yield { statement, params, mode: 'all' }) as Row[];
}
function* exec(statement: Statement, params: Row = {}): Program<number> {
  return (yield { statement, params, mode: 'run' }) as number;
}

/** Runs a statement that records revocations, and announces them (on commit) when it recorded any. */
function* record(statement: Statement, params: Row): Program<void> {
  if ((yield* exec(statement, params)) > 0) yield* exec(S.notifyRevocation);
}

/** Rows one sweep statement deletes at most: a few milliseconds of work on SQLite. */
export const SWEEP_BATCH = 500;
/** Fewest rows a batch shrinks to, so a sweep always makes progress. */
const SWEEP_MIN_BATCH = 16;

/**
 * How a sweep shares the server: batches of at most `batchRows` deletions grow and shrink to take
 * about `sliceMs` each (SQLite, whose batches run on the event loop), and after each one the sweep
 * rests `restFactor` times as long as the batch took. PostgreSQL's batches run in the database,
 * not on the event loop, and cost a round trip whatever their size: time does not size them (an
 * infinite `sliceMs`), they stay at `batchRows`, with the same rest.
 */
export interface SweepPace {
  sliceMs: number;
  restFactor: number;
  /** Most rows one batch deletes. Default SWEEP_BATCH. */
  batchRows?: number;
}
export const DEFAULT_SWEEP_PACE: SweepPace = { sliceMs: Infinity, restFactor: 4 };

/** The next batch's size: halved when the last one took longer than a slice, doubled (up to `most`) when it took under half. */
function resized(size: number, took: number, pace: SweepPace, most: number): number {
  if (took > pace.sliceMs) return Math.max(SWEEP_MIN_BATCH, Math.floor(size / 2));
  if (took < pace.sliceMs / 2) return Math.min(most, size * 2);
  return size;
}

/**
 * The loop every sweep step shares: runs `slice` until it says it was the last (or `signal`
 * aborts, checked before each), resting `restFactor` times as long as each slice took after every
 * slice but the last. `resize` is told how long each slice took and what it deleted, to size the
 * next. Resolves with the rows deleted.
 */
async function inPacedSlices(
  slice: () => Promise<{ deleted: number; last: boolean }>,
  resize: (took: number, deleted: number) => void,
  pause: (ms: number) => Promise<void>,
  pace: SweepPace,
  signal: AbortSignal | undefined,
): Promise<number> {
  let total = 0;
  while (!signal?.aborted) {
    const started = performance.now();
    const { deleted, last } = await slice();
    const took = performance.now() - started;
    total += deleted;
    if (last) break;
    resize(took, deleted);
    await pause(took * pace.restFactor);
  }
  return total;
}

/**
 * Deletes in batches until a batch comes back short. Each batch is its own short statement,
 * committed alone, sized and followed by a rest as `pace` says.
 */
export function drainInSlices(
  deleteBatch: (size: number) => Promise<number>,
  pause: (ms: number) => Promise<void>,
  pace: SweepPace = DEFAULT_SWEEP_PACE,
  signal?: AbortSignal,
): Promise<number> {
  const most = pace.batchRows ?? SWEEP_BATCH;
  let size = most;
  return inPacedSlices(
    async () => {
      const deleted = await deleteBatch(size);
      return { deleted, last: deleted < size };
    },
    (took) => (size = resized(size, took, pace, most)),
    pause,
    pace,
    signal,
  );
}

/** How many times a batch's rows one slice of a walked sweep may cover (slices of mostly live rows cost less than a batch of deletions). */
const WALK_WIDENING = 4;
/** Most keys one slice of a walked sweep covers, at the default batch. */
export const SWEEP_WALK_BATCH = WALK_WIDENING * SWEEP_BATCH;

/**
 * Walks a table's keys a slice at a time from the first (the first after `first`), deleting the
 * expired rows of each slice, until a slice reaches the end. Slices are sized and followed by a
 * rest as in drainInSlices.
 */
export function walkInSlices<Key extends string | number = string>(
  sweepSlice: (after: Key, size: number) => Promise<{ deleted: number; last: Key | null; keys: number }>,
  pause: (ms: number) => Promise<void>,
  pace: SweepPace = DEFAULT_SWEEP_PACE,
  signal?: AbortSignal,
  first = '' as Key,
): Promise<number> {
  const batch = pace.batchRows ?? SWEEP_BATCH;
  let size = batch;
  let after = first;
  return inPacedSlices(
    async () => {
      const { deleted, last, keys } = await sweepSlice(after, size);
      if (last !== null) after = last;
      return { deleted, last: last === null || keys < size };
    },
    // Wider only over mostly live rows: a slice deletes about a batch of rows at most, as a batch
    // does (on PostgreSQL time does not size slices, and larger ones showed in the refresh p99).
    (took, deleted) => (size = resized(size, took, pace, deleted * 2 < size ? batch * WALK_WIDENING : size)),
    pause,
    pace,
    signal,
  );
}

/** Most pages one slice of a page walk covers (128 KiB): over live grants, each looked up in two tables, wider ranges held PostgreSQL for tens of milliseconds. */
export const SWEEP_MOST_PAGES = 16;

/**
 * Walks a table's pages from the first to the last it had when the walk began (rows added since
 * are not yet expired), deleting the expired rows of a range of pages at a time. A range starts
 * at one page and is sized to delete about a batch of rows: narrowed in proportion when it
 * deleted more, doubled (up to SWEEP_MOST_PAGES) when it deleted under half. A rest follows each
 * range as in drainInSlices.
 */
export async function walkPages(
  sweepPages: (from: number, until: number) => Promise<number>,
  pages: number,
  pause: (ms: number) => Promise<void>,
  pace: SweepPace = DEFAULT_SWEEP_PACE,
  signal?: AbortSignal,
): Promise<number> {
  if (pages <= 0) return 0;
  const batch = pace.batchRows ?? SWEEP_BATCH;
  let span = 1;
  let from = 0;
  return inPacedSlices(
    async () => {
      const until = Math.min(pages, from + span);
      const deleted = await sweepPages(from, until);
      from = until;
      return { deleted, last: from >= pages };
    },
    (_took, deleted) => {
      if (deleted > batch) span = Math.max(1, Math.floor((span * batch) / deleted));
      else if (deleted * 2 < batch) span = Math.min(SWEEP_MOST_PAGES, span * 2);
    },
    pause,
    pace,
    signal,
  );
}

/** A timer's rest (at least one turn of the event loop, so waiting I/O goes first). */
const rest = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.round(ms))));

export interface Driver {
  /** Runs a program statement by statement. */
  run<T>(program: Program<T>): Promise<T>;
  /** Runs a program in one transaction: all of it, or (on any error) none of it. */
  transaction<T>(program: Program<T>): Promise<T>;
  /** As `transaction`, but never batched with requests' programs (an upkeep batch, whose commit need not wait for the disk). Default: `transaction`. */
  transactionAlone?<T>(program: Program<T>): Promise<T>;
  close(): Promise<void>;
  /** After a sweep: give freed space back, where the database needs telling (SQLite), pausing between slices. */
  reclaim?(pause: (ms: number) => Promise<void>, signal?: AbortSignal): Promise<void>;
  /** How sweeps share the server with requests (DEFAULT_SWEEP_PACE unless given). */
  sweepPace?: SweepPace;
  /** Walk tables swept without an index on expires_at in page order (WalkedSweep's `pages`, PostgreSQL 14 on), not along their key. */
  walkByPage?: boolean;
  /** Runs a long upkeep job, with whatever the database needs meanwhile to keep requests fast (SQLite: checkpoints off the event loop). */
  upkeep?<T>(job: () => Promise<T>): Promise<T>;
  /**
   * A program of one write, atomic on its own, run with the transactional programs of its turn
   * and committed with them where a commit of its own costs more than that (SQLite writes whole
   * pages at every commit); `run` where absent (a transaction around one statement would cost
   * PostgreSQL two round trips more).
   */
  writeTogether?<T>(program: Program<T>): Promise<T>;
}

/** How a refresh goes into refreshInOneStatement (and into a batch of them), and how a row it returns is answered. */
export interface RefreshRows {
  params(request: RefreshRequest): Row;
  /** The grant row returned with the spent token's scope, as the endpoint needs them. */
  refreshed(row: Row): RefreshResult;
}

export function refreshRows(d: Dialect): RefreshRows {
  const grant = mapper<GrantRecord>(d, GRANTS);
  return {
    params: (request) => ({
      token_hash: request.tokenHash,
      token_key: spentKey(request.tokenHash),
      client_id: request.clientId,
      now: request.now,
      access_expires_at: request.accessExpiresAt,
      upstream_checked: d.encode.bool(request.upstreamChecked),
      next_hash: request.next.tokenHash,
      next_key: spentKey(request.next.tokenHash),
      next_created_at: request.next.createdAt,
      next_expires_at: request.next.expiresAt,
    }),
    refreshed: (row) => ({ status: 'ok', grant: grant.record(row), scope: d.decode.json(row.token_scope) as string[] }),
  };
}

export function sqlStore(d: Dialect, driver: Driver, properties: { sharedByReplicas?: boolean } = {}): FullStore {
  const client = mapper<ClientRecord>(d, CLIENTS);
  const user = mapper<UserRecord>(d, USERS);
  const interaction = mapper<InteractionRecord>(d, INTERACTIONS);
  const session = mapper<SessionRecord>(d, SESSIONS);
  const consent = mapper<ConsentRecord>(d, CONSENTS);
  const grant = mapper<GrantRecord>(d, GRANTS);
  const code = mapper<AuthorizationCodeRecord>(d, AUTHORIZATION_CODES);
  const refresh = mapper<RefreshTokenRecord>(d, REFRESH_TOKENS);
  const device = mapper<DeviceAuthorizationRecord>(d, DEVICE_AUTHORIZATIONS);
  const key = mapper<SigningKeyRecord>(d, SIGNING_KEYS);
  const identity = mapper<UserIdentityRecord>(d, USER_IDENTITIES);
  const upstreamSession = mapper<UpstreamSessionRecord>(d, UPSTREAM_SESSIONS);
  const revocation = mapper<RevocationRecord>(d, REVOCATIONS);
  const auditEvent = mapper<AuditEventRecord>(d, AUDIT_EVENTS);
  const auditEventRecord = (row: Row): AuditEventRecord => ({ seq: Number(row.seq), ...auditEvent.record(row) });

  const spent = (row: Row): SpentRefreshTokenRecord => ({
    grantId: row.grant_id as string,
    clientId: row.client_id as string,
    spentAt: row.spent_at as number,
    expiresAt: row.expires_at as number,
    successorUnused: d.decode.bool(row.successor_unused) as boolean,
  });
  const optional = <T>(row: Row | undefined, map: (row: Row) => T): T | undefined => (row === undefined ? undefined : map(row));
  const run = <T>(program: Program<T>): Promise<T> => driver.run(program);
  const inTransaction = <T>(program: Program<T>): Promise<T> => driver.transaction(program);
  const writeTogether = <T>(program: Program<T>): Promise<T> => (driver.writeTogether ? driver.writeTogether(program) : driver.run(program));

  function* consumeCode(codeHash: string, now: number) {
    const used = yield* get(S.consumeCode, { now, code_hash: codeHash });
    if (used) return { status: 'ok' as const, record: code.record(used) };
    // Only explains the failure; a used code never becomes usable again, so no race matters here.
    return explainConsumeFailure(optional(yield* get(S.getCode, { code_hash: codeHash }), code.record), now);
  }

  function* issueUnder(grantId: string, accessExpiresAt: number, refreshToken?: RefreshTokenRecord): Program<void> {
    const revokedAt = (yield* get(S.raiseAccessExpiry, { grant_id: grantId, access_expires_at: accessExpiresAt }))?.revoked_at ?? null;
    if (revokedAt !== null) yield* record(S.recordLateAccess, { grant_id: grantId, revoked_at: revokedAt, expires_at: accessExpiresAt });
    // A missing grant fails here (its foreign key), rolling back with it.
    if (refreshToken) yield* exec(S.insertRefresh, refresh.params(refreshToken));
  }

  /** Why a refresh spent nothing, read after the fact: the loser of a race reads after the winner committed. */
  function* explainRefresh(
    request: Pick<RefreshRequest, 'tokenHash' | 'clientId' | 'now' | 'upstreamChecked'>,
  ): Program<Exclude<RefreshResult, { status: 'ok' }>> {
    const live = optional(yield* get(S.getRefresh, { token_hash: request.tokenHash }), refresh.record);
    if (live) return explainRefreshFailure(request, live, optional(yield* get(S.getGrant, { id: live.grantId }), grant.record), undefined);
    return explainRefreshFailure(request, undefined, undefined, optional(yield* get(S.getSpent, { token_key: spentKey(request.tokenHash) }), spent));
  }
  const { params: refreshParams, refreshed } = refreshRows(d);

  /** A refresh as one statement (a database that writes in WITH), explained when it spent nothing. */
  function* refreshInOneStatement(request: RefreshRequest): Program<RefreshResult> {
    const row = yield* get(S.refreshInOneStatement, refreshParams(request));
    return row ? refreshed(row) : yield* explainRefresh(request);
  }

  /** A refresh as statements, for a transaction. */
  function* rotateRefresh(request: RefreshRequest): Program<RefreshResult> {
    const params = refreshParams(request);
    // The grant first, as in the one statement: standing, the token's, its expiry raised.
    const granted = yield* get(S.raiseAccessExpiryOfRefresh, params);
    if (!granted) return yield* explainRefresh(request);
    // The spent record from the token's row, then the row becomes its successor.
    yield* exec(S.spendRefresh, params);
    // A failure here (a duplicate hash) rolls the whole refresh back with it.
    const rotated = (yield* get(S.rotateRefresh, params))!;
    return refreshed({ ...granted, token_scope: rotated.scope });
  }

  return {
    ...properties,
    close: () => driver.close(),

    createClient: (record) => run(ignore(exec(S.insertClient, client.params(record)))),
    saveClient: (record) => run(ignore(exec(S.upsertClient, client.params(record)))),
    getClient: (clientId) => run(then(get(S.getClient, { client_id: clientId }), (row) => optional(row, client.record))),
    listClients: () => run(then(all(S.listClients), (rows) => rows.map(client.record))),
    deleteClient: (clientId, now = systemNow()) =>
      inTransaction(
        (function* () {
          const params = { client_id: clientId, now };
          yield* exec(S.revokeGrantsOfClient, params);
          yield* record(S.recordGrantsOfClient, params);
          return (yield* exec(S.deleteClient, params)) > 0;
        })(),
      ),
    listClientsPage: (query) => run(then(all(S.listClientsPage, pageParams(query)), (rows) => rows.map(client.record))),
    touchClient: (clientId, now) => run(ignore(exec(S.touchClient, { client_id: clientId, now, granularity: CLIENT_USE_GRANULARITY }))),

    createUser: (record) => run(ignore(exec(S.insertUser, user.params(record)))),
    getUser: (key) => {
      const found =
        'id' in key
          ? get(S.getUserById, { id: key.id })
          : 'username' in key
            ? get(S.getUserByUsername, { username: key.username })
            : get(S.getUserByIdentity, { provider: key.identity.provider, issuer: key.identity.issuer, subject: key.identity.subject });
      return run(then(found, (row) => optional(row, user.record)));
    },
    listUsers: () => run(then(all(S.listUsers), (rows) => rows.map(user.record))),
    listUsersPage: (query) => run(then(all(S.listUsersPage, pageParams(query)), (rows) => rows.map(user.record))),
    setUserAdmin: (username, admin) => run(then(exec(S.setUserAdmin, { username, admin: d.encode.bool(admin) }), (changed) => changed > 0)),
    endUserSessions: (userId) =>
      inTransaction(
        (function* () {
          const ended = yield* exec(S.deleteSessionsOfUser, { user_id: userId });
          yield* exec(S.deleteInteractionsOfUser, { user_id: userId });
          return ended;
        })(),
      ),
    deleteUser: (username, now = systemNow()) =>
      inTransaction(
        (function* () {
          const params = { username, now };
          yield* exec(S.revokeGrantsOfUser, params);
          yield* record(S.recordGrantsOfUser, params);
          return (yield* exec(S.deleteUser, params)) > 0;
        })(),
      ),
    setUserPassword: (username, passwordHash) =>
      inTransaction(
        (function* () {
          const changed = yield* get(S.setUserPassword, { username, password_hash: passwordHash });
          if (!changed) return undefined;
          const sessionsEnded = yield* exec(S.deleteSessionsOfUser, { user_id: changed.id });
          yield* exec(S.deleteInteractionsOfUser, { user_id: changed.id });
          return { sessionsEnded };
        })(),
      ),
    createUserWithIdentity: (userRecord, identityRecord) =>
      inTransaction(
        (function* () {
          yield* exec(S.insertUser, user.params(userRecord));
          yield* exec(S.insertIdentity, identity.params(identityRecord));
        })(),
      ),
    listUserIdentities: (filter = {}) => run(then(all(S.listIdentities, { user_id: filter.userId ?? null }), (rows) => rows.map(identity.record))),

    createInteraction: (record) => run(ignore(exec(S.insertInteraction, interaction.params(record)))),
    getInteraction: (id, now) => run(then(get(S.getInteraction, { id, now }), (row) => optional(row, interaction.record))),
    updateInteraction: (id, change) =>
      run(
        ignore(
          'userId' in change
            ? exec(S.setInteractionUser, { id, user_id: change.userId })
            : exec(S.setInteractionUpstream, { id, upstream: d.encode.json(change.upstream) }),
        ),
      ),
    consumeInteraction: (id, now) => run(then(get(S.consumeInteraction, { id, now }), (row) => optional(row, interaction.record))),

    createSession: (record) =>
      inTransaction(
        (function* () {
          yield* exec(S.insertSession, session.params(record));
          yield* exec(S.touchUserSignIn, { user_id: record.userId, now: record.createdAt });
        })(),
      ),
    getSession: (idHash, now) => run(then(get(S.getSession, { id_hash: idHash, now }), (row) => optional(row, session.record))),
    deleteSession: (idHash) => run(ignore(exec(S.deleteSession, { id_hash: idHash }))),

    createUpstreamSession: (record) => run(ignore(exec(S.insertUpstreamSession, upstreamSession.params(record)))),
    getUpstreamSession: (id) => run(then(get(S.getUpstreamSession, { id }), (row) => optional(row, upstreamSession.record))),
    updateUpstreamSessionTokens: (id, sealedTokens) => run(ignore(exec(S.updateUpstreamTokens, { id, sealed_tokens: sealedTokens }))),

    getConsent: (userId, clientId, resource) =>
      run(then(get(S.getConsent, { user_id: userId, client_id: clientId, resource }), (row) => optional(row, consent.record))),
    saveConsent: (record) => run(ignore(exec(S.upsertConsent, consent.params({ ...record, scope: [...new Set(record.scope)].sort() })))),
    listConsents: (filter) =>
      run(then(all(S.listConsents, { user_id: filter.userId ?? null, client_id: filter.clientId ?? null }), (rows) => rows.map(consent.record))),
    revokeConsents: (userId, clientId, now) =>
      inTransaction(
        (function* () {
          const count = yield* exec(S.deleteConsents, { user_id: userId, client_id: clientId });
          const params = { now, user_id: userId, client_id: clientId };
          if ((yield* exec(S.revokeGrantsOf, params)) > 0) yield* record(S.recordGrantsOf, params);
          return count;
        })(),
      ),

    createGrant: (grantRecord, codeRecord) =>
      codeRecord === undefined
        ? writeTogether(ignore(exec(S.insertGrant, grant.params(grantRecord))))
        : inTransaction(
            (function* () {
              yield* exec(S.insertGrant, grant.params(grantRecord));
              if (codeRecord) yield* exec(S.insertCode, code.params(codeRecord));
            })(),
          ),
    getGrant: (id) => run(then(get(S.getGrant, { id }), (row) => optional(row, grant.record))),
    revokeGrant: (id, now) =>
      inTransaction(
        (function* () {
          if ((yield* exec(S.revokeGrant, { id, now })) > 0) yield* record(S.recordGrant, { id, now });
        })(),
      ),

    redeemAuthorizationCode: (codeHash, now, issue) =>
      inTransaction(
        (function* () {
          const result = yield* consumeCode(codeHash, now);
          if (result.status !== 'ok') return result;
          const tokens = issue(result.record);
          if (tokens) yield* issueUnder(result.record.grantId, tokens.accessExpiresAt, tokens.refreshToken);
          return result;
        })(),
      ),

    createDeviceAuthorization: (record) => run(ignore(exec(S.insertDevice, device.params(record)))),
    findPendingDeviceAuthorization: (userCodeHash, now) =>
      run(then(get(S.findPendingDevice, { user_code_hash: userCodeHash, now }), (row) => optional(row, device.record))),
    approveDeviceAuthorization: (deviceCodeHash, now, grantRecord, codeRecord) =>
      inTransaction(
        (function* () {
          const approved = yield* get(S.decideDevice, { device_code_hash: deviceCodeHash, now, status: 'approved' });
          if (!approved) return false;
          yield* exec(S.insertGrant, grant.params(grantRecord));
          yield* exec(S.insertCode, code.params({ ...codeRecord, codeHash: deviceCodeHash, expiresAt: approved.expires_at as number }));
          return true;
        })(),
      ),
    denyDeviceAuthorization: (deviceCodeHash, now) =>
      run(then(get(S.decideDevice, { device_code_hash: deviceCodeHash, now, status: 'denied' }), (row) => row !== undefined)),
    pollDeviceAuthorization: (deviceCodeHash, clientId, now) =>
      inTransaction(
        (function* () {
          const row = yield* get(S.lockDevice, { device_code_hash: deviceCodeHash });
          if (!row) return { status: 'missing' as const };
          const record = device.record(row);
          if (record.clientId !== clientId) return { status: 'foreign' as const, record };
          const { result, changed } = devicePoll(record, now);
          if (changed) {
            yield* exec(S.recordDevicePoll, { device_code_hash: deviceCodeHash, poll_interval: changed.interval, last_polled_at: changed.lastPolledAt });
          }
          return result;
        })(),
      ),

    getRefreshToken: (tokenHash) => run(then(get(S.getRefresh, { token_hash: tokenHash }), (row) => optional(row, refresh.record))),
    findSpentRefreshToken: (tokenHash) => run(then(get(S.getSpent, { token_key: spentKey(tokenHash) }), (row) => optional(row, spent))),
    refreshGrant: (request) => {
      // One statement, committed on its own (a duplicate new hash fails it whole).
      if (d.writesInWith) return run(refreshInOneStatement(request));
      return inTransaction(rotateRefresh(request));
    },
    refreshGrantWithAssertion: (request, assertion) => {
      const used = { assertion_key: assertion.key, expires_at: assertion.expiresAt };
      if (d.writesInWith) {
        // One statement, committed on its own, as refreshGrant's.
        return run(
          (function* (): Program<RefreshResult | { status: 'assertion-used' }> {
            const row = (yield* get(S.refreshWithAssertionInOneStatement, { ...refreshParams(request), ...used }))!;
            if (!d.decode.bool(row.assertion_taken)) return { status: 'assertion-used' };
            return row.id !== null ? refreshed(row) : yield* explainRefresh(request);
          })(),
        );
      }
      return inTransaction(
        (function* (): Program<RefreshResult | { status: 'assertion-used' }> {
          if (!(yield* get(S.useAssertion, { ...used, now: request.now }))) return { status: 'assertion-used' };
          return yield* rotateRefresh(request);
        })(),
      );
    },
    repeatRefresh: (request) => {
      const params = {
        token_hash: request.tokenHash,
        token_key: spentKey(request.tokenHash),
        client_id: request.clientId,
        successor_hashes: d.encode.json(request.successorHashes),
        spent_after: request.spentAfter,
        now: request.now,
        access_expires_at: request.accessExpiresAt,
        upstream_checked: d.encode.bool(request.upstreamChecked),
      };
      const repeated = (row: Row): RepeatRefreshResult => ({
        status: 'ok',
        grant: grant.record(row),
        scope: d.decode.json(row.token_scope) as string[],
        successorHash: row.successor_hash as string,
      });
      if (d.writesInWith) {
        return run(
          (function* () {
            const row = yield* get(S.repeatInOneStatement, params);
            return row ? repeated(row) : yield* explainRefresh(request);
          })(),
        );
      }
      return inTransaction(
        (function* () {
          const successor = yield* get(S.getRepeatable, params);
          const granted = successor && (yield* get(S.raiseAccessExpiryOfRepeat, { ...params, grant_id: successor.grant_id }));
          if (!successor || !granted) return yield* explainRefresh(request);
          return repeated({ ...granted, token_scope: successor.scope, successor_hash: successor.successor_hash });
        })(),
      );
    },

    revokeAccessToken: (jti, expiresAt, now) =>
      expiresAt > now ? inTransaction(record(S.recordAccess, { jti, now, expires_at: expiresAt })) : Promise.resolve(),
    // Once per DPoP token request and client assertion: committed with the turn's writes where that is cheaper.
    useAssertionId: (key, expiresAt, now) =>
      writeTogether(then(get(S.useAssertion, { assertion_key: key, expires_at: expiresAt, now }), (row) => row !== undefined)),
    isAccessTokenRevoked: (jti) => run(then(get(S.isAccessRevoked, { jti }), (row) => row !== undefined)),
    listRevocations: (since, now) => run(then(all(S.listRevocations, { since, now }), (rows) => rows.map(revocation.record))),

    listSigningKeys: () => run(then(all(S.listKeys), (rows) => rows.map(key.record))),
    rotateSigningKey: (record) =>
      inTransaction(
        (function* () {
          yield* exec(S.lockKeys);
          yield* exec(S.retirePreviousKey);
          yield* exec(S.demoteCurrentKey);
          yield* exec(S.insertKey, key.params({ ...record, status: 'current' }));
        })(),
      ),
    ensureSigningKey: (record) =>
      inTransaction(
        (function* () {
          // Under the lock, each statement sees what the previous holder committed.
          yield* exec(S.lockKeys);
          const current = yield* get(S.getCurrentKey);
          if (current) return key.record(current);
          const created: SigningKeyRecord = { ...record, status: 'current' };
          yield* exec(S.insertKey, key.params(created));
          return created;
        })(),
      ),

    takeRateTokens: (request) => {
      const p = bucketParams(request);
      // The insert's values are those of a bucket never seen; the conflict branch computes the rest.
      const fresh = takeFromBucket(undefined, p);
      const params = { ...p, bucket_key: p.key, level: fresh.level, updated_at: fresh.updatedAt, granted: fresh.granted };
      return run(then(get(S.takeRateTokens, params), (row) => bucketResult(row as { granted: number; level: number })));
    },

    recordAuditEvents: (events) =>
      inTransaction(
        (function* () {
          for (const event of events) yield* exec(S.insertAuditEvent, auditEvent.params(event));
        })(),
      ),
    listAuditEvents: (query) =>
      run(
        then(
          all(S.listAuditEvents, {
            before_seq: query.beforeSeq ?? Number.MAX_SAFE_INTEGER,
            since: query.since ?? 0,
            event: query.event ?? null,
            outcome: query.outcome ?? null,
            user_id: query.userId ?? null,
            client_id: query.clientId ?? null,
            address: query.address ?? null,
            limit: query.limit,
          }),
          (rows) => rows.map(auditEventRecord),
        ),
      ),

    sweepExpired: (now, options = {}) => {
      const pause = options.pause ?? rest;
      // Each batch in a transaction of its own, apart from the group commits of requests.
      const inTransaction = <T>(program: Program<T>): Promise<T> => (driver.transactionAlone ?? driver.transaction)(program);
      const batch = (statement: Statement, params: Row): Program<number> =>
        (function* () {
          yield* exec(S.noSyncCommit);
          return yield* exec(statement, params);
        })();
      const drain = (statement: Statement, params: Row): Promise<number> =>
        drainInSlices((size) => inTransaction(batch(statement, { ...params, batch: size })), pause, driver.sweepPace, options.signal);
      const walkByPage = async (walked: WalkedSweep): Promise<number> => {
        const pages = Number((await run(get(walked.pages, {})))?.pages ?? 0);
        const tid = (page: number): string => `(${page},0)`;
        return walkPages(
          (from, until) => inTransaction(batch(walked.sweepPages, { from: tid(from), until: tid(until), now })),
          pages,
          pause,
          driver.sweepPace,
          options.signal,
        );
      };
      const walkByKey = (walked: WalkedSweep): Promise<number> =>
        walkInSlices(
          (after, size) =>
            inTransaction(
              (function* () {
                yield* exec(S.noSyncCommit);
                const slice = yield* get(walked.slice, { after, batch: size });
                const last = (slice?.last as string | number | null | undefined) ?? null;
                const keys = Number(slice?.n ?? 0);
                return { last, keys, deleted: last === null ? 0 : yield* exec(walked.sweep, { after, last, now }) };
              })(),
            ),
          pause,
          driver.sweepPace,
          options.signal,
          walked.first(d),
        );
      const sweep = async (): Promise<number> => {
        let total = 0;
        // Unused clients first: what cascades from them is then swept with everything else.
        if (options.unusedClientsBefore !== undefined) total += await drain(S.sweepUnusedClients, { before: options.unusedClientsBefore });
        if (options.auditEventsBefore !== undefined) total += await drain(S.sweepAuditEvents, { before: options.auditEventsBefore });
        for (const step of S.sweep) {
          if ('drain' in step) total += await drain(step.drain, { now });
          else total += await (driver.walkByPage ? walkByPage(step.walk) : walkByKey(step.walk));
        }
        await driver.reclaim?.(pause, options.signal);
        return total;
      };
      return driver.upkeep ? driver.upkeep(sweep) : sweep();
    },
  };
}

/** A page query's parameters: the search as a lowercase LIKE pattern with its wildcards escaped ('!'). */
function pageParams(query: PageQuery): Row {
  const search = query.search?.trim().toLowerCase();
  return { after: query.after ?? '', limit: query.limit, search: search ? `%${search.replace(/[!%_]/g, (c) => `!${c}`)}%` : null };
}

/** A program's result, transformed. */
function* then<A, B>(program: Program<A>, f: (value: A) => B): Program<B> {
  return f(yield* program);
}

const ignore = (program: Program<unknown>): Program<void> => then(program, () => undefined);
