/**
 * Clients kept in memory: every token request looks up its client, a row that almost never
 * changes. Other processes share the database (PostgreSQL replicas, a CLI verb on a SQLite file),
 * so what a process keeps must go when any process writes the clients table; each store says how
 * it hears of that (postgres-client-lookups.ts: announcements at COMMIT; sqlite-client-cache.ts:
 * the file's data version), and a process keeps clients only while it hears, dropping all of them
 * at each change.
 *
 * - Only clients found are kept: a lookup of an unknown client_id always asks the database, so
 *   made-up IDs cannot fill the memory and a new client needs no announcement to be seen.
 * - A lookup under way when an announcement (or a write of this process) arrives is not kept:
 *   it may have read the row before the change.
 * - While this process writes the clients table, nothing is kept or read from memory until the
 *   write's transaction ends; then everything kept is dropped, so a caller that waited for its
 *   write reads what it wrote, without waiting for the announcement to come back.
 * - A row is kept at most `ttlMs` (10 s): the bound for a change the announcements missed (the
 *   rows edited by hand in SQL, or a listening connection that died without saying so).
 */
export interface ClientCacheOptions<Row> {
  ttlMs?: number;
  /** Most clients kept; at the bound all are dropped and the cache fills again. */
  most?: number;
  now?: () => number;
  /** The database lookup, for what is not kept. */
  fetch(clientId: string): Promise<Row | undefined>;
}

export class ClientCache<Row> {
  readonly #kept = new Map<string, { row: Row; at: number }>();
  readonly #ttlMs: number;
  readonly #most: number;
  readonly #now: () => number;
  readonly #fetch: (clientId: string) => Promise<Row | undefined>;
  /** Bumped whenever what is kept may be stale: a lookup that started before is not kept. */
  #epoch = 0;
  #listening = false;
  /** Writes of the clients table by this process whose transaction has not ended. */
  #writing = 0;

  constructor(options: ClientCacheOptions<Row>) {
    this.#ttlMs = options.ttlMs ?? 10_000;
    this.#most = options.most ?? 10_000;
    this.#now = options.now ?? Date.now;
    this.#fetch = options.fetch;
  }

  get size(): number {
    return this.#kept.size;
  }

  async get(clientId: string): Promise<Row | undefined> {
    const usable = this.#listening && this.#writing === 0;
    const kept = usable ? this.#kept.get(clientId) : undefined;
    if (kept && this.#now() - kept.at < this.#ttlMs) return kept.row;
    const started = this.#epoch;
    const row = await this.#fetch(clientId);
    if (row !== undefined && usable && this.#epoch === started && this.#listening && this.#writing === 0) {
      if (this.#kept.size >= this.#most) this.#kept.clear();
      this.#kept.set(clientId, { row, at: this.#now() });
    }
    return row;
  }

  /** Some process wrote the clients table. */
  changed(): void {
    this.#epoch++;
    this.#kept.clear();
  }

  /** Whether announcements are heard: nothing is kept while they are not, and everything is dropped when that changes. */
  listening(on: boolean): void {
    this.#listening = on;
    this.changed();
  }

  /** This process is about to write the clients table; `done` when the write's transaction has ended (committed or not). */
  writing(): { done(): void } {
    this.#writing++;
    this.changed();
    let ended = false;
    return {
      done: () => {
        if (ended) return;
        ended = true;
        this.#writing--;
        this.changed();
      },
    };
  }
}
