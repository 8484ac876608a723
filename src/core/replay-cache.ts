/**
 * A bounded record of single-use ids (DPoP proofs' `jti`s) kept in memory, by the second each was
 * issued in. Each id is kept until its `until`. When the record is full, the ids of its earliest
 * second are let go and the watermark rises past that second: from then on anything issued before
 * the watermark is refused as stale. So memory stays bounded and nothing let go can be replayed;
 * and since the earliest go first, the watermark rises no further than it must, staying below the
 * fresh proofs of honest clients.
 *
 * Ids issued ahead of the clock (a client whose clock is fast, or a sender dating proofs ahead on
 * purpose) are the last to go. So that a flood of them can never leave only them to let go, which
 * would raise the watermark past the present and refuse every honest proof, they may fill at most
 * a tenth of the record: beyond that, one more is refused as 'ahead'.
 */
export class ReplayCache {
  /** id → the second it was issued in. */
  readonly #ids = new Map<string, number>();
  /** Issue second → its ids, and until when the longest kept of them is kept. */
  readonly #buckets = new Map<number, { ids: string[]; until: number }>();
  /** The seconds of #buckets, ascending. */
  readonly #seconds: number[] = [];
  readonly #maxEntries: number;
  readonly #maxAhead: number;
  /** The first second still taken: ids issued before it were let go, or could have been. */
  #takesFrom = -Infinity;

  constructor(maxEntries = 100_000) {
    if (!(maxEntries > 0)) throw new Error('a replay cache holds at least one entry');
    this.#maxEntries = maxEntries;
    this.#maxAhead = Math.min(maxEntries - 1, Math.ceil(maxEntries / 10));
  }

  /**
   * 'ok' the first time; 'replayed' while the id is kept; 'stale' when issued before the
   * watermark; 'ahead' when issued ahead of `now` while a tenth of the record already is.
   */
  use(id: string, issued: number, until: number, now: number): 'ok' | 'replayed' | 'stale' | 'ahead' {
    this.#dropExpired(now);
    if (this.#ids.has(id)) return 'replayed';
    const second = Math.floor(issued);
    if (second < this.#takesFrom) return 'stale';
    if (second > Math.floor(now) && this.#aheadOf(now) >= this.#maxAhead) return 'ahead';
    if (this.#ids.size >= this.#maxEntries) {
      this.#letGoEarliest();
      if (second < this.#takesFrom) return 'stale';
    }
    this.#add(id, second, until);
    return 'ok';
  }

  /** How many ids are kept now (for memory figures). */
  get size(): number {
    return this.#ids.size;
  }

  #add(id: string, second: number, until: number): void {
    this.#ids.set(id, second);
    const bucket = this.#buckets.get(second);
    if (bucket) {
      bucket.ids.push(id);
      bucket.until = Math.max(bucket.until, until);
      return;
    }
    this.#buckets.set(second, { ids: [id], until });
    const seconds = this.#seconds;
    // Nearly always the latest second; else found by bisection (a few hundred seconds at most are live).
    if (seconds.length === 0 || seconds[seconds.length - 1]! < second) {
      seconds.push(second);
      return;
    }
    let low = 0;
    let high = seconds.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (seconds[middle]! < second) low = middle + 1;
      else high = middle;
    }
    seconds.splice(low, 0, second);
  }

  /** How many ids were issued in seconds after `now`'s. */
  #aheadOf(now: number): number {
    const current = Math.floor(now);
    let count = 0;
    for (let i = this.#seconds.length - 1; i >= 0 && this.#seconds[i]! > current; i--) count += this.#buckets.get(this.#seconds[i]!)!.ids.length;
    return count;
  }

  /** The earliest second's ids leave, and the watermark rises past it. */
  #letGoEarliest(): void {
    const second = this.#seconds.shift()!;
    this.#forget(second);
    this.#takesFrom = Math.max(this.#takesFrom, second + 1);
  }

  /** Expired seconds leave from the front; the walk stops at the first one still kept. */
  #dropExpired(now: number): void {
    while (this.#seconds.length > 0 && this.#buckets.get(this.#seconds[0]!)!.until <= now) this.#forget(this.#seconds.shift()!);
  }

  #forget(second: number): void {
    for (const id of this.#buckets.get(second)!.ids) this.#ids.delete(id);
    this.#buckets.delete(second);
  }
}
