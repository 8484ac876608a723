/** What every rate limiter answers, and the bounded map of recent addresses they keep. */
export type RateDecision = { allowed: true } | { allowed: false; /** Whole seconds, at least 1. */ retryAfter: number };

export interface RateLimiter {
  /** Spends one request of `key`'s budget, or says how long until one is left. */
  take(key: string): RateDecision | Promise<RateDecision>;
}

export const ALLOWED: RateDecision = { allowed: true };

export function refused(waitMs: number): RateDecision {
  return { allowed: false, retryAfter: Math.max(1, Math.ceil(waitMs / 1000)) };
}

/**
 * A map that holds at most `max` keys, forgetting the least recently used: an attacker rotating
 * addresses cannot grow it. Forgetting an address forgives it (its bucket starts full again), so
 * `max` should exceed the addresses an instance sees in the time a bucket takes to refill.
 */
export class RecentMap<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}

  get size(): number {
    return this.map.size;
  }

  /** The value of `key`, made the most recent, or a new one from `create`. */
  use(key: string, create: () => V): V {
    let value = this.map.get(key);
    if (value !== undefined) this.map.delete(key);
    else {
      value = create();
      // A Map iterates in insertion order: the first key is the least recently used.
      if (this.map.size >= this.max) this.map.delete(this.map.keys().next().value!);
    }
    this.map.set(key, value);
    return value;
  }
}
