import { generateKeyPairSync, type JsonWebKey } from 'node:crypto';

/** The kinds of key pair this package makes. */
export type KeyPairKind = { type: 'ec'; namedCurve: 'P-256' | 'P-384' | 'P-521' } | { type: 'ed25519' } | { type: 'rsa'; modulusLength: number };

/**
 * A new key pair as JWKs, encoded by the generation itself. Exporting a KeyObject that
 * generateKeyPairSync returned can hang Node 20 for good: a garbage collection during the export
 * destroys the finished generation job, whose destructor waits for the lock the export holds.
 */
export function generateJwkPair(kind: KeyPairKind): { privateJwk: JsonWebKey; publicJwk: JsonWebKey } {
  const { type, ...options } = kind;
  const encoding = { publicKeyEncoding: { format: 'jwk' }, privateKeyEncoding: { format: 'jwk' } };
  // @types/node's overloads know no 'jwk' encoding for generation; Node has taken it since 15.
  const generate = generateKeyPairSync as unknown as (type: string, options: object) => { privateKey: JsonWebKey; publicKey: JsonWebKey };
  const { privateKey, publicKey } = generate(type, { ...options, ...encoding });
  return { privateJwk: privateKey, publicJwk: publicKey };
}
