/**
 * Back-off after failed sign-ins, per account and per client address: the first few failures are
 * free, then each one doubles the wait before the next attempt is even checked (1 s, 2 s, 4 s …,
 * at most 15 minutes). Never a lockout: a wait always ends, so nobody can lock a victim out for
 * good, and a correct password clears the account's count. Kept in memory, per process.
 * Times in milliseconds: with whole seconds, a wait of 1 s that began late in a second ended at
 * the next one, however soon that came.
 */
const FREE_FAILURES = 5;
const MAX_WAIT_SECONDS = 15 * 60;
/** Entries idle this long are forgotten (and the map is bounded). */
const FORGET_AFTER_SECONDS = 24 * 3600;
const MAX_ENTRIES = 100_000;

export class SignInThrottle {
  /** `until` and `last` in milliseconds. */
  private readonly entries = new Map<string, { failures: number; until: number; last: number }>();

  /** The keys an attempt counts against: the account, and the address when known. */
  static keys(username: string, address: string | undefined): string[] {
    return [`account:${username.toLowerCase()}`, ...(address ? [`address:${address}`] : [])];
  }

  /** Whole seconds (rounded up) until another attempt for these keys may be checked; 0 when it may be now. `nowMs`: milliseconds. */
  wait(keys: string[], nowMs: number): number {
    let wait = 0;
    for (const key of keys) {
      const entry = this.entries.get(key);
      if (entry && entry.until > nowMs) wait = Math.max(wait, entry.until - nowMs);
    }
    return Math.ceil(wait / 1000);
  }

  /** A failure, at `nowMs` (milliseconds): when it was found, so that its wait starts then. */
  failed(keys: string[], nowMs: number): void {
    if (this.entries.size >= MAX_ENTRIES) this.forgetIdle(nowMs);
    for (const key of keys) {
      const entry = this.entries.get(key) ?? { failures: 0, until: 0, last: nowMs };
      entry.failures++;
      entry.last = nowMs;
      if (entry.failures > FREE_FAILURES) entry.until = nowMs + 1000 * Math.min(MAX_WAIT_SECONDS, 2 ** (entry.failures - FREE_FAILURES - 1));
      this.entries.set(key, entry);
    }
  }

  /** A correct password: the account starts afresh (the address keeps its count). */
  succeeded(username: string): void {
    this.entries.delete(`account:${username.toLowerCase()}`);
  }

  private forgetIdle(nowMs: number): void {
    for (const [key, entry] of this.entries) if (nowMs - entry.last > FORGET_AFTER_SECONDS * 1000) this.entries.delete(key);
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
  }
}
