/**
 * PostgreSQL's client lookups: a decorator of the clients aggregate, which postgres.ts puts around
 * the SQL store. Every token request looks up its client: the lookups of one turn of the event loop
 * go as one query, and the clients found are kept in memory while this process listens for the
 * announcements every write of the clients table makes at its commit (client-cache.ts).
 */
import { mapper } from './sql/mapping.js';
import { CLIENT_CHANNEL, type Statement } from './sql/dialect.js';
import { postgres } from './sql/dialect.js';
import { groupCommit, type Outcome } from './sql/group-commit.js';
import type { Row } from './sql/sql-store.js';
import { CLIENTS } from './sql/schema.js';
import { ClientCache } from './client-cache.js';
import type { ClientRecord, ClientStore } from './store.js';

/** The clients that requests of one turn look up, in one round trip. */
const GET_CLIENTS: Statement = { name: 'getClients', text: 'SELECT * FROM clients WHERE client_id = ANY(CAST(:client_ids AS text[]))' };

export interface ClientLookupOptions {
  /** Runs one statement on a pooled connection and returns its rows (errors as the driver raised them). */
  query(statement: Statement, params: Row): Promise<Row[]>;
  translate(err: unknown): unknown;
  /**
   * Listens on `channel` until the function it resolves with is called: `notified` at each
   * announcement, `listening` once LISTEN holds (after each reconnection), `lost` when it does not.
   */
  listen(channel: string, on: { notified(): void; listening(): void; lost(): void }): Promise<() => Promise<void>>;
}

export interface ClientLookups<S> {
  /** The store, its getClient batched and answered from memory where it can be. */
  store: S;
  /** This process is about to write the clients table; `done` when the write's transaction has ended. */
  writing(): { done(): void };
  /** Runs whatever lookups are queued now. */
  flush(): Promise<void>;
  /** Stops listening (before closing the store). */
  close(): Promise<void>;
}

export function lookUpClientsTogether<S extends Pick<ClientStore, 'getClient'>>(store: S, options: ClientLookupOptions): ClientLookups<S> {
  const client = mapper<ClientRecord>(postgres, CLIENTS);
  const commitBatch = async (clientIds: string[]): Promise<Outcome[]> => {
    const rows = await options.query(GET_CLIENTS, { client_ids: [...new Set(clientIds)] });
    const byId = new Map(rows.map((row) => [row.client_id, row]));
    return clientIds.map((clientId) => ({ ok: true, value: byId.get(clientId) }));
  };
  const lookups = groupCommit<string>(commitBatch, options.translate, { inFlight: 1 });
  const cache = new ClientCache<Row>({ fetch: (clientId) => lookups.transaction<Row | undefined>(clientId) });
  /** Started at the first lookup: a process that never looks up a client (a CLI verb) opens no listening connection. */
  let watched: Promise<() => Promise<void>> | undefined;
  let closed = false;
  const getClient = async (clientId: string): Promise<ClientRecord | undefined> => {
    if (!closed)
      watched ??= options.listen(CLIENT_CHANNEL, {
        notified: () => cache.changed(),
        listening: () => cache.listening(true),
        lost: () => cache.listening(false),
      });
    const row = await cache.get(clientId);
    return row === undefined ? undefined : client.record(row);
  };
  return {
    store: { ...store, getClient },
    writing: () => cache.writing(),
    flush: () => lookups.flush(),
    close: async () => {
      closed = true;
      await (
        await watched
      )?.();
    },
  };
}
