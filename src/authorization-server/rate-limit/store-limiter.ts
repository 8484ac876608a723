import type { RateBucketStore } from '../../store/store.js';
import type { RateLimit } from './limits.js';
import { ALLOWED, RecentMap, refused, type RateDecision, type RateLimiter } from './limiter.js';
import type { AuditLog } from '../audit.js';

/** Tokens one lease takes at most: a thirtieth of the burst, 1 to 10. */
export function leaseSize(limit: RateLimit): number {
  return Math.max(1, Math.min(10, Math.floor(limit.burst / 30)));
}

interface Entry {
  /** Tokens taken from the shared bucket and not yet spent. */
  leased: number;
  /** Milliseconds: until then the shared bucket was empty; requests are refused here, with no store round trip. */
  blockedUntil: number;
  fetching: Promise<void> | undefined;
}

/**
 * Token buckets in the store, shared by every replica on one database. A replica takes tokens
 * from the shared bucket in small leases (1 for register and sign-in, so every one of those asks
 * the store; up to 10 for the token endpoint, so a busy address costs one store round trip per
 * ten requests) and spends them locally. An empty bucket is remembered until it has a token
 * again: a flood is refused from memory, one store round trip per Retry-After.
 *
 * Never more than the limit is admitted across replicas. The slack is the other way: a replica
 * may hold up to one lease of an address unspent, so that address may be refused up to
 * (replicas − 1) × lease requests early. If the store cannot be reached, requests go through
 * (they then meet the store themselves, and get its 503): the limiter never causes a 5xx.
 */
export class StoreRateLimiter implements RateLimiter {
  private readonly entries: RecentMap<Entry>;
  private readonly lease: number;

  constructor(
    private readonly store: RateBucketStore,
    private readonly name: string,
    private readonly limit: RateLimit,
    private readonly nowMs: () => number,
    maxKeys: number,
    private readonly log: AuditLog,
  ) {
    this.entries = new RecentMap(maxKeys);
    this.lease = leaseSize(limit);
  }

  get size(): number {
    return this.entries.size;
  }

  take(key: string): RateDecision | Promise<RateDecision> {
    const entry = this.entries.use(key, () => ({ leased: 0, blockedUntil: 0, fetching: undefined }));
    if (entry.leased >= 1) {
      entry.leased--;
      return ALLOWED;
    }
    const now = this.nowMs();
    if (entry.blockedUntil > now) return refused(entry.blockedUntil - now);
    // One lease at a time per address: requests arriving meanwhile wait for it, then try again.
    entry.fetching ??= this.fetch(key, entry, now).finally(() => (entry.fetching = undefined));
    return entry.fetching.then(
      () => this.take(key),
      () => ALLOWED,
    );
  }

  private async fetch(key: string, entry: Entry, now: number): Promise<void> {
    const perSecond = this.limit.perMinute / 60;
    try {
      const { granted, level } = await this.store.takeRateTokens({
        key: `${this.name}:${key}`,
        want: this.lease,
        burst: this.limit.burst,
        perSecond,
        nowMs: now,
      });
      entry.leased += granted;
      if (granted === 0) entry.blockedUntil = now + ((1 - level) / perSecond) * 1000;
    } catch (error) {
      this.log({ event: 'rate_limit_unavailable', limit: this.name, message: error instanceof Error ? error.message : String(error) });
      throw error;
    }
  }
}
