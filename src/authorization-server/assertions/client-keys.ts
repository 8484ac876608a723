import { jwkFits, verificationKeyFromJwk, type JwtVerificationKey } from '../../core/jwt.js';
import { RemoteKeySet } from '../../core/remote-key-set.js';
import type { ClientRecord } from '../../store/store.js';
import type { DocumentFetchOptions } from '../client-documents/fetch-document.js';
import { outboundJsonFetch } from './outbound-fetch.js';
import type { AssertionKeyLookup, AssertionKeys } from './verify-assertion.js';
import type { AuditLog } from '../audit.js';

export interface ClientJwksOptions {
  /** Tests only: a client's `jwks_uri` may be http://127.0.0.1. Default false. */
  allowLoopbackHttp?: boolean;
  /** Longest wait for a client's key set, in milliseconds. Default 5000 (connecting: at most 3000). */
  timeoutMs?: number;
  /** Replaces the HTTP request function: for tests that must prove no connection is attempted. */
  request?: DocumentFetchOptions['request'];
}

/** Key sets kept in memory, least recently used dropped first: a bound on what registrations can make us hold. */
const REMOTE_SETS = 1000;
/** A key set is fetched again after this long, and at most once per cooldown for an unknown kid (a rotation). */
const MAX_AGE_MS = 5 * 60_000;
/** Registered keys kept imported, oldest dropped first. */
const IMPORTED_KEYS = 10_000;
const COOLDOWN_MS = 30_000;

/**
 * The public keys of private_key_jwt clients (RFC 7523 §2.2): the `jwks` they registered, or the
 * set at their `jwks_uri`, fetched with the SSRF defences of client documents and cached per URL.
 * A set that cannot be fetched is logged here with its cause; the client learns only that its
 * keys could not be fetched.
 */
export class ClientKeys {
  /** Whether registrations may name a `jwks_uri` at http://127.0.0.1 (tests). */
  readonly allowLoopbackHttp: boolean;
  private readonly fetch: typeof fetch;
  private readonly timeoutMs: number;
  private readonly sets = new Map<string, RemoteKeySet>();
  /** Registered keys imported once, by algorithm and JWK: importing one costs more than the verification itself. */
  private readonly imported = new Map<string, JwtVerificationKey>();

  /**
   * `documentsAtLoopback`: the client documents' test switch is on, under which the documents may
   * name a `jwks_uri` at http://127.0.0.1 (registrations still may not, unless `allowLoopbackHttp`).
   * The fetch only ever sees URIs that one of the two checks accepted.
   */
  constructor(
    options: ClientJwksOptions,
    private readonly log: AuditLog,
    { documentsAtLoopback = false }: { documentsAtLoopback?: boolean } = {},
  ) {
    this.allowLoopbackHttp = options.allowLoopbackHttp ?? false;
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.fetch = outboundJsonFetch({
      allowLoopbackHttp: this.allowLoopbackHttp || documentsAtLoopback,
      totalTimeoutMs: this.timeoutMs,
      connectTimeoutMs: Math.min(3000, this.timeoutMs),
      ...(options.request ? { request: options.request } : {}),
    });
  }

  /** How to find the key that verifies this client's assertion. */
  keysOf(client: ClientRecord): AssertionKeys {
    const { jwks, jwks_uri: jwksUri } = client.metadata;
    if (typeof jwksUri === 'string') return this.remoteKeys(client.clientId, jwksUri);
    const keys = (jwks as { keys?: unknown } | undefined)?.keys;
    if (Array.isArray(keys)) return (alg, kid) => this.inlineLookup(keys as Record<string, unknown>[], alg, kid);
    return () => ({ defect: { code: 'key', description: 'the client has no registered keys (jwks or jwks_uri)' } });
  }

  private remoteKeys(clientId: string, url: string): AssertionKeys {
    const set = this.remoteSet(url);
    return async (alg, kid) => {
      const found = set.known(alg, kid) ?? (await set.lookup(alg, kid));
      if (!('problem' in found) || found.problem !== 'unavailable') return found;
      const { reason, cause } = found;
      this.log({ event: 'client_jwks_failed', client_id: clientId, jwks_uri: url, reason, ...(cause ? { cause } : {}) });
      return { defect: { code: 'keys_unavailable', description: "the client's keys could not be fetched from its jwks_uri" } };
    };
  }

  private remoteSet(url: string): RemoteKeySet {
    let set = this.sets.get(url);
    if (set) this.sets.delete(url);
    else set = new RemoteKeySet(url, { cooldownMs: COOLDOWN_MS, maxAgeMs: MAX_AGE_MS, timeoutMs: this.timeoutMs, fetch: this.fetch });
    this.sets.set(url, set);
    if (this.sets.size > REMOTE_SETS) this.sets.delete(this.sets.keys().next().value!);
    return set;
  }

  /** The one registered key that fits the header's alg and kid. */
  private inlineLookup(keys: Record<string, unknown>[], alg: string, kid: string | undefined): AssertionKeyLookup {
    const candidates = keys.filter((jwk) => jwkFits(jwk, alg, kid));
    if (candidates.length === 0) return { problem: 'unknown' };
    if (candidates.length > 1) return { problem: 'ambiguous' };
    const cacheKey = `${alg}\n${JSON.stringify(candidates[0])}`;
    let key = this.imported.get(cacheKey);
    if (!key) {
      try {
        key = verificationKeyFromJwk(candidates[0]!, alg);
      } catch {
        return { defect: { code: 'key', description: `the client's registered key cannot verify ${alg}` } };
      }
      if (this.imported.size >= IMPORTED_KEYS) this.imported.delete(this.imported.keys().next().value!);
      this.imported.set(cacheKey, key);
    }
    return { key };
  }
}
