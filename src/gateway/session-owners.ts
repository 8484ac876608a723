/**
 * Who opened each MCP session through the gateway. The upstream knows no person (it never sees
 * their token), so a session id is all it goes by: without this, anyone with a token for the
 * same upstream who learned another person's session id could act in that session. A request
 * carrying a session id is forwarded only for the person and client that opened the session;
 * any other gets 404, which MCP clients answer by starting a session of their own.
 *
 * Held in memory, bounded: past `maxSessions`, or idle longer than `idleMs`, a session is
 * forgotten, and its next request gets the same 404.
 */
export class SessionOwners {
  private readonly owners = new Map<string, { owner: string; lastUsed: number }>();

  constructor(
    private readonly maxSessions: number,
    private readonly idleMs: number,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Whether `owner` may use this session now (and it is kept alive by the use). */
  allows(sessionId: string, owner: string): boolean {
    const entry = this.owners.get(sessionId);
    if (!entry) return false;
    const now = this.nowMs();
    if (now - entry.lastUsed > this.idleMs) {
      this.owners.delete(sessionId);
      return false;
    }
    if (entry.owner !== owner) return false;
    entry.lastUsed = now;
    // Maps iterate in insertion order: re-inserting keeps the least recently used first.
    this.owners.delete(sessionId);
    this.owners.set(sessionId, entry);
    return true;
  }

  /** Records the session the upstream just opened for `owner`; a session id already held by another is not taken over. */
  opened(sessionId: string, owner: string): void {
    const existing = this.owners.get(sessionId);
    if (existing && existing.owner !== owner) return;
    this.owners.delete(sessionId);
    while (this.owners.size >= this.maxSessions) this.owners.delete(this.owners.keys().next().value!);
    this.owners.set(sessionId, { owner, lastUsed: this.nowMs() });
  }

  closed(sessionId: string): void {
    this.owners.delete(sessionId);
  }

  get size(): number {
    return this.owners.size;
  }
}
