export interface SweepOptions {
  /** Also delete dynamically registered clients last used (or, never used, created) before this time. */
  unusedClientsBefore?: number;
  /** Also delete stored audit events that occurred before this time (epoch milliseconds), where the store keeps them. */
  auditEventsBefore?: number;
  /**
   * Stops the sweep after the batch in flight (each batch is committed on its own); the promise
   * then resolves with the rows deleted until then. What is left is the next sweep's.
   */
  signal?: AbortSignal;
  /**
   * How the sweep rests between batches, given how long it should (ms): a timer that long by
   * default. One that resolves later holds the sweep there, between two committed batches.
   */
  pause?: (ms: number) => Promise<void>;
}

/** Upkeep: without it nothing expired is ever deleted, and `sweep()` does nothing. */
export interface StoreUpkeep {
  /** Records that the client was used now, unless that was already recorded less than a day ago (sweepExpired's `unusedClientsBefore`). */
  touchClient(clientId: string, now: number): Promise<void>;
  /**
   * Deletes what expired before `now` (codes, device authorizations, tokens, spent records, sessions, interactions, old
   * grants, upstream sessions nothing rests on, rate-limit buckets full again, revocations a minute
   * after their last token expired); returns how many rows.
   */
  sweepExpired(now: number, options?: SweepOptions): Promise<number>;
}
