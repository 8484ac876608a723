/** What a verifier learned from a valid access token; handed to the request handler. */
export interface VerifiedToken {
  token: string;
  subject: string;
  clientId: string;
  scopes: string[];
  /** Every audience the token names; the guard checks that this server is among them. */
  audience: string[];
  issuer: string;
  /** Seconds since the epoch. */
  expiresAt: number;
  claims: Record<string, unknown>;
}

/** One interface for every way of checking a token (local JWT, introspection, your own). */
export interface TokenVerifier {
  /** Resolves with the token's facts, or throws InvalidTokenError (→ 401) or VerifierUnavailableError (→ 503). */
  verify(token: string): Promise<VerifiedToken>;
}

/**
 * Revocations the guard consults after every verification (cached or not): a lookup in memory,
 * never I/O. `revocationFeed()` polls a remote authorization server; an authorization server in
 * the same process offers its `revocations`.
 */
export interface RevocationCheck {
  isRevoked(token: VerifiedToken): boolean;
}

/** The token is not valid here: expired, forged, revoked, wrong issuer… (→ 401 invalid_token). */
export class InvalidTokenError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'InvalidTokenError';
  }
}

/** The verifier could not reach what it needs (JWKS, introspection endpoint): not the token's fault (→ 503). */
export class VerifierUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'VerifierUnavailableError';
  }
}

/** A bounded map whose entries each expire at their own time (verified tokens until exp, refusals briefly). */
export class ExpiringCache<T> {
  private readonly entries = new Map<string, { value: T; until: number }>();

  constructor(private readonly maxEntries = 10_000) {}

  get(key: string, now: number): T | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: T, until: number): void {
    if (this.entries.size >= this.maxEntries) {
      // Maps iterate in insertion order: the first key is the oldest entry.
      this.entries.delete(this.entries.keys().next().value!);
    }
    this.entries.set(key, { value, until });
  }

  clear(): void {
    this.entries.clear();
  }
}

/**
 * The scopes a token claims. Lenient on purpose: the issuer is trusted and its signature checked,
 * so an odd character must not turn a valid request into a 500; it only fails scope checks.
 */
export function scopesOf(claim: unknown): string[] {
  return typeof claim === 'string' ? [...new Set(claim.split(' ').filter((scope) => scope !== ''))] : [];
}
