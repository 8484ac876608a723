import { addressBucket } from '../core/client-address.js';

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
/** Entries idle this long are forgotten. */
const FORGET_AFTER_SECONDS = 24 * 3600;
/** Beyond this many entries the least recently used are forgotten, never the recent ones. */
const MAX_ENTRIES = 100_000;

interface Entry {
  /** Failures found. */
  failures: number;
  /** Attempts being checked now (the password hash takes a while): each may turn out a failure. */
  pending: number;
  /** Until when (milliseconds) the next attempt waits. */
  until: number;
  /** Last use (milliseconds). */
  last: number;
}

/** The wait (milliseconds) that the `failures`th failure imposes. */
function waitAfter(failures: number): number {
  return failures > FREE_FAILURES ? 1000 * Math.min(MAX_WAIT_SECONDS, 2 ** (failures - FREE_FAILURES - 1)) : 0;
}

/** One attempt let through to the password check: settled once, by the first call made. */
export interface SignInAttempt {
  /** The password was wrong, found at `nowMs`: the wait starts then. */
  failed(nowMs: number): void;
  /** The password was right: the account starts afresh (the address keeps its count). */
  succeeded(): void;
  /** Neither was found (an error ended the check): the attempt counts for nothing. */
  abandoned(): void;
}

export class SignInThrottle {
  /** In order of last use, least recent first (a Map keeps insertion order). */
  private readonly entries = new Map<string, Entry>();

  /** The keys an attempt counts against: the account, and the address (an IPv6 address by its /64) when known. */
  static keys(username: string, address: string | undefined): string[] {
    return [`account:${username.toLowerCase()}`, ...SignInThrottle.addressKeys(address)];
  }

  /** The address's key alone (an IPv6 address by its /64), for guesses that name no account (device user codes). */
  static addressKeys(address: string | undefined): string[] {
    return address ? [`address:${addressBucket(address)}`] : [];
  }

  /**
   * Whole seconds (rounded up) until another attempt for these keys may be checked; 0 when it may
   * be now. Attempts still being checked count as failures that would start their wait now, so a
   * batch sent at once is checked no further than the same attempts sent one by one.
   */
  wait(keys: string[], nowMs: number): number {
    let wait = 0;
    for (const key of keys) {
      const entry = this.entries.get(key);
      if (!entry) continue;
      if (entry.until > nowMs) wait = Math.max(wait, entry.until - nowMs);
      if (entry.pending > 0) wait = Math.max(wait, waitAfter(entry.failures + entry.pending));
    }
    return Math.ceil(wait / 1000);
  }

  /**
   * The seconds to wait, or, when the attempt may be checked now, the attempt, held as pending
   * until it is settled. Check and hold happen at once: no other attempt comes between them.
   */
  begin(keys: string[], nowMs: number): number | SignInAttempt {
    const wait = this.wait(keys, nowMs);
    if (wait > 0) return wait;
    for (const key of keys) this.touch(key, nowMs).pending++;
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      for (const key of keys) {
        const entry = this.entries.get(key);
        if (entry) entry.pending--;
      }
      outcome();
    };
    return {
      failed: (at) => settle(() => this.failed(keys, at)),
      succeeded: () => settle(() => keys.filter((key) => key.startsWith('account:')).forEach((key) => this.clearAccount(key))),
      abandoned: () => settle(() => {}),
    };
  }

  /** A failure, at `nowMs` (milliseconds): when it was found, so that its wait starts then. */
  failed(keys: string[], nowMs: number): void {
    for (const key of keys) {
      const entry = this.touch(key, nowMs);
      entry.failures++;
      const wait = waitAfter(entry.failures);
      if (wait > 0) entry.until = nowMs + wait;
    }
  }

  private clearAccount(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    // Attempts still being checked stay held: each may yet fail.
    if (entry.pending > 0) Object.assign(entry, { failures: 0, until: 0 });
    else this.entries.delete(key);
  }

  /**
   * The keys (`account:NAME`, `address:BUCKET`) whose next attempt must wait at `nowMs`, longest
   * wait first, at most `limit` of them: this process's view (each replica throttles on its own).
   */
  waiting(nowMs: number, limit: number): { key: string; seconds: number }[] {
    const found: { key: string; seconds: number }[] = [];
    for (const [key, entry] of this.entries) if (entry.until > nowMs) found.push({ key, seconds: Math.ceil((entry.until - nowMs) / 1000) });
    return found.sort((a, b) => b.seconds - a.seconds || (a.key < b.key ? -1 : 1)).slice(0, limit);
  }

  /** The entry for `key`, created if need be, moved to the most recently used end. */
  private touch(key: string, nowMs: number): Entry {
    const entry = this.entries.get(key) ?? { failures: 0, pending: 0, until: 0, last: nowMs };
    entry.last = nowMs;
    this.entries.delete(key);
    this.entries.set(key, entry);
    this.forget(nowMs);
    return entry;
  }

  /** From the least recently used end: what has been idle a day, then whatever is beyond the bound. */
  private forget(nowMs: number): void {
    for (const [key, entry] of this.entries) {
      const idle = nowMs - entry.last > FORGET_AFTER_SECONDS * 1000;
      if (!idle && this.entries.size <= MAX_ENTRIES) return;
      // An attempt being checked keeps its entry: it is recent anyway, and its settling needs it.
      if (entry.pending === 0) this.entries.delete(key);
    }
  }
}
