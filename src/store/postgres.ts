/**
 * The PostgreSQL store (node-postgres), so several `context-auth serve` replicas can share one
 * database: the driver of the shared SQL store (sql/sql-store.ts) over a connection pool, with the
 * same semantics, orderings and error mapping as the SQLite store, decorated with PostgreSQL's
 * fast paths: a turn's refreshes in one statement (postgres-refresh-batch.ts), a turn's client
 * lookups in one query and clients kept in memory (postgres-client-lookups.ts).
 *
 * Concurrency: the replicas (and the connections of one pool) race each other for real here, so
 * single use lives in the SQL itself (sql/statements.ts), never a read followed by a write.
 * Programs that span statements run in one transaction on one connection; signing key changes
 * and migrations also hold a transaction-scoped advisory lock, so concurrent callers in
 * different processes run one after the other.
 */
import type pg from 'pg';
import { loadOptionalPackage, PG } from '../core/optional-package.js';
import { migrationDdl, postgres, render, REVOCATION_CHANNEL, type Statement } from './sql/dialect.js';
import { SCHEMA_VERSION, TABLES } from './sql/schema.js';
import { durable, groupCommit, type Outcome } from './sql/group-commit.js';
import { DEFAULT_SWEEP_PACE, sqlStore, type Program, type Row, type Step, type SweepPace } from './sql/sql-store.js';
import { isClientWrite } from './sql/statements.js';
import { lookUpClientsTogether } from './postgres-client-lookups.js';
import { listenOn } from './postgres-listener.js';
import { batchRefreshes } from './postgres-refresh-batch.js';
import { StoreError, type FullStore } from './store.js';

/**
 * Sweep batches of 500 rows, resting eight times as long as each took. A batch commits without
 * waiting for the disk, but the next refresh to commit must flush the WAL the batch wrote before
 * its own, so what a batch writes is what a request can be made to wait for: batches walk tables
 * by page (a few pages a batch, not one a row), and larger batches or shorter rests showed in the
 * refresh p99 while sweeping (bench/sweep-latency.ts; docs/performance.md, "Upkeep").
 */
const SWEEP_PACE: SweepPace = { ...DEFAULT_SWEEP_PACE, batchRows: 500, restFactor: 8 };

/** Advisory lock key held while migrating (any constant unique to this package will do). */
const MIGRATION_LOCK = 7_016_336_241_620_180_001n;

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
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EPIPE',
]);

/** node-postgres's own messages for a lost, refused or timed-out connection. */
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|not queryable|Cannot use a pool after calling end|server closed the connection|The server does not support SSL/i;

/**
 * A statement prepared on a connection whose result columns changed since (another replica
 * migrated a table it reads with `*`): PostgreSQL refuses to run it again on that connection.
 */
function isStalePlan(err: unknown): boolean {
  return err instanceof Error && (err as Error & { code?: unknown }).code === '0A000' && /cached plan must not change result type/.test(err.message);
}

/** A transaction PostgreSQL aborted because of another one (a deadlock, a serialization failure): run again, it may well pass. */
function isConflictBetweenTransactions(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001';
}

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
  query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>>;
}

/** bigint (int8) as a JS number: epoch seconds and identity values fit comfortably. */
function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RangeError(`bigint out of the safe integer range: ${text}`);
  return value;
}

/** Per-pool type parsers (never the global pg.types), so other node-postgres users in the process are unaffected. */
function typeParsers(driver: typeof pg): pg.CustomTypesConfig {
  return {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === driver.types.builtins.INT8 && format !== 'binary' ? parseInt8 : driver.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
  };
}

async function migrate(client: pg.PoolClient): Promise<void> {
  await client.query('BEGIN');
  try {
    // First, before anything else: another replica migrating at the same time waits here, then
    // sees the versions it applied.
    await client.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`);
    await client.query('CREATE TABLE IF NOT EXISTS context_auth_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    const { rows } = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM context_auth_migrations');
    const version = rows[0]?.version ?? 0;
    if (version > SCHEMA_VERSION) throw new Error(`database schema version ${version} is newer than this code knows (${SCHEMA_VERSION})`);
    for (let next = version + 1; next <= SCHEMA_VERSION; next++) {
      for (const sql of migrationDdl(postgres, TABLES, next)) await client.query(sql);
      await client.query('INSERT INTO context_auth_migrations (version, applied_at) VALUES ($1, now())', [next]);
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// The store

export async function openPostgresStore(options: PostgresStoreOptions): Promise<FullStore> {
  const target = describeTarget(options.connectionString);
  const redact = redactor(options.connectionString);

  const driver = loadOptionalPackage<typeof pg>(PG);
  const pool = new driver.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5000,
    idleTimeoutMillis: 30_000,
    statement_timeout: options.statementTimeoutMs ?? 10_000,
    application_name: 'context-auth',
    keepAlive: true,
    types: typeParsers(driver),
  });
  // An idle connection that breaks (the server restarted, a proxy dropped it) is reported here,
  // and the pool discards it; without a listener the 'error' event would crash the process. The
  // next request opens a new connection, or fails with an unavailable StoreError while the database
  // is away: there is nothing to do here.
  pool.on('error', () => undefined);

  let closed = false;

  const translate = (err: unknown): unknown => {
    if (err instanceof StoreError) return err;
    if (closed) return new StoreError('unavailable', 'PostgreSQL store is closed', { cause: err });
    const code = (err as { code?: unknown } | null)?.code;
    if (code === '23505') return new StoreError('conflict', redact((err as Error).message));
    if (isUnavailable(err) || isStalePlan(err)) {
      const message = err instanceof Error ? err.message || (err as Error & { code?: string }).code || err.name : String(err);
      return new StoreError('unavailable', `PostgreSQL store unavailable (${target}): ${redact(message)}`, { cause: err });
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
      // A stale prepared statement lives as long as its connection: a new one prepares it afresh.
      if (isUnavailable(err) || isStalePlan(err)) discard(err as Error);
      throw err;
    } finally {
      client.off('error', discard);
      client.release(broken);
    }
  };

  /**
   * What one transaction (or one autocommitted program) did that matters once it ended: a write of
   * the clients table holds the client cache off until then.
   */
  interface Unit {
    clientWrite?: { done(): void };
  }
  const inUnit = async <T>(fn: (unit: Unit) => Promise<T>): Promise<T> => {
    const unit: Unit = {};
    try {
      return await fn(unit);
    } finally {
      unit.clientWrite?.done();
    }
  };

  /** Runs a program's statements on `db`, one after another. */
  const drive = async <T>(program: Program<T>, db: Queryable, unit: Unit): Promise<T> => {
    let next = program.next();
    while (!next.done) next = program.next(await step(next.value, db, unit));
    return next.value;
  };
  const step = async ({ statement, params, mode }: Step, db: Queryable, unit?: Unit): Promise<unknown> => {
    if (unit && isClientWrite(statement)) unit.clientWrite ??= clients.writing();
    const sql = rendered(statement);
    if (!sql) return mode === 'all' ? [] : mode === 'run' ? 0 : undefined;
    const result = await db.query({ name: sql.name, text: sql.sql, values: sql.names.map((name) => params[name]) });
    if (mode === 'get') return result.rows[0];
    if (mode === 'all') return result.rows;
    return result.rowCount ?? 0;
  };
  /**
   * Each statement is prepared once per connection, by a name of its own, and then only executed:
   * PostgreSQL parses and plans it once instead of at every request, which is most of a short
   * statement's cost to the database.
   */
  const prepared = new Map<Statement, { name: string; sql: string; names: string[] } | null>();
  const rendered = (statement: Statement) => {
    let entry = prepared.get(statement);
    if (entry === undefined) {
      const r = render(postgres, statement);
      entry = r ? { name: `context_auth_${prepared.size}`, ...r } : null;
      prepared.set(statement, entry);
    }
    return entry;
  };

  /** BEGIN … COMMIT on one connection; ROLLBACK on any error, which is rethrown. */
  const transaction = <T>(program: Program<T>): Promise<T> =>
    inUnit((unit) =>
      withClient(async (client, discard) => {
        await client.query('BEGIN');
        try {
          const result = await drive(program, client, unit);
          await client.query('COMMIT');
          return result;
        } catch (err) {
          // A connection that cannot even roll back is not returned to the pool.
          await client
            .query('ROLLBACK')
            .catch((rollbackError: unknown) => discard(rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError))));
          throw err;
        }
      }),
    );

  /**
   * The programs of one batch (sql/group-commit.ts) in one transaction: each in a savepoint, so
   * that one program's error undoes its own work only. Releasing a savepoint and setting the
   * next go in one round trip; a batch of one needs no savepoint at all.
   */
  const commitTogether = (programs: Program<unknown>[]): Promise<Outcome[]> =>
    programs.length === 1
      ? transaction(programs[0]!).then((value): Outcome[] => [{ ok: true, value }])
      : inUnit((unit) =>
          withClient(async (client, discard) => {
            await client.query('BEGIN; SAVEPOINT grouped');
            try {
              const outcomes: Outcome[] = [];
              for (const [i, program] of programs.entries()) {
                if (i > 0) await client.query('RELEASE SAVEPOINT grouped; SAVEPOINT grouped');
                try {
                  outcomes.push({ ok: true, value: await drive(durable(program), client, unit) });
                } catch (error) {
                  // A stale plan, or a connection that cannot roll back to the savepoint (lost), fails the batch.
                  if (isStalePlan(error)) throw error;
                  await client.query('ROLLBACK TO SAVEPOINT grouped').catch(() => {
                    throw error;
                  });
                  outcomes.push({ ok: false, error: translate(error) });
                }
              }
              await client.query('COMMIT');
              return outcomes;
            } catch (err) {
              await client
                .query('ROLLBACK')
                .catch((rollbackError: unknown) => discard(rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError))));
              throw err;
            }
          }),
        );
  const grouped = groupCommit(commitTogether, translate);

  /** TID range scans, which a walk by page needs (a sequential scan per range otherwise), came in PostgreSQL 14. */
  let walkByPage = false;
  try {
    const client = await pool.connect();
    try {
      await migrate(client);
      const version = await client.query<{ server_version_num: string }>('SHOW server_version_num');
      walkByPage = Number(version.rows[0]?.server_version_num) >= 140000;
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end().catch(() => undefined);
    const message = err instanceof Error ? err.message || (err as Error & { code?: string }).code || err.name : String(err);
    throw new StoreError('unavailable', `cannot open PostgreSQL store at ${target}: ${redact(message)}`, { cause: err });
  }

  /** Each (re)connection calls `onChange`, so the caller reads what was announced while nobody listened. */
  const watchRevocations = (onChange: () => void): Promise<() => Promise<void>> =>
    listenOn({
      connectionString: options.connectionString,
      connectionTimeoutMs: options.connectionTimeoutMs ?? 5000,
      applicationName: 'context-auth revocations',
      channel: REVOCATION_CHANNEL,
      notified: onChange,
      listening: onChange,
    });

  const sql = sqlStore(
    postgres,
    {
      sweepPace: SWEEP_PACE,
      walkByPage,
      // One statement needs no transaction; several share one connection, in order.
      run: (program) => run(() => inUnit((unit) => withClient((client) => drive(program, client, unit)))),
      transaction: <T>(program: Program<T>) => grouped.transaction<T>(program),
      transactionAlone: (program) => run(() => transaction(program)),
      close: async () => {
        if (closed) return;
        await grouped.flush();
        closed = true;
        await pool.end();
      },
    },
    { sharedByReplicas: true },
  );

  // PostgreSQL's fast paths, as decorators of the clients and grants aggregates.
  /** One statement on a pooled connection, its rows: what the decorators send beside the programs. */
  const query = (statement: Statement, params: Row): Promise<Row[]> =>
    withClient((client) => step({ statement, params, mode: 'all' }, client)) as Promise<Row[]>;
  const clients = lookUpClientsTogether(sql, {
    query,
    translate,
    listen: (channel, on) =>
      listenOn({
        connectionString: options.connectionString,
        connectionTimeoutMs: options.connectionTimeoutMs ?? 5000,
        applicationName: 'context-auth clients',
        channel,
        notified: on.notified,
        listening: on.listening,
        lost: on.lost,
      }),
  });
  const refreshes = batchRefreshes(clients.store, {
    query,
    // The database away fails the batch; anything else, a deadlock PostgreSQL broke included, leaves each refresh to run alone.
    failsTheBatch: (err) => isUnavailable(err) && !isConflictBetweenTransactions(err),
    translate,
  });

  return {
    ...refreshes.store,
    watchRevocations,
    close: async () => {
      if (closed) return;
      await Promise.all([refreshes.flush(), clients.flush()]);
      await clients.close();
      await sql.close();
    },
  };
}
