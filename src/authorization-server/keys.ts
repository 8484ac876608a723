import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { randomToken } from '../core/secrets.js';
import type { SigningKeyRecord, Store } from '../store/store.js';

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
export async function rotateSigningKeys(store: Store, now: number): Promise<SigningKeyRecord> {
  const key = await generateSigningKey(now);
  await store.rotateSigningKey(key);
  return key;
}

/**
 * The signing keys as the server uses them. Keys live in the store so every replica and the CLI
 * share them; a short cache keeps the token endpoint from reading them on every request while a
 * rotation made elsewhere is still picked up within seconds (the old key stays valid meanwhile).
 */
export class SigningKeys {
  private cached: { at: number; current: { kid: string; alg: string; key: CryptoKey }; published: JWK[] } | undefined;
  private loading: Promise<NonNullable<SigningKeys['cached']>> | undefined;

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
  async current(): Promise<{ kid: string; alg: string; key: CryptoKey }> {
    return (await this.load()).current;
  }

  /** Public keys to publish at jwks_uri: the current and the previous one. */
  async publicJwks(): Promise<{ keys: JWK[] }> {
    return { keys: (await this.load()).published };
  }

  /** Drops the cache, e.g. right after a rotation made by this process. */
  invalidate(): void {
    this.cached = undefined;
  }

  private async load(): Promise<NonNullable<SigningKeys['cached']>> {
    const now = this.now();
    if (this.cached && now - this.cached.at < this.cacheSeconds) return this.cached;
    this.loading ??= this.read(now).finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private async read(now: number): Promise<NonNullable<SigningKeys['cached']>> {
    let keys = await this.store.listSigningKeys();
    let current = keys.find((key) => key.status === 'current');
    if (!current) {
      current = await this.store.ensureSigningKey(await generateSigningKey(now));
      keys = await this.store.listSigningKeys();
    }
    const published = keys
      .filter((key) => key.status === 'current' || key.status === 'previous')
      .map((key) => JSON.parse(key.publicJwk) as JWK);
    const previous = keys.find((key) => key.status === 'previous');
    const signing = previous && now - current.createdAt < this.activationSeconds ? previous : current;
    const privateKey = (await importJWK(JSON.parse(signing.privateJwk) as JWK, signing.alg)) as CryptoKey;
    this.cached = { at: now, current: { kid: signing.kid, alg: signing.alg, key: privateKey }, published };
    return this.cached;
  }
}
