/**
 * What a guard beside this server (same process, or another process on the same store) needs to
 * refuse revoked tokens at once: an in-memory set (core/revocation-set.ts) fed three ways:
 * - this process's own revocations, added before the revoking request is answered;
 * - the store's revocation records, polled by cursor (every second on SQLite, whose other
 *   processes, such as `context-auth consents revoke`, cannot tell us otherwise);
 * - PostgreSQL's NOTIFY from other replicas, each a prompt to poll now (then the poll is only a
 *   slow fallback, and a catch-up after each reconnection).
 * The last two need the store's revocation feed: without one, only this process's revocations
 * are known here (other processes' tokens are refused by the store, at introspection and refresh).
 */
import { RevocationSet } from '../core/revocation-set.js';
import { hasRevocationFeed } from '../store/capabilities.js';
import type { Store } from '../store/store.js';
import type { AuditLog } from './audit.js';

/**
 * Each poll reads again the revocations recorded this many seconds before the newest one seen: a
 * revocation that took longer than that between its clock reading and its commit (a lock wait
 * under SQLite's 5 s busy timeout) would be missed; re-reading a few rows is cheap.
 */
export const CURSOR_OVERLAP_SECONDS = 15;

export interface RevocationsOptions {
  /** Poll interval where the store cannot announce revocations (SQLite). Default 1000 ms. */
  pollMs?: number;
  /** Poll interval where it can (PostgreSQL LISTEN/NOTIFY), a fallback only. Default 30 000 ms. */
  announcedPollMs?: number;
}

export class Revocations {
  private readonly set = new RevocationSet();
  private cursor = 0;
  private running: Promise<void> = Promise.resolve();
  private queued: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private unwatch: (() => Promise<void>) | undefined;
  private lastPrune = 0;

  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    private readonly accessTokenTtl: number,
    private readonly log: AuditLog,
  ) {}

  /** The guard's check: two Map lookups, no I/O. Takes what a verifier returns (its `claims`). */
  isRevoked(token: { claims: Record<string, unknown> }): boolean {
    return this.set.isRevoked(token.claims);
  }

  /** Revokes a grant in the store and, before returning, here: every token it issued is refused from now on. */
  async revokeGrant(grantId: string, now: number): Promise<void> {
    await this.store.revokeGrant(grantId, now);
    // Tokens issued from now on are refused by the store, so none outlives now + TTL.
    this.remember({ kind: 'grant', id: grantId, expiresAt: now + this.accessTokenTtl });
  }

  /** Revokes one access token (by jti) in the store and here. */
  async revokeAccessToken(jti: string, expiresAt: number, now: number): Promise<void> {
    await this.store.revokeAccessToken(jti, expiresAt, now);
    this.remember({ kind: 'token', id: jti, expiresAt });
  }

  /** Reads what was recorded since the last poll (by any process on the store). Polls run one at a time. */
  sync(): Promise<void> {
    // A sync asked for now must read what is committed now: it may join a poll that has not
    // started yet, never one under way.
    if (!this.queued) {
      const queued = this.running.then(() => {
        this.queued = undefined;
        return this.poll();
      });
      this.queued = queued;
      this.running = queued.catch(() => undefined);
    }
    return this.queued;
  }

  /**
   * Loads the current revocations and keeps following them: polling, and listening where the store
   * can announce. Nothing to follow where the store has no revocation feed.
   */
  async start(options: RevocationsOptions = {}): Promise<void> {
    const feed = this.store;
    if (this.timer || !hasRevocationFeed(feed)) return;
    await this.sync();
    const background = (): void => {
      this.sync().catch((error: unknown) => this.log({ event: 'revocations_poll_failed', message: (error as Error).message }));
    };
    if (feed.watchRevocations) this.unwatch = await feed.watchRevocations(background);
    this.timer = setInterval(background, this.unwatch ? (options.announcedPollMs ?? 30_000) : (options.pollMs ?? 1000));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.unwatch?.();
    this.unwatch = undefined;
  }

  /** How many revocations are held (for tests and metrics). */
  get size(): number {
    return this.set.size;
  }

  private async poll(): Promise<void> {
    if (!hasRevocationFeed(this.store)) return;
    const now = this.now();
    const rows = await this.store.listRevocations(Math.max(0, this.cursor - CURSOR_OVERLAP_SECONDS), now);
    for (const row of rows) {
      this.set.add(row);
      if (row.revokedAt > this.cursor) this.cursor = row.revokedAt;
    }
    this.set.prune(now);
    this.lastPrune = now;
  }

  private remember(revocation: { kind: 'grant' | 'token'; id: string; expiresAt: number }): void {
    this.set.add(revocation);
    const now = this.now();
    // Without polls (never started), prune now and then here instead.
    if (now - this.lastPrune >= 60) {
      this.set.prune(now);
      this.lastPrune = now;
    }
  }
}
