import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { openSqliteStore } from '../store/sqlite.js';
import type { Store } from '../store/store.js';
import { CliError } from './errors.js';

export const DATABASE_FILE = 'context-auth.db';

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

export function openStore(flag: string | undefined): { store: Store; location: string } {
  const folder = dataFolder(flag);
  try {
    return { store: openSqliteStore({ path: join(folder, DATABASE_FILE) }), location: folder };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new CliError(`Cannot open the data folder ${folder}: ${reason}`);
  }
}

/** Runs `action` with the store open and closes it afterwards, whatever happens. */
export async function withStore<T>(flag: string | undefined, action: (store: Store) => Promise<T>): Promise<T> {
  const { store } = openStore(flag);
  try {
    return await action(store);
  } finally {
    await store.close();
  }
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
