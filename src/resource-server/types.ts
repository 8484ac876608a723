import type { Defect, Result } from '../core/result.js';
import { actorChain } from '../core/token-exchange.js';

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
  /**
   * RFC 9449 §6: the JWK thumbprint of the key the token is bound to (`cnf.jkt`), for a
   * DPoP-bound token; such a token is taken only with a proof signed by that key. A custom
   * verifier may leave it out: the guard then reads `claims.cnf`.
   */
  jkt?: string;
  /**
   * RFC 8693 §4.1: for a delegated token (`act`), the clients acting for `subject`, the one that
   * presents it first, then each that acted before it. Absent for a token no one acts through.
   */
  actors?: string[];
  claims: Record<string, unknown>;
}

/**
 * Why a verifier refuses a token: `invalid_token` when the token is not valid here (expired,
 * forged, revoked, from another issuer… → 401, the description in the challenge), `unavailable`
 * when the verifier could not reach what it needs (the JWKS, the introspection endpoint → 503):
 * not the token's fault.
 */
export type TokenDefect = Defect<'invalid_token' | 'unavailable'>;

/** What `verify` resolves with: the token's facts, or the defect that refuses it. */
export type TokenVerification = Result<VerifiedToken, TokenDefect>;

/** One interface for every way of checking a token (local JWT, introspection, your own). */
export interface TokenVerifier {
  /**
   * Resolves with `{ ok: true, value }` (the token's facts) or `{ ok: false, defect }`. A verifier
   * that throws has failed, not refused: the request is not answered by the guard.
   */
  verify(token: string): Promise<TokenVerification>;
  /**
   * Optional: the facts of a token this verifier verified before and still remembers as valid,
   * at once (no promise); undefined for any other token, which then goes through verify(). The
   * guard answers a repeated token with this, so it must hold only tokens verify() accepted.
   */
  cached?(token: string): VerifiedToken | undefined;
}

/**
 * Revocations the guard consults after every verification (cached or not): a lookup in memory,
 * never I/O. `revocationFeed()` polls a remote authorization server; an authorization server in
 * the same process offers its `revocations`.
 */
export interface RevocationCheck {
  isRevoked(token: VerifiedToken): boolean;
}

/** A refusal for `verify` to resolve with. */
export function tokenRefused(code: TokenDefect['code'], description: string): { ok: false; defect: TokenDefect } {
  return { ok: false, defect: { code, description } };
}

/**
 * A bounded map whose entries each expire at their own time (verified tokens until exp, refusals
 * briefly). When full, the oldest entry not used since it was stored (or since its last second
 * chance) goes first, an approximation of least recently used ("second chance"): the tokens of
 * clients still at work stay while idle ones leave, and a hit only sets a flag (moving the entry
 * to the end of the Map on every hit costs more than the lookup).
 */
export class ExpiringCache<T> {
  private readonly entries = new Map<string, { value: T; until: number; used: boolean }>();
  /** The latest expiry among the entries: past it, every one has expired. */
  private latestUntil = -Infinity;

  constructor(private readonly maxEntries = 10_000) {}

  get(key: string, now: number): T | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until <= now) {
      this.entries.delete(key);
      return undefined;
    }
    entry.used = true;
    return entry.value;
  }

  set(key: string, value: T, until: number): void {
    this.entries.delete(key);
    // Maps iterate in insertion order: the first key is the oldest entry. A used one is moved to
    // the end with its flag cleared; a full pass clears every flag, so this ends.
    while (this.entries.size >= this.maxEntries) {
      const [oldestKey, oldest] = this.entries.entries().next().value!;
      this.entries.delete(oldestKey);
      if (oldest.used) {
        oldest.used = false;
        this.entries.set(oldestKey, oldest);
      }
    }
    this.entries.set(key, { value, until, used: false });
    if (until > this.latestUntil) this.latestUntil = until;
  }

  /** Whether any entry is still live at `now` (once every one has expired, they are all dropped here). */
  holdsAnyAt(now: number): boolean {
    if (this.entries.size > 0 && this.latestUntil <= now) this.clear();
    return this.entries.size > 0;
  }

  clear(): void {
    this.entries.clear();
    this.latestUntil = -Infinity;
  }
}

/**
 * The scopes a token claims. Lenient on purpose: the issuer is trusted and its signature checked,
 * so an odd character must not turn a valid request into a 500; it only fails scope checks.
 */
export function scopesOf(claim: unknown): string[] {
  if (typeof claim !== 'string') return [];
  const scopes: string[] = [];
  for (const scope of claim.split(' ')) if (scope !== '' && !scopes.includes(scope)) scopes.push(scope);
  return scopes;
}

/** The `cnf.jkt` of a token's claims (or an introspection answer), when it is a string. */
export function confirmationThumbprint(cnf: unknown): string | undefined {
  if (typeof cnf !== 'object' || cnf === null) return undefined;
  const jkt = (cnf as { jkt?: unknown }).jkt;
  return typeof jkt === 'string' && jkt !== '' ? jkt : undefined;
}

/** `jkt` for a DPoP-bound token's facts, nothing for an unbound one (the field absent, not undefined). */
export function withThumbprint(cnf: unknown): { jkt?: string } {
  const jkt = confirmationThumbprint(cnf);
  return jkt === undefined ? {} : { jkt };
}

/** `actors` for a delegated token's facts (the field absent for a token without `act`); undefined when `act` is malformed, which refuses the token. */
export function withActors(act: unknown): { actors?: string[] } | undefined {
  const chain = actorChain(act);
  if (!chain) return undefined;
  return chain.length === 0 ? {} : { actors: chain };
}
