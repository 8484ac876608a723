/**
 * The SQLite store (better-sqlite3): the embedded default. One connection per process;
 * better-sqlite3 is synchronous, so a program (sql/sql-store.ts) runs to completion in one JS
 * turn, and single use only has to be atomic against other processes sharing the file — which
 * the conditional UPDATE … RETURNING statements and IMMEDIATE transactions guarantee. The
 * transactional programs of one turn of the event loop share one IMMEDIATE transaction, each in
 * a savepoint, and one commit (sql/group-commit.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { StoreError, type FullStore } from './store.js';
import { migrationDdl, render, sqlite, type Statement } from './sql/dialect.js';
import { SCHEMA_VERSION, TABLES } from './sql/schema.js';
import { groupCommit, type Outcome } from './sql/group-commit.js';
import { sqlStore, type Program, type Step, type SweepPace } from './sql/sql-store.js';
import { OffLoopCheckpoints } from './sqlite-checkpointer.js';
import { keepClients } from './sqlite-client-cache.js';
import { isClientWrite } from './sql/statements.js';

/** An upkeep job still running after this long gets its WAL checkpoints moved off the event loop. */
const LONG_UPKEEP_MS = 50;
/**
 * A sweep's batches run on the event loop: about 1 ms each, then a rest eight times as long, so
 * upkeep takes at most a ninth of the loop and a request waits at most about a millisecond
 * behind a batch. Longer batches, or shorter rests, showed in the refresh p99 while sweeping
 * (bench/sweep-latency.ts; the figures are in docs/performance.md, "Upkeep").
 */
const SWEEP_PACE: SweepPace = { sliceMs: 1, restFactor: 8 };
/** SQLite's default WAL size (pages) at which a commit checkpoints. */
const AUTOCHECKPOINT_PAGES = 1000;

/** Primary result codes after which the database cannot serve requests (until an operator acts). */
const UNAVAILABLE_CODES = new Set(['SQLITE_BUSY', 'SQLITE_CANTOPEN', 'SQLITE_IOERR', 'SQLITE_FULL', 'SQLITE_READONLY', 'SQLITE_CORRUPT', 'SQLITE_NOTADB']);

function translateError(err: unknown, db: Database.Database): unknown {
  if (err instanceof Database.SqliteError) {
    // Extended codes (SQLITE_IOERR_WRITE, SQLITE_BUSY_SNAPSHOT, …) map by their primary code.
    const primary = /^SQLITE_[A-Z]+/.exec(err.code)?.[0] ?? err.code;
    if (UNAVAILABLE_CODES.has(primary)) return new StoreError('unavailable', `SQLite store unavailable: ${err.message}`, { cause: err });
    if (err.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || err.code === 'SQLITE_CONSTRAINT_UNIQUE') {
      return new StoreError('conflict', err.message);
    }
    return err;
  }
  // Use after close(), e.g. a request still in flight while the server shuts down.
  if (!db.open) return new StoreError('unavailable', 'SQLite store is closed', { cause: err });
  return err;
}

/** Brings the file to SCHEMA_VERSION (`PRAGMA user_version`), one migration after another, in one transaction. */
function migrate(db: Database.Database): void {
  db.transaction(() => {
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > SCHEMA_VERSION) throw new Error(`database schema version ${version} is newer than this code knows (${SCHEMA_VERSION})`);
    for (let next = version + 1; next <= SCHEMA_VERSION; next++) {
      for (const sql of migrationDdl(sqlite, TABLES, next)) db.exec(sql);
    }
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
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
    // A new file gives back the pages sweeps free (reclaim below); this must come before anything
    // writes the file, WAL mode included. A file made before stays as it is: switching it needs a
    // VACUUM, an operator's call.
    const { n: objects } = db.prepare('SELECT count(*) AS n FROM sqlite_master').get() as { n: number };
    if (objects === 0) db.pragma('auto_vacuum = INCREMENTAL');
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

export interface SqliteStoreOptions {
  /** The database file (created, with its folder's permissions, when missing), or ':memory:'. */
  path: string;
  /**
   * Whether checkpoints move to a worker thread while the store writes a lot (default true). False
   * leaves every checkpoint to the commit that crosses SQLite's WAL limit, as SQLite does alone.
   */
  checkpointsOffLoop?: boolean;
}

export function openSqliteStore(options: SqliteStoreOptions): FullStore {
  let db: Database.Database;
  try {
    db = openDatabase(options.path);
  } catch (err) {
    // Whatever stops us opening (permissions, a full disk, a corrupt or too new file), the store is unusable.
    throw new StoreError('unavailable', `cannot open SQLite store at ${options.path}: ${String(err)}`, { cause: err });
  }

  // Not for an in-memory database: it has no file for a second connection to open.
  const checkpoints =
    options.path === ':memory:' || options.checkpointsOffLoop === false
      ? undefined
      : new OffLoopCheckpoints(options.path, (pages) => db.open && db.pragma(`wal_autocheckpoint = ${pages}`), AUTOCHECKPOINT_PAGES);

  // Prepared once per statement and kept: preparing is most of the cost of a small query.
  const prepared = new Map<Statement, { stmt: Database.Statement; names: string[]; writes: boolean } | null>();
  const prepare = (statement: Statement) => {
    let entry = prepared.get(statement);
    if (entry === undefined) {
      const r = render(sqlite, statement);
      if (r) {
        const stmt = db.prepare(r.sql);
        entry = { stmt, names: r.names, writes: !stmt.readonly };
      } else entry = null;
      prepared.set(statement, entry);
    }
    return entry;
  };

  let clientsWritten = (): void => undefined;
  const step = ({ statement, params, mode }: Step): unknown => {
    const entry = prepare(statement);
    if (!entry) return mode === 'all' ? [] : mode === 'run' ? 0 : undefined;
    const names = entry.names;
    const bound: unknown[] = new Array(names.length);
    for (let i = 0; i < names.length; i++) bound[i] = params[names[i]!];
    if (entry.writes) {
      checkpoints?.wrote();
      if (isClientWrite(statement)) clientsWritten();
    }
    if (mode === 'get') return entry.stmt.get(bound);
    if (mode === 'all') return entry.stmt.all(bound);
    return entry.stmt.run(bound).changes;
  };

  const drive = <T>(program: Program<T>): T => {
    let next = program.next();
    while (!next.done) next = program.next(step(next.value));
    return next.value;
  };
  // Nested in `inBatch`, better-sqlite3 runs this in a savepoint: a program that fails undoes its own work only.
  const inSavepoint = db.transaction(<T>(program: Program<T>): T => drive(program));
  const inBatch = db.transaction((programs: Program<unknown>[]): Outcome[] => {
    // A batch of one needs no savepoint: its error is the transaction's, rolled back whole.
    if (programs.length === 1) return [{ ok: true, value: drive(programs[0]!) }];
    return programs.map((program): Outcome => {
      try {
        return { ok: true, value: inSavepoint(program) };
      } catch (error) {
        // Some errors (a full disk, an I/O error) end the whole transaction, not just the savepoint.
        if (!db.inTransaction) throw error;
        return { ok: false, error: translateError(error, db) };
      }
    });
  });
  const grouped = groupCommit(
    (programs) => inBatch.immediate(programs),
    (err) => translateError(err, db),
  );

  /** Runs synchronously, answering as the async Store interface does, with errors translated. */
  const settle = <T>(fn: () => T): Promise<T> => {
    try {
      return Promise.resolve(fn());
    } catch (err) {
      return Promise.reject(translateError(err, db));
    }
  };

  const store = sqlStore(sqlite, {
    run: (program) => settle(() => drive(program)),
    transaction: <T>(program: Program<T>) => grouped.transaction<T>(program),
    writeTogether: <T>(program: Program<T>) => grouped.transaction<T>(program),
    close: async () => {
      await grouped.flush();
      await checkpoints?.close();
      return settle(() => void db.close());
    },
    sweepPace: SWEEP_PACE,
    // Freed pages back to the file system, a slice at a time with a pause in between.
    reclaim: async (pause, signal) => {
      for (let slice = 0; slice < 1000 && !signal?.aborted; slice++) {
        const free = await settle(() => db.pragma('freelist_count', { simple: true }) as number);
        if (free === 0 || (await settle(() => db.pragma('auto_vacuum', { simple: true }) as number)) !== 2) return;
        const started = performance.now();
        await settle(() => db.pragma('incremental_vacuum(256)'));
        await pause(performance.now() - started);
      }
    },
    upkeep: async (job) => {
      if (!checkpoints) return job();
      let release: (() => Promise<void>) | undefined;
      const long = setTimeout(() => (release = checkpoints.hold()), LONG_UPKEEP_MS);
      return afterwards(job(), async () => {
        clearTimeout(long);
        await release?.();
      });
    },
  });
  const dataVersion = db.prepare('PRAGMA data_version').pluck();
  const kept = keepClients(store, () => dataVersion.get() as number);
  clientsWritten = kept.changed;
  return kept.store;
}

/** The job's outcome, after `cleanup` has run (whose own failure never hides the job's). */
async function afterwards<T>(job: Promise<T>, cleanup: () => void | Promise<void>): Promise<T> {
  try {
    return await job;
  } finally {
    await Promise.resolve()
      .then(cleanup)
      .catch(() => undefined);
  }
}
