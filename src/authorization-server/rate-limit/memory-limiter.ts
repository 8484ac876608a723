import type { RateLimit } from './limits.js';
import { ALLOWED, RecentMap, refused, type RateDecision, type RateLimiter } from './limiter.js';

/**
 * Token buckets in this process's memory: exact, and no I/O on any request. Right for one
 * process (SQLite); replicas use the store-backed limiter instead.
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly buckets: RecentMap<{ level: number; at: number }>;
  private readonly perMs: number;

  constructor(
    private readonly limit: RateLimit,
    private readonly nowMs: () => number,
    maxKeys: number,
  ) {
    this.buckets = new RecentMap(maxKeys);
    this.perMs = limit.perMinute / 60_000;
  }

  get size(): number {
    return this.buckets.size;
  }

  take(key: string): RateDecision {
    const now = this.nowMs();
    const bucket = this.buckets.use(key, () => ({ level: this.limit.burst, at: now }));
    // Refilled for the time since it was last seen (a clock set back refills nothing).
    bucket.level = Math.min(this.limit.burst, bucket.level + Math.max(0, now - bucket.at) * this.perMs);
    bucket.at = Math.max(bucket.at, now);
    if (bucket.level >= 1) {
      bucket.level -= 1;
      return ALLOWED;
    }
    return refused((1 - bucket.level) / this.perMs);
  }
}
