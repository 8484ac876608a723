/**
 * The SQLite store's clients kept in memory (client-cache.ts says what is kept and when it goes),
 * each lookup answered with a copy of the kept record: the lookup of a client by its id was about
 * a tenth of a refresh grant's CPU, most of it the statement and the decoding of its JSON columns.
 *
 * How a change is heard: this process's own writes of the clients table drop what is kept as they
 * run (better-sqlite3 runs a transaction within one turn, so no lookup sees it half done); a
 * commit by any other connection to the file (a CLI verb, `sqlite3` by hand) changes
 * `PRAGMA data_version`, read before a kept client is used, at most once per turn of the event
 * loop: a change committed elsewhere is seen from the next turn on.
 */
import { ClientCache } from './client-cache.js';
import type { ClientRecord, ClientStore } from './store.js';

export interface KeptClients<S> {
  /** The store, its getClient answered from memory where it can be (and never once it is closing). */
  store: S;
  /** This process wrote the clients table. */
  changed(): void;
}

/** `dataVersion` reads the connection's `PRAGMA data_version`. */
export function keepClients<S extends Pick<ClientStore, 'getClient'> & { close(): Promise<void> }>(store: S, dataVersion: () => number): KeptClients<S> {
  const cache = new ClientCache<ClientRecord>({ fetch: (clientId) => store.getClient(clientId) });
  cache.listening(true);
  let version: number | undefined;
  let checkedThisTurn = false;
  const check = () => {
    if (checkedThisTurn) return;
    const now = dataVersion();
    checkedThisTurn = true;
    setImmediate(() => (checkedThisTurn = false));
    if (version !== undefined && now !== version) cache.changed();
    version = now;
  };
  const getClient = (clientId: string): Promise<ClientRecord | undefined> => {
    try {
      check();
    } catch {
      // A closed or failing connection: nothing kept can be trusted, and the store's own lookup says why.
      cache.changed();
      return store.getClient(clientId);
    }
    return cache.get(clientId).then(copied);
  };
  const close = () => {
    cache.listening(false);
    return store.close();
  };
  return { store: { ...store, getClient, close }, changed: () => cache.changed() };
}

/**
 * A copy of plain JSON data, which a client record is: each caller gets its own, as from the
 * database (the store's records are copied in and out). A fifth of structuredClone's cost for a
 * record this small. A `__proto__` key (JSON.parse makes it an own key) is defined, not assigned,
 * so it stays a key and never becomes the copy's prototype.
 */
function copied<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(copied) as T;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const inner = copied((value as Record<string, unknown>)[key]);
    if (key === '__proto__') Object.defineProperty(out, key, { value: inner, enumerable: true, writable: true, configurable: true });
    else out[key] = inner;
  }
  return out as T;
}
