/**
 * A revocation that resource servers must learn of: a grant (every access token it issued) or one
 * access token (by jti). Recorded only while some access token it affects is unexpired, and kept
 * until `expiresAt`, the latest `exp` among them; then the sweep removes it.
 */
export interface RevocationRecord {
  kind: 'grant' | 'token';
  id: string;
  revokedAt: number;
  expiresAt: number;
}

/**
 * The revocations resource servers must refuse before tokens expire, readable by other processes
 * (the revocation list endpoint, and `Revocations.start()` following the store). Without it, a
 * process knows only the revocations it made itself.
 */
export interface RevocationFeedStore {
  /** Revocations recorded at or after `since` that still affect a token unexpired at `now`, oldest first. */
  listRevocations(since: number, now: number): Promise<RevocationRecord[]>;
  /**
   * Where the database can tell other processes at once (PostgreSQL LISTEN/NOTIFY): calls
   * `onChange` after a revocation is committed anywhere, and after each reconnection (when some
   * may have been missed). Absent where polling listRevocations is the only way (SQLite, memory).
   * Resolves with a function that stops listening.
   */
  watchRevocations?(onChange: () => void): Promise<() => Promise<void>>;
}
