import { hkdfSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { jwtSigner, privateKeyFromJwk, verificationKeyFromJwk, type JwtVerificationKey } from '../core/jwt.js';
import { randomToken } from '../core/secrets.js';
import type { SigningKeyRecord, Store, StoreAdministration } from '../store/store.js';

export const DEFAULT_SIGNING_ALG = 'ES256';

/** Makes a new signing key pair as a store record (not yet saved). */
export async function generateSigningKey(now: number, alg = DEFAULT_SIGNING_ALG): Promise<SigningKeyRecord> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  const kid = randomToken(12);
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  const privateJwk: JWK = { ...(await exportJWK(privateKey)), kid, alg };
  return {
    kid,
    alg,
    privateJwk: JSON.stringify(privateJwk),
    publicJwk: JSON.stringify(publicJwk),
    status: 'current',
    createdAt: now,
  };
}

/** Saves a new current key; the old current stays published as previous until the next rotation. */
export async function rotateSigningKeys(store: Pick<StoreAdministration, 'rotateSigningKey'>, now: number): Promise<SigningKeyRecord> {
  const key = await generateSigningKey(now);
  await store.rotateSigningKey(key);
  return key;
}

/** The key access tokens are signed with now. */
export interface CurrentSigningKey {
  kid: string;
  alg: string;
  key: KeyObject;
  /** Signs claims as an access token (`typ` at+jwt); the header is encoded once per key. */
  sign(claims: Record<string, unknown>): string;
}

/** What is made once per key and kept across reloads. */
interface Imported {
  current?: CurrentSigningKey;
  verification?: JwtVerificationKey;
  /** MAC keys derived from it, by label. */
  mac?: Map<string, Buffer>;
}

interface Loaded {
  /** Read again from then on: after `cacheSeconds`, or sooner when a waiting key starts signing. */
  until: number;
  current: CurrentSigningKey;
  published: JWK[];
  verification: Map<string, JwtVerificationKey>;
  /** The published keys' records, the signing one first: what MAC keys are derived from. */
  macSources: SigningKeyRecord[];
}

/**
 * The signing keys as the server uses them. Keys live in the store so every replica and the CLI
 * share them; a short cache keeps the token endpoint from reading them on every request while a
 * rotation made elsewhere is still picked up within seconds (the old key stays valid meanwhile).
 */
export class SigningKeys {
  private cached: Loaded | undefined;
  private loading: Promise<Loaded> | undefined;
  /** Key objects by kid, kept across reloads: a key is imported once, not every `cacheSeconds`. */
  private readonly imported = new Map<string, Imported>();

  /**
   * @param activationSeconds a rotated key is published at once but signs only this long after it
   *   was made, so resource servers whose JWKS refetch is still cooling down (ours: 5 s) already
   *   know it when the first token signed with it arrives.
   */
  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    private readonly cacheSeconds = 5,
    private readonly activationSeconds = 10,
  ) {}

  /** The key to sign with now: the newest one, once its activation delay has passed. */
  async current(): Promise<CurrentSigningKey> {
    return (await this.load()).current;
  }

  /** The key to sign with while the cache is fresh, without a promise; undefined when it must be read. */
  currentIfCached(): CurrentSigningKey | undefined {
    const cached = this.cached;
    return cached && this.now() < cached.until ? cached.current : undefined;
  }

  /** The published (current or previous) key with this kid, to verify one of our own tokens. */
  async verificationKey(kid: string): Promise<JwtVerificationKey | undefined> {
    return (await this.load()).verification.get(kid);
  }

  /**
   * Keys for the MACs the server makes and checks itself (DPoP nonces, form tokens, a refresh
   * token's successor), one per published signing key, derived by HKDF from its private part under
   * `label`: every replica derives the same ones, none reveals a signing key, and they rotate with
   * the signing keys. The first is the signing key's, to make MACs with; every one is accepted.
   */
  async macKeys(label: string): Promise<readonly Buffer[]> {
    return this.macKeysOf(await this.load(), label);
  }

  /** macKeys while the cache is fresh, without a promise; undefined when the keys must be read. */
  macKeysIfCached(label: string): readonly Buffer[] | undefined {
    const cached = this.cached;
    return cached && this.now() < cached.until ? this.macKeysOf(cached, label) : undefined;
  }

  /** Public keys to publish at jwks_uri: the current and the previous one. */
  async publicJwks(): Promise<{ keys: JWK[] }> {
    return { keys: (await this.load()).published };
  }

  /** Drops the cache, e.g. right after a rotation made by this process. */
  invalidate(): void {
    this.cached = undefined;
  }

  private async load(): Promise<Loaded> {
    const now = this.now();
    if (this.cached && now < this.cached.until) return this.cached;
    this.loading ??= this.read(now).finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private async read(now: number): Promise<Loaded> {
    let keys = await this.store.listSigningKeys();
    let current = keys.find((key) => key.status === 'current');
    if (!current) {
      current = await this.store.ensureSigningKey(await generateSigningKey(now));
      keys = await this.store.listSigningKeys();
    }
    const publishedKeys = keys.filter((key) => key.status === 'current' || key.status === 'previous');
    const published = publishedKeys.map((key) => JSON.parse(key.publicJwk) as JWK);
    const verification = new Map(publishedKeys.map((key) => [key.kid, this.verificationFor(key)]));
    const previous = keys.find((key) => key.status === 'previous');
    const waiting = previous !== undefined && now - current.createdAt < this.activationSeconds;
    const signing = waiting ? previous : current;
    // A key waiting to sign starts exactly when its delay ends, not up to a cache period later.
    const until = waiting ? Math.min(now + this.cacheSeconds, current.createdAt + this.activationSeconds) : now + this.cacheSeconds;
    const macSources = [signing, ...publishedKeys.filter((key) => key.kid !== signing.kid)];
    this.cached = { until, current: this.signerFor(signing), published, verification, macSources };
    for (const kid of this.imported.keys()) if (!verification.has(kid)) this.imported.delete(kid);
    return this.cached;
  }

  private signerFor(record: SigningKeyRecord): CurrentSigningKey {
    const imported = this.importedFor(record.kid);
    if (!imported.current) {
      const key = privateKeyFromJwk(JSON.parse(record.privateJwk) as JsonWebKey, record.alg);
      imported.current = { kid: record.kid, alg: record.alg, key, sign: jwtSigner({ alg: record.alg, kid: record.kid, typ: 'at+jwt' }, key) };
    }
    return imported.current;
  }

  private verificationFor(record: SigningKeyRecord): JwtVerificationKey {
    const imported = this.importedFor(record.kid);
    imported.verification ??= verificationKeyFromJwk(JSON.parse(record.publicJwk) as Record<string, unknown>, record.alg);
    return imported.verification;
  }

  private macKeysOf(loaded: Loaded, label: string): readonly Buffer[] {
    return loaded.macSources.map((record) => {
      const imported = this.importedFor(record.kid);
      imported.mac ??= new Map();
      let derived = imported.mac.get(label);
      if (!derived) {
        const key = imported.current?.key ?? privateKeyFromJwk(JSON.parse(record.privateJwk) as JsonWebKey, record.alg);
        derived = macKeyOf(key, label);
        imported.mac.set(label, derived);
      }
      return derived;
    });
  }

  private importedFor(kid: string): Imported {
    let imported = this.imported.get(kid);
    if (!imported) {
      imported = {};
      this.imported.set(kid, imported);
    }
    return imported;
  }
}

/** A MAC key derived from a signing key's private part by HKDF-SHA256 under `label`: it reveals nothing of the signing key. */
export function macKeyOf(signingKey: KeyObject, label: string): Buffer {
  const secret = signingKey.export({ format: 'der', type: 'pkcs8' });
  return Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), label, 32));
}
