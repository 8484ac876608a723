import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { openPostgresStore } from '../store/postgres.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { FullStore } from '../store/index.js';
import { CliError } from './errors.js';

export const DATABASE_FILE = 'context-auth.db';

/** Where the server-side verbs keep their state: --store (PostgreSQL) or --data (SQLite). */
export interface StoreFlags {
  data?: string | undefined;
  store?: string | undefined;
}

/**
 * The data folder: --data, else $CONTEXT_AUTH_DATA, else $XDG_DATA_HOME/context-auth
 * (~/.local/share/context-auth). One default for every verb, so `users add` run from any folder
 * reaches the same database as `serve`.
 */
export function dataFolder(flag: string | undefined): string {
  if (flag) return resolve(flag);
  if (process.env.CONTEXT_AUTH_DATA) return resolve(process.env.CONTEXT_AUTH_DATA);
  const base = process.env.XDG_DATA_HOME || join(homedir(), '.local', 'share');
  return join(base, 'context-auth');
}

/** A database URL fit for printing: the password never reaches a terminal or a log. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.href;
  } catch {
    return 'postgres://…';
  }
}

/**
 * The root cause of a failure to open the SQLite file, in words: the store wraps the file
 * system's or SQLite's error, and only the innermost one says what to fix.
 */
function openFailure(error: unknown): string {
  let inner: unknown = error;
  while (inner instanceof Error && inner.cause !== undefined) inner = inner.cause;
  const code = (inner as NodeJS.ErrnoException | undefined)?.code;
  const reasons: Record<string, string> = {
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EROFS: 'the file system is read-only',
    ENOSPC: 'the disk is full',
    ENOTDIR: 'part of the path is a file, not a folder',
    EISDIR: 'the database path is a folder',
    SQLITE_CANTOPEN: 'SQLite cannot open the database file',
    SQLITE_NOTADB: 'the file is not an SQLite database',
    SQLITE_CORRUPT: 'the database file is damaged',
    SQLITE_READONLY: 'the database file is read-only',
  };
  const reason = (code && reasons[code]) ?? (inner instanceof Error ? inner.message : String(inner));
  return code && reasons[code] ? `${reason} (${code})` : reason;
}

/**
 * Opens the store: PostgreSQL when --store or $CONTEXT_AUTH_STORE names one (for replicas
 * sharing a database), else the embedded SQLite file in the data folder. Only `create` makes a
 * new SQLite file (serve, users add): elsewhere a mistyped --data would quietly open an empty
 * database, and signing in would then fail with "wrong password".
 */
export async function openStore(flags: StoreFlags, options: { create?: boolean } = {}): Promise<{ store: FullStore; location: string; created: boolean }> {
  const url = flags.store ?? process.env.CONTEXT_AUTH_STORE;
  if (url) {
    if (!/^postgres(ql)?:\/\//i.test(url)) {
      throw new CliError('--store takes a postgres:// URL; for the embedded SQLite store use --data DIR.');
    }
    try {
      return { store: await openPostgresStore({ connectionString: url }), location: redactUrl(url), created: false };
    } catch (error) {
      throw new CliError(`Cannot open the database ${redactUrl(url)}: ${(error as Error).message}`);
    }
  }
  const folder = dataFolder(flags.data);
  const file = join(folder, DATABASE_FILE);
  const exists = existsSync(file);
  if (!exists && !options.create) {
    throw new CliError(
      `There is no context-auth database in ${folder}: check --data (or $CONTEXT_AUTH_DATA); 'context-auth serve' or 'users add' creates one.`,
    );
  }
  try {
    return { store: openSqliteStore({ path: file }), location: folder, created: !exists };
  } catch (error) {
    throw new CliError(`Cannot use the data folder ${folder}: ${openFailure(error)}; choose another with --data or fix its permissions.`);
  }
}

/** Runs `action` with the store open and closes it afterwards, whatever happens. */
export async function withStore<T>(flags: StoreFlags, action: (store: FullStore) => Promise<T>, options: { create?: boolean } = {}): Promise<T> {
  const { store } = await openStore(flags, options);
  try {
    return await action(store);
  } finally {
    await store.close();
  }
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
