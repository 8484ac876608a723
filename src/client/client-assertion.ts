/**
 * private_key_jwt client authentication (RFC 7523 §2.2, OIDC Core §9): the client proves who it
 * is with a short-lived JWT signed by its private key, instead of a shared secret.
 */
import { createPrivateKey, KeyObject } from 'node:crypto';
import { importJWK, type JWK } from 'jose';
import * as oauth from 'oauth4webapi';
import { ClientError } from './errors.js';

/** A private key as callers hold one: a WebCrypto key, a Node KeyObject, a private JWK, or PKCS#8/SEC1/PKCS#1 PEM. */
export type ClientPrivateKey = CryptoKey | KeyObject | JWK | string;

/** A usable signing key and the algorithm it signs with. */
export interface SigningKey {
  key: CryptoKey;
  alg: string;
}

/** The algorithm a key signs with when the caller names none. */
function defaultAlg(key: KeyObject): string {
  switch (key.asymmetricKeyType) {
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (curve === 'prime256v1') return 'ES256';
      if (curve === 'secp384r1') return 'ES384';
      if (curve === 'secp521r1') return 'ES512';
      throw new ClientError('registration_unavailable', `the private key's curve ${curve} has no JWS algorithm; use P-256, P-384 or P-521`);
    }
    case 'rsa':
      return 'RS256';
    case 'rsa-pss':
      return 'PS256';
    case 'ed25519':
      return 'EdDSA';
    default:
      throw new ClientError('registration_unavailable', `a ${key.asymmetricKeyType} key cannot sign a client assertion; use an EC, RSA or Ed25519 private key`);
  }
}

function asKeyObject(key: KeyObject | JWK | string): KeyObject {
  if (key instanceof KeyObject) return key;
  try {
    return typeof key === 'string' ? createPrivateKey(key) : createPrivateKey({ key: key as JWK & { kty: string }, format: 'jwk' });
  } catch (error) {
    // The reason only: the key material never goes into a message.
    throw new ClientError('registration_unavailable', `the private key cannot be read (${(error as Error).message.split('\n')[0]})`);
  }
}

/** The algorithm a WebCrypto key was made for: it signs with that one only. */
function algOfCryptoKey(key: CryptoKey): string {
  const algorithm = key.algorithm as { name: string; namedCurve?: string; hash?: { name: string } };
  const hashBits = algorithm.hash?.name.replace('SHA-', '');
  const alg =
    algorithm.name === 'ECDSA'
      ? { 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512' }[algorithm.namedCurve ?? '']
      : algorithm.name === 'Ed25519'
        ? 'EdDSA'
        : algorithm.name === 'RSASSA-PKCS1-v1_5'
          ? `RS${hashBits}`
          : algorithm.name === 'RSA-PSS'
            ? `PS${hashBits}`
            : undefined;
  if (!alg) throw new ClientError('registration_unavailable', `a ${algorithm.name} key cannot sign a client assertion; use an EC, RSA or Ed25519 private key`);
  return alg;
}

/** The caller's key as a WebCrypto signing key for `privateKeyAlg` (or the key's own algorithm). */
export async function importSigningKey(privateKey: ClientPrivateKey, privateKeyAlg?: string): Promise<SigningKey> {
  if (privateKey instanceof CryptoKey) {
    if (privateKey.type !== 'private') throw new ClientError('registration_unavailable', 'the client assertion key must be a private key');
    const own = algOfCryptoKey(privateKey);
    // An Ed25519 key signs for both names of its algorithm (RFC 9864 adds "Ed25519" beside "EdDSA").
    if (privateKeyAlg && privateKeyAlg !== own && !(own === 'EdDSA' && privateKeyAlg === 'Ed25519')) {
      throw new ClientError('registration_unavailable', `the private key was made for ${own}, not ${privateKeyAlg}`);
    }
    return { key: privateKey, alg: privateKeyAlg ?? own };
  }
  const keyObject = asKeyObject(privateKey);
  if (keyObject.type !== 'private') throw new ClientError('registration_unavailable', 'the client assertion key must be a private key');
  const alg = privateKeyAlg ?? defaultAlg(keyObject);
  try {
    return { key: (await importJWK(keyObject.export({ format: 'jwk' }) as JWK, alg)) as CryptoKey, alg };
  } catch (error) {
    throw new ClientError('registration_unavailable', `the private key cannot sign with ${alg} (${(error as Error).message})`);
  }
}

/**
 * Refuses a key the authorization server says it will not take: private_key_jwt missing from the
 * methods it lists, or the algorithm missing from the signing algorithms it lists.
 */
export function checkServerAccepts(as: oauth.AuthorizationServer, alg: string): void {
  const methods = as.token_endpoint_auth_methods_supported;
  if (Array.isArray(methods) && !methods.includes('private_key_jwt')) {
    throw new ClientError('registration_unavailable', `${as.issuer} does not accept private_key_jwt client authentication (it lists ${methods.join(', ')})`);
  }
  const algs = as.token_endpoint_auth_signing_alg_values_supported;
  if (Array.isArray(algs) && !algs.includes(alg)) {
    throw new ClientError('registration_unavailable', `${as.issuer} does not accept client assertions signed with ${alg} (it lists ${algs.join(', ')})`);
  }
}

/**
 * The token request authentication: a fresh assertion for each request, `iss` and `sub` the client
 * id, `aud` the authorization server's issuer, a random `jti`, expiring 60 seconds after `iat`
 * (oauth4webapi's PrivateKeyJwt builds and signs it). The header names the algorithm checked
 * against the server's list: oauth4webapi would call every Ed25519 signature "Ed25519".
 */
export function privateKeyJwt(signing: SigningKey, keyId?: string): oauth.ClientAuth {
  return oauth.PrivateKeyJwt(keyId ? { key: signing.key, kid: keyId } : signing.key, {
    [oauth.modifyAssertion]: (header) => {
      header.alg = signing.alg;
    },
  });
}
