import { createHash } from 'node:crypto';
import { OAuthError } from '../../core/errors.js';
import { hasRateBuckets } from '../../store/capabilities.js';
import type { Store } from '../../store/store.js';
import { addressBucket } from '../../core/client-address.js';
import { ALLOWED, type RateDecision, type RateLimiter } from './limiter.js';
import { RATE_LIMIT_NAMES, type RateLimitName, type ResolvedRateLimits } from './limits.js';
import { MemoryRateLimiter } from './memory-limiter.js';
import { StoreRateLimiter } from './store-limiter.js';
import type { AuditEvent, AuditLog } from '../audit.js';

/** At most one log line a minute per limit and address bucket, however hard a flood presses. */
const LOG_EVERY_MS = 60_000;
/**
 * Refusals counted toward their next line, per limit and address bucket: beyond this many, the
 * least recently refused are forgotten (their count since their last line goes unlogged), so a
 * flood from many addresses cannot grow the map.
 */
const MAX_REFUSALS_TRACKED = 10_000;
/** The one bucket of a limit shared by every address (no address bucket looks like this). */
const ALL_ADDRESSES = '*';

function retryAfter(seconds: number): { wait: string; headers: Record<string, string> } {
  return { wait: `${seconds} second${seconds === 1 ? '' : 's'}`, headers: { 'Retry-After': String(seconds) } };
}

/**
 * The server's limits per client address, each checked before its endpoint does any work. Over a
 * limit: 429 with Retry-After and `temporarily_unavailable`, the registered OAuth code for "try
 * again later" (RFC 6749 §4.1.2.1) that this server also answers when its store is down, so a
 * client that handles one handles both; the status and Retry-After say which and how long.
 * A request whose address is unknown (no `clientAddress`) is not limited by address; a limit
 * for all addresses together (checkTotal) counts it all the same.
 */
export class RateLimits {
  private readonly limiters = new Map<RateLimitName, RateLimiter>();
  /** By limit and address bucket, least recently refused first (a Map keeps insertion order). */
  private readonly refusals = new Map<string, { count: number; loggedAt: number }>();

  constructor(
    resolved: ResolvedRateLimits,
    store: Store,
    private readonly nowMs: () => number,
    private readonly log: AuditLog,
  ) {
    for (const name of RATE_LIMIT_NAMES) {
      const limit = resolved.limits[name];
      if (!limit) continue;
      this.limiters.set(
        name,
        resolved.shared && hasRateBuckets(store)
          ? new StoreRateLimiter(store, name, limit, nowMs, resolved.maxAddresses, log)
          : new MemoryRateLimiter(limit, nowMs, resolved.maxAddresses),
      );
    }
  }

  /** Spends one request of the address's `name` budget; throws the 429 when there is none. */
  async check(name: RateLimitName, address: string | undefined): Promise<void> {
    const limiter = this.limiters.get(name);
    if (!limiter || address === undefined) return;
    const bucket = addressBucket(address);
    const decision = await limiter.take(bucket);
    if (decision.allowed) return;
    this.noteRefusal(`${name} ${bucket}`, { event: 'rate_limited', limit: name, address: bucket });
    const { wait, headers } = retryAfter(decision.retryAfter);
    throw new OAuthError('temporarily_unavailable', `too many requests from this address; retry after ${wait}`, 429, headers).withUserMessage(
      `Too many attempts from your network. Wait ${wait}, then go back and try again.`,
    );
  }

  /** Spends one request of the budget `name` shares among all addresses; throws the 429 when there is none. */
  async checkTotal(name: RateLimitName, what: string): Promise<void> {
    const limiter = this.limiters.get(name);
    if (!limiter) return;
    const decision = await limiter.take(ALL_ADDRESSES);
    if (decision.allowed) return;
    this.noteRefusal(name, { event: 'rate_limited', limit: name });
    const { wait, headers } = retryAfter(decision.retryAfter);
    throw new OAuthError('temporarily_unavailable', `this server accepts no more ${what} for now; retry after ${wait}`, 429, headers).withUserMessage(
      `This server is busy. Wait ${wait}, then go back and try again.`,
    );
  }

  /**
   * Spends one request of a person's budget at a gateway path (the `gateway` limit): the decision,
   * for the gateway to answer in its own terms. The bucket's key is a hash of the two, so neither
   * the subject nor the path is kept in a shared store's buckets.
   */
  async takeGateway(path: string, subject: string): Promise<RateDecision> {
    const limiter = this.limiters.get('gateway');
    if (!limiter) return ALLOWED;
    const key = createHash('sha256')
      .update(JSON.stringify([path, subject]))
      .digest('base64url');
    const decision = await limiter.take(key);
    if (!decision.allowed) this.noteRefusal(`gateway ${key}`, { event: 'gateway_rate_limited', path, user_id: subject });
    return decision;
  }

  /** Logs the refusal, or counts it toward the next line for its key (a limit and what it counts by). */
  private noteRefusal(key: string, event: AuditEvent): void {
    const now = this.nowMs();
    const entry = this.refusals.get(key) ?? { count: 0, loggedAt: -Infinity };
    entry.count++;
    if (now - entry.loggedAt >= LOG_EVERY_MS) {
      this.log({ ...event, refused: entry.count });
      entry.count = 0;
      entry.loggedAt = now;
    }
    this.refusals.delete(key);
    this.refusals.set(key, entry);
    for (const oldest of this.refusals.keys()) {
      if (this.refusals.size <= MAX_REFUSALS_TRACKED) break;
      this.refusals.delete(oldest);
    }
  }
}
