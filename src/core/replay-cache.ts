/**
 * A bounded record of single-use ids (DPoP proofs' `jti`s) kept in memory, for a process with no
 * shared store. Each id is kept until its `until`; when the record is full, the oldest is let go
 * and the watermark rises to its issue time: from then on anything issued at or before the
 * watermark is refused as stale. So memory stays bounded and nothing let go can be replayed; an
 * honest client, whose proofs are fresh, never meets the watermark.
 */
export class ReplayCache {
  /** id → [issued, until], in insertion order (close to issue order). */
  readonly #entries = new Map<string, [issued: number, until: number]>();
  readonly #maxEntries: number;
  #watermark = -Infinity;

  constructor(maxEntries = 100_000) {
    if (!(maxEntries > 0)) throw new Error('a replay cache holds at least one entry');
    this.#maxEntries = maxEntries;
  }

  /** 'ok' the first time; 'replayed' while the id is kept; 'stale' when issued at or before the watermark. */
  use(id: string, issued: number, until: number, now: number): 'ok' | 'replayed' | 'stale' {
    this.#dropExpired(now);
    if (this.#entries.has(id)) return 'replayed';
    if (issued <= this.#watermark) return 'stale';
    if (this.#entries.size >= this.#maxEntries) {
      const [oldest, [oldestIssued]] = this.#entries.entries().next().value!;
      this.#entries.delete(oldest);
      this.#watermark = Math.max(this.#watermark, oldestIssued);
      if (issued <= this.#watermark) return 'stale';
    }
    this.#entries.set(id, [issued, until]);
    return 'ok';
  }

  /** How many ids are kept now (for memory figures). */
  get size(): number {
    return this.#entries.size;
  }

  /** Expired entries leave from the front; the walk stops at the first one still kept. */
  #dropExpired(now: number): void {
    for (const [id, [, until]] of this.#entries) {
      if (until > now) return;
      this.#entries.delete(id);
    }
  }
}
