import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { openPostgresStore } from '../store/postgres.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { Store } from '../store/index.js';
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
 * Opens the store: PostgreSQL when --store or $CONTEXT_AUTH_STORE names one (for replicas
 * sharing a database), else the embedded SQLite file in the data folder.
 */
export async function openStore(flags: StoreFlags): Promise<{ store: Store; location: string }> {
  const url = flags.store ?? process.env.CONTEXT_AUTH_STORE;
  if (url) {
    if (!/^postgres(ql)?:\/\//i.test(url)) {
      throw new CliError('--store takes a postgres:// URL; for the embedded SQLite store use --data DIR.');
    }
    try {
      return { store: await openPostgresStore({ connectionString: url }), location: redactUrl(url) };
    } catch (error) {
      throw new CliError(`Cannot open the database ${redactUrl(url)}: ${(error as Error).message}`);
    }
  }
  const folder = dataFolder(flags.data);
  try {
    return { store: openSqliteStore({ path: join(folder, DATABASE_FILE) }), location: folder };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new CliError(`Cannot open the data folder ${folder}: ${reason}`);
  }
}

/** Runs `action` with the store open and closes it afterwards, whatever happens. */
export async function withStore<T>(flags: StoreFlags, action: (store: Store) => Promise<T>): Promise<T> {
  const { store } = await openStore(flags);
  try {
    return await action(store);
  } finally {
    await store.close();
  }
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
