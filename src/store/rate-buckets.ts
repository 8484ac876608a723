/**
 * The arithmetic of a shared token bucket (`Store.takeRateTokens`), once for every store: the
 * memory store runs `takeFromBucket`, the SQL stores run the same steps in one UPSERT
 * (sql/statements.ts). Levels are whole billionths of a token and times whole milliseconds, so
 * JavaScript, SQLite and PostgreSQL compute exactly alike, with integers.
 */
import type { RateTokensRequest, RateTokensResult } from './store.js';

export const NANO = 1_000_000_000;

export interface BucketRow {
  /** Billionths of a token in the bucket. */
  level: number;
  /** Milliseconds: when the level was computed. */
  updatedAt: number;
  /** Tokens the last request was granted. */
  granted: number;
  /** Seconds: by then the bucket is full again, and a full bucket is as good as none (the sweep deletes it). */
  expiresAt: number;
}

export interface BucketParams {
  key: string;
  want: number;
  /** Billionths of a token the bucket holds at most. */
  capacity: number;
  /** Billionths of a token gained per millisecond. */
  rate: number;
  /** Milliseconds from empty to full: longer idle refills no more (and cannot overflow). */
  fill_ms: number;
  now: number;
  /** Tokens granted from a bucket never seen (it starts full). */
  first: number;
  expires_at: number;
}

export function bucketParams(request: RateTokensRequest): BucketParams {
  const { key, want, burst, perSecond, nowMs } = request;
  if (!Number.isInteger(want) || want < 1) throw new Error('want must be a positive whole number');
  if (!Number.isInteger(burst) || burst < 1 || burst > 1_000_000) throw new Error('burst must be a whole number from 1 to 1,000,000');
  if (!(perSecond > 0)) throw new Error('perSecond must be positive');
  const capacity = burst * NANO;
  const rate = Math.max(1, Math.round((perSecond * NANO) / 1000));
  const fillMs = Math.ceil(capacity / rate);
  const now = Math.floor(nowMs);
  return { key, want, capacity, rate, fill_ms: fillMs, now, first: Math.min(want, burst), expires_at: Math.ceil((now + fillMs) / 1000) };
}

/** The row after a request: refilled for the time passed (never backwards), then as many tokens as it holds, up to `want`, taken. */
export function takeFromBucket(row: BucketRow | undefined, p: BucketParams): BucketRow {
  if (!row) return { level: p.capacity - p.first * NANO, updatedAt: p.now, granted: p.first, expiresAt: p.expires_at };
  const elapsed = Math.min(Math.max(p.now - row.updatedAt, 0), p.fill_ms);
  const refilled = Math.min(p.capacity, row.level + elapsed * p.rate);
  const granted = Math.min(p.want, Math.floor(refilled / NANO));
  return { level: refilled - granted * NANO, updatedAt: Math.max(row.updatedAt, p.now), granted, expiresAt: p.expires_at };
}

export function bucketResult(row: { granted: number; level: number }): RateTokensResult {
  return { granted: Number(row.granted), level: Number(row.level) / NANO };
}
