/**
 * Tokens asked of a shared token bucket, the rate limiter's budget that every replica of the
 * server spends from (the key is opaque to the store). The bucket holds at most `burst` tokens and
 * gains `perSecond` tokens a second; a bucket never seen before starts full.
 */
export interface RateTokensRequest {
  key: string;
  /** Tokens wanted: as many as the bucket holds, up to this, are granted. */
  want: number;
  burst: number;
  perSecond: number;
  /** Milliseconds since the epoch (finer than the seconds elsewhere: buckets refill continuously). */
  nowMs: number;
}

export interface RateTokensResult {
  /** Tokens granted, 0 to `want`. */
  granted: number;
  /** Tokens left in the bucket afterwards (a fraction when it is refilling). */
  level: number;
}

/** Rate limits shared by replicas: without it, each process keeps its own buckets in memory. */
export interface RateBucketStore {
  /** Takes tokens from a bucket in one atomic step (never more than it holds, however many replicas ask at once). */
  takeRateTokens(request: RateTokensRequest): Promise<RateTokensResult>;
}
