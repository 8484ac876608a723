/**
 * Revoked grants and access tokens, in memory, for a resource server's guard: a lookup per request
 * is two Map reads, never a store or network call. Fed by the authorization server's revocation
 * feed (in process, or polled from its /revocations endpoint).
 *
 * Bounded by time, not by count: an entry stays until every access token it affects has expired
 * (`expiresAt`, the latest `exp` among them) plus a tolerance for clocks, then `prune` drops it.
 * Dropping entries by count would quietly accept revoked tokens again.
 */

/** The private claim (RFC 9068 §2.2.3 allows more) naming the grant an access token belongs to; its name follows the Grant Management draft's `grant_id`. */
export const GRANT_ID_CLAIM = 'grant_id';

export interface Revocation {
  /** A whole grant (every token it issued), or one access token by its `jti`. */
  kind: 'grant' | 'token';
  id: string;
  /** Seconds since the epoch after which no token it affects is valid. */
  expiresAt: number;
}

export class RevocationSet {
  private readonly grants = new Map<string, number>();
  private readonly tokens = new Map<string, number>();

  /** `toleranceSeconds`: kept this long past `expiresAt`, covering the verifiers' clock tolerance. */
  constructor(private readonly toleranceSeconds = 60) {}

  add(revocation: Revocation): void {
    const map = revocation.kind === 'grant' ? this.grants : this.tokens;
    const until = revocation.expiresAt + this.toleranceSeconds;
    if ((map.get(revocation.id) ?? 0) < until) map.set(revocation.id, until);
  }

  /** Whether a token with these claims is revoked: its grant (`grant_id`) or itself (`jti`). */
  isRevoked(claims: Record<string, unknown>): boolean {
    const grantId = claims[GRANT_ID_CLAIM];
    if (typeof grantId === 'string' && this.grants.has(grantId)) return true;
    const jti = claims.jti;
    return typeof jti === 'string' && this.tokens.has(jti);
  }

  /** Drops entries whose tokens have all expired; returns how many. */
  prune(now: number): number {
    let dropped = 0;
    for (const map of [this.grants, this.tokens]) {
      for (const [id, until] of map) {
        if (until <= now) {
          map.delete(id);
          dropped++;
        }
      }
    }
    return dropped;
  }

  get size(): number {
    return this.grants.size + this.tokens.size;
  }
}
