import type { JWK } from 'jose';
import { rotateSigningKeys as rotate } from '../authorization-server/keys.js';
import type { FullStore, SigningKeyRecord } from '../store/store.js';

/** A signing key as an operator sees it: its public half only. */
export interface PublicSigningKey {
  kid: string;
  alg: string;
  status: SigningKeyRecord['status'];
  createdAt: number;
  publicJwk: JWK;
}

const publicPart = (key: SigningKeyRecord): PublicSigningKey => ({
  kid: key.kid,
  alg: key.alg,
  status: key.status,
  createdAt: key.createdAt,
  publicJwk: JSON.parse(key.publicJwk) as JWK,
});

/** The signing keys (current, previous, retired), public parts only. */
export async function listSigningKeys(store: Pick<FullStore, 'listSigningKeys'>): Promise<PublicSigningKey[]> {
  return (await store.listSigningKeys()).map(publicPart);
}

/**
 * Makes a new current signing key; the one it replaces stays published (as previous) until the
 * next rotation, so tokens it signed still verify. Running servers on the store read it within
 * seconds.
 */
export async function rotateSigningKeys(store: Pick<FullStore, 'rotateSigningKey'>, now: number): Promise<PublicSigningKey> {
  return publicPart(await rotate(store, now));
}
