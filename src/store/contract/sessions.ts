export interface SessionRecord {
  idHash: string;
  userId: string;
  authTime: number;
  createdAt: number;
  expiresAt: number;
  /** The upstream sign-in this session came from, if any: the session ends with it. */
  upstreamSessionId: string | null;
}

/** One sign-in at an upstream provider, behind a browser session and the grants it led to. */
export interface UpstreamSessionRecord {
  id: string;
  userId: string;
  provider: string;
  subject: string;
  /** The provider's tokens, sealed (core/secret-box.ts) with `id` as the owner. */
  sealedTokens: string;
  createdAt: number;
  /** The maximum lifetime: after it, its grants end and the person signs in upstream again. */
  expiresAt: number;
}

/** Sessions: a browser's sign-in here, and a sign-in at an upstream provider (third-party authorization). */
export interface SessionStore {
  /** Records the session and, where the store keeps it, the user's last sign-in (the session's creation). */
  createSession(session: SessionRecord): Promise<void>;
  getSession(idHash: string, now: number): Promise<SessionRecord | undefined>;
  createUpstreamSession(session: UpstreamSessionRecord): Promise<void>;
  getUpstreamSession(id: string): Promise<UpstreamSessionRecord | undefined>;
  /** Replaces the sealed tokens (after the provider renewed them, or to re-seal under a new key). */
  updateUpstreamSessionTokens(id: string, sealedTokens: string): Promise<void>;
}

/** Signing out (capability `signOut`): without it the account page and the console, whose sign-out button needs it, are not served. */
export interface SignOutStore {
  /** Ends one browser session; nothing when it is already gone. */
  deleteSession(idHash: string): Promise<void>;
}
