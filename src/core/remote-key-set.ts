import { jwkFits, verificationKeyFromJwk, type JwtVerificationKey } from './jwt.js';

export interface RemoteKeySetOptions {
  /** Least time between two fetches, ms: a token naming an unknown key refetches at most this often. */
  cooldownMs: number;
  /** How long a fetched set is used before it is fetched again on the next lookup, ms. */
  maxAgeMs: number;
  timeoutMs: number;
  /** Fetches the set: the global fetch, or one that refuses what a stranger's URL must not reach. */
  fetch: typeof fetch;
}

interface Entry {
  jwk: Record<string, unknown>;
  /** Imported once per algorithm it is asked for: a lookup after the first is a Map read. */
  keys: Map<string, JwtVerificationKey>;
}

/**
 * Result of a lookup: the key, or why there is none. `unknown` may change after a rotation;
 * `unavailable` (the set could not be fetched or read, `reason` and the network's `cause` for the
 * log) is not the token's fault.
 */
export type KeyLookup = { key: JwtVerificationKey } | { problem: 'unknown' | 'ambiguous' } | KeySetUnavailable;

export interface KeySetUnavailable {
  problem: 'unavailable';
  reason: string;
  cause?: string;
}

/**
 * An issuer's JWKS (RFC 7517), fetched on first use and whenever it is older than `maxAgeMs`,
 * refetched when a token names a key it lacks (a rotation) unless it was fetched less than
 * `cooldownMs` ago, so a flood of made-up kids costs one fetch per cooldown. Keys are imported
 * into node:crypto key objects once and kept with the set. Concurrent lookups share one fetch.
 * A JWKS that cannot be fetched or read is not the token's fault: the lookup says `unavailable`.
 */
export class RemoteKeySet {
  private entries: Entry[] | undefined;
  private fetchedAt = -Infinity;
  private pending: Promise<KeySetUnavailable | undefined> | undefined;

  constructor(
    private readonly url: string,
    private readonly options: RemoteKeySetOptions,
  ) {}

  /** The key when the set in memory is fresh and has it: no promise on the hot path. */
  known(alg: string, kid: string | undefined): KeyLookup | undefined {
    if (!this.entries || Date.now() >= this.fetchedAt + this.options.maxAgeMs) return undefined;
    const found = this.find(alg, kid);
    return 'key' in found ? found : undefined;
  }

  async lookup(alg: string, kid: string | undefined): Promise<KeyLookup> {
    if (!this.entries || Date.now() >= this.fetchedAt + this.options.maxAgeMs) {
      const unavailable = await this.reload();
      if (unavailable) return unavailable;
    }
    const found = this.find(alg, kid);
    if ('problem' in found && found.problem === 'unknown' && Date.now() >= this.fetchedAt + this.options.cooldownMs) {
      return (await this.reload()) ?? this.find(alg, kid);
    }
    return found;
  }

  private find(alg: string, kid: string | undefined): KeyLookup {
    const candidates = this.entries!.filter((entry) => jwkFits(entry.jwk, alg, kid));
    if (candidates.length === 0) return { problem: 'unknown' };
    if (candidates.length > 1) return { problem: 'ambiguous' };
    const entry = candidates[0]!;
    let key = entry.keys.get(alg);
    if (!key) {
      try {
        key = verificationKeyFromJwk(entry.jwk, alg);
      } catch (error) {
        return unavailable('the JWKS holds a key that cannot be used', error);
      }
      entry.keys.set(alg, key);
    }
    return { key };
  }

  /** Fetches the set again (one fetch for concurrent callers); why it could not, or undefined. */
  private reload(): Promise<KeySetUnavailable | undefined> {
    this.pending ??= this.fetchSet().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async fetchSet(): Promise<KeySetUnavailable | undefined> {
    let response: Response;
    try {
      response = await this.options.fetch(this.url, {
        method: 'GET',
        redirect: 'manual',
        headers: { accept: 'application/json, application/jwk-set+json' },
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (error) {
      return unavailable('cannot fetch the signing keys', error);
    }
    if (response.status !== 200) return unavailable(`the JWKS answered ${response.status}`);
    const body = (await response.json().catch(() => undefined)) as { keys?: unknown } | undefined;
    const keys = body?.keys;
    if (
      typeof body !== 'object' ||
      body === null ||
      !Array.isArray(keys) ||
      !keys.every((key) => typeof key === 'object' && key !== null && !Array.isArray(key))
    ) {
      return unavailable('the JWKS is not a JSON Web Key Set');
    }
    // Keep the imported key objects of keys still published: a refetch does not re-import them.
    const previous = new Map((this.entries ?? []).map((entry) => [JSON.stringify(entry.jwk), entry.keys]));
    this.entries = (keys as Record<string, unknown>[]).map((jwk) => ({ jwk, keys: previous.get(JSON.stringify(jwk)) ?? new Map() }));
    this.fetchedAt = Date.now();
    return undefined;
  }
}

function unavailable(reason: string, cause?: unknown): KeySetUnavailable {
  return cause instanceof Error ? { problem: 'unavailable', reason, cause: cause.message } : { problem: 'unavailable', reason };
}
