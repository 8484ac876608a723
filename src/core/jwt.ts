import { isUtf8 } from 'node:buffer';
import { constants, createPrivateKey, createPublicKey, sign, verify, type JsonWebKey, type KeyObject } from 'node:crypto';

/**
 * Compact JWTs (RFC 7515/7519) signed and verified with node:crypto key objects: synchronous,
 * no WebCrypto job dispatch, the encoded header made once per key. Only asymmetric algorithms
 * exist here, so `none` and HMAC (keyed with a public key: algorithm confusion) are unknown
 * algorithms, refused before any key is looked at. Pure functions, no I/O: callers find the
 * key (their JWKS, their store) and check the claims only they know about (iss, aud, scope).
 */

interface Algorithm {
  kty: 'EC' | 'RSA' | 'OKP';
  crv?: string;
  /** Digest for node:crypto's sign/verify; null for EdDSA, which hashes by itself. */
  hash: string | null;
  /** Exact signature length in bytes (EC, EdDSA); RSA signatures are as long as the modulus. */
  signatureBytes?: number;
  padding?: number;
  saltLength?: number;
}

const ec = (crv: string, bits: number, signatureBytes: number): Algorithm => ({ kty: 'EC', crv, hash: `sha${bits}`, signatureBytes });
const rsa = (bits: number): Algorithm => ({ kty: 'RSA', hash: `sha${bits}`, padding: constants.RSA_PKCS1_PADDING });
const pss = (bits: number): Algorithm => ({ kty: 'RSA', hash: `sha${bits}`, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: bits / 8 });
const eddsa: Algorithm = { kty: 'OKP', crv: 'Ed25519', hash: null, signatureBytes: 64 };

/** The JWS algorithms we sign and verify with (RFC 7518 §3.3–3.5, RFC 8037), by name. A Map: no prototype names. */
const ALGORITHMS = new Map<string, Algorithm>([
  ['ES256', ec('P-256', 256, 64)],
  ['ES384', ec('P-384', 384, 96)],
  ['ES512', ec('P-521', 512, 132)],
  ['RS256', rsa(256)],
  ['RS384', rsa(384)],
  ['RS512', rsa(512)],
  ['PS256', pss(256)],
  ['PS384', pss(384)],
  ['PS512', pss(512)],
  ['EdDSA', eddsa],
  ['Ed25519', eddsa],
]);

/** RFC 7518 §3.3: RSA keys of 2048 bits or more. */
const MIN_RSA_BITS = 2048;

/** Every algorithm we verify, for metadata such as `token_endpoint_auth_signing_alg_values_supported`. */
export const SUPPORTED_JWS_ALGORITHMS: readonly string[] = Object.freeze([...ALGORITHMS.keys()]);

export function isSupportedJwsAlgorithm(alg: unknown): alg is string {
  return typeof alg === 'string' && ALGORITHMS.has(alg);
}

function signOptions(algorithm: Algorithm, key: KeyObject) {
  return {
    key,
    ...(algorithm.kty === 'EC' ? { dsaEncoding: 'ieee-p1363' as const } : {}),
    ...(algorithm.padding === undefined ? {} : { padding: algorithm.padding }),
    ...(algorithm.saltLength === undefined ? {} : { saltLength: algorithm.saltLength }),
  };
}

/** Whether `key` is of the type `alg` needs (an ES256 token must not be checked with a P-384 or RSA key). */
function keyFits(algorithm: Algorithm, key: KeyObject): boolean {
  const details = key.asymmetricKeyDetails;
  switch (algorithm.kty) {
    case 'EC':
      return key.asymmetricKeyType === 'ec' && details?.namedCurve === { 'P-256': 'prime256v1', 'P-384': 'secp384r1', 'P-521': 'secp521r1' }[algorithm.crv!];
    case 'RSA':
      return (key.asymmetricKeyType === 'rsa' || key.asymmetricKeyType === 'rsa-pss') && (details?.modulusLength ?? 0) >= MIN_RSA_BITS;
    case 'OKP':
      return key.asymmetricKeyType === 'ed25519';
  }
}

// --- Keys ------------------------------------------------------------------------------------

/** A signing key from its private JWK, for `alg`; throws when the two do not fit together. */
export function privateKeyFromJwk(jwk: JsonWebKey, alg: string): KeyObject {
  const algorithm = ALGORITHMS.get(alg);
  if (!algorithm) throw new Error(`unsupported signing algorithm ${alg}`);
  const key = createPrivateKey({ key: jwk, format: 'jwk' });
  if (!keyFits(algorithm, key)) throw new Error(`the key does not fit ${alg}`);
  return key;
}

/**
 * Whether a published JWK may verify a token whose header names `alg` and `kid` (RFC 7517 §4):
 * the same key type and curve as `alg`, its own `alg` (if any) the same, `use` sig, `key_ops`
 * allowing verify, and the kid equal when the token names one.
 */
export function jwkFits(jwk: Record<string, unknown>, alg: string, kid: string | undefined): boolean {
  const algorithm = ALGORITHMS.get(alg);
  if (!algorithm) return false;
  if (jwk.kty !== algorithm.kty || (algorithm.crv !== undefined && jwk.crv !== algorithm.crv)) return false;
  if (kid !== undefined && jwk.kid !== kid) return false;
  if (jwk.alg !== undefined && jwk.alg !== alg) return false;
  if (jwk.use !== undefined && jwk.use !== 'sig') return false;
  const ops = jwk.key_ops;
  return ops === undefined || (Array.isArray(ops) && ops.includes('verify'));
}

/**
 * A public key prepared to verify tokens of one algorithm: checked once to fit it, with its
 * node:crypto options and signature length worked out, so a verification does no more than
 * compare the header's `alg` and the signature's length and call crypto.verify.
 */
export interface JwtVerificationKey {
  readonly alg: string;
  readonly key: KeyObject;
  readonly signatureBytes: number;
  readonly options: ReturnType<typeof signOptions>;
  readonly hash: string | null;
}

/** A verification key for `alg` from a public key object; throws when the key does not fit `alg`. */
export function verificationKey(key: KeyObject, alg: string): JwtVerificationKey {
  const algorithm = ALGORITHMS.get(alg);
  if (!algorithm) throw new Error(`unsupported algorithm ${alg}`);
  if (key.type !== 'public' || !keyFits(algorithm, key)) throw new Error(`the key does not fit ${alg}`);
  const signatureBytes = algorithm.signatureBytes ?? Math.ceil(key.asymmetricKeyDetails!.modulusLength! / 8);
  return { alg, key, signatureBytes, options: signOptions(algorithm, key), hash: algorithm.hash };
}

/** A verification key from a published JWK; throws on a private key (a JWKS publishes public keys only) or one unfit for `alg`. */
export function verificationKeyFromJwk(jwk: Record<string, unknown>, alg: string): JwtVerificationKey {
  if ('d' in jwk) throw new Error('a published key must not be private');
  return verificationKey(createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' }), alg);
}

// --- Signing ---------------------------------------------------------------------------------

/**
 * A signer for one key: the protected header (`alg`, `kid` when it has one, `typ`, and the public
 * `jwk` for a DPoP proof) is encoded once, each call encodes the claims and signs. Synchronous: a
 * signature is CPU work too short to be worth a turn of the event loop.
 */
export function jwtSigner(
  header: { alg: string; kid?: string; typ: string; jwk?: Record<string, unknown> },
  key: KeyObject,
): (claims: Record<string, unknown>) => string {
  const algorithm = ALGORITHMS.get(header.alg);
  if (!algorithm) throw new Error(`unsupported signing algorithm ${header.alg}`);
  if (key.type !== 'private' || !keyFits(algorithm, key)) throw new Error(`the key cannot sign ${header.alg}`);
  const { alg, kid, typ, jwk } = header;
  const encodedHeader = Buffer.from(JSON.stringify({ alg, ...(kid === undefined ? {} : { kid }), typ, ...(jwk === undefined ? {} : { jwk }) })).toString(
    'base64url',
  );
  const options = signOptions(algorithm, key);
  return (claims) => {
    const input = `${encodedHeader}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
    return `${input}.${sign(algorithm.hash, Buffer.from(input, 'latin1'), options).toString('base64url')}`;
  };
}

// --- Verification ----------------------------------------------------------------------------

export interface CompactJwt {
  header: Record<string, unknown>;
  /** The header segment as sent: tokens signed with one key share it byte for byte. */
  encodedHeader: string;
  claims: Record<string, unknown>;
  /** The ASCII text the signature covers: `header.payload` as sent. */
  signingInput: string;
  signature: Buffer;
}

/** JWS compact serialization: three base64url segments, no padding, no whitespace (RFC 7515 §7.1). */
const COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** A base64url segment's bytes; undefined for a length no encoding has (4n + 1 characters). */
function decodeSegment(segment: string): Buffer | undefined {
  return segment.length % 4 === 1 ? undefined : Buffer.from(segment, 'base64url');
}

/**
 * Whether a base64url segment (alphabet already checked) is the one spelling of its bytes: a last
 * character that encodes a partial byte must leave its unused low bits zero (2 of them after
 * 4n + 3 characters, 4 after 4n + 2), as re-encoding the bytes would.
 */
function canonicalBase64url(segment: string): boolean {
  const unusedBits = [0, 0, 0x0f, 0x03][segment.length % 4]!;
  if (unusedBits === 0) return true;
  const c = segment.charCodeAt(segment.length - 1);
  // The character's 6-bit value in the alphabet A–Z a–z 0–9 - _.
  const value = c >= 97 ? c - 71 : c >= 65 ? c - 65 : c >= 48 ? c + 4 : c === 45 ? 62 : 63;
  return (value & unusedBits) === 0;
}

/** Strict UTF-8 JSON that is an object (not an array, string or null). */
function jsonObject(bytes: Buffer): Record<string, unknown> | undefined {
  if (!isUtf8(bytes)) return undefined;
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A token in JWS compact serialization: exactly three base64url segments, header and claims
 * each a JSON object. Nothing is trusted yet; undefined when it is not such a token. The
 * signature must also be encoded canonically (no stray trailing bits): it is the one part that
 * could be re-encoded without breaking the signature, giving one token two spellings.
 * `knownHeaders` maps header segments decoded before to their header: decoding a segment always
 * gives the same object, so one seen before is not decoded again (callers keep only those of
 * tokens they verified, so a sender cannot fill it).
 */
export function parseCompactJwt(token: string, knownHeaders?: ReadonlyMap<string, Record<string, unknown>>): CompactJwt | undefined {
  if (!COMPACT.test(token)) return undefined;
  const first = token.indexOf('.');
  const second = token.indexOf('.', first + 1);
  const encodedHeader = token.slice(0, first);
  const encodedSignature = token.slice(second + 1);
  const signature = decodeSegment(encodedSignature);
  if (!signature || !canonicalBase64url(encodedSignature)) return undefined;
  let header = knownHeaders?.get(encodedHeader);
  if (header === undefined) {
    const headerBytes = decodeSegment(encodedHeader);
    header = headerBytes && jsonObject(headerBytes);
    if (!header) return undefined;
  }
  const claimsBytes = decodeSegment(token.slice(first + 1, second));
  const claims = claimsBytes && jsonObject(claimsBytes);
  if (!claims) return undefined;
  return { header, encodedHeader, claims, signingInput: token.slice(0, second), signature };
}

/** RFC 7515 §4.1.9 / RFC 8725 §3.11: media types compare case-insensitively, `application/` optional. */
/** Whether the header's `typ` is this media type (compared as RFC 7515 §4.1.9 says). */
export function hasTyp(header: Record<string, unknown>, typ: string): boolean {
  return typeof header.typ === 'string' && normalizeTyp(header.typ) === normalizeTyp(typ);
}

function normalizeTyp(typ: string): string {
  const lower = typ.toLowerCase();
  return lower.includes('/') ? lower : `application/${lower}`;
}

/**
 * What is wrong with a header before any key is looked at, or undefined: `alg` one we verify
 * (never none, never HMAC), `kid` a string if present, no `crit` (we understand no extension,
 * RFC 7515 §4.1.11), and `typ` the expected one when asked.
 */
export function jwtHeaderProblem(header: Record<string, unknown>, expected: { typ?: string } = {}): string | undefined {
  if (!isSupportedJwsAlgorithm(header.alg)) return 'unsupported alg';
  if (header.kid !== undefined && typeof header.kid !== 'string') return 'kid is not a string';
  if (header.crit !== undefined) return 'crit names an extension we do not understand';
  if (expected.typ !== undefined && !hasTyp(header, expected.typ)) return `typ is not ${expected.typ}`;
  return undefined;
}

/**
 * Whether `key` signed `jwt`: the header's `alg` must be exactly the key's (the token does not
 * choose how it is checked), and the signature have that algorithm's exact length.
 */
export function verifyJwtSignature(jwt: CompactJwt, key: JwtVerificationKey): boolean {
  if (jwt.header.alg !== key.alg || jwt.signature.length !== key.signatureBytes) return false;
  try {
    return verify(key.hash, Buffer.from(jwt.signingInput, 'latin1'), key.options, jwt.signature);
  } catch {
    return false;
  }
}

/**
 * RFC 7519 §4.1.4–4.1.6 with a tolerance for clocks: `exp` required, and exp/nbf/iat numbers
 * when present. 'expired' and 'not yet valid' are told apart (the latter may pass later).
 */
export function jwtTimeProblem(claims: Record<string, unknown>, now: number, toleranceSeconds: number): 'malformed' | 'expired' | 'not yet valid' | undefined {
  const { exp, nbf, iat } = claims;
  if (typeof exp !== 'number' || (nbf !== undefined && typeof nbf !== 'number') || (iat !== undefined && typeof iat !== 'number')) return 'malformed';
  if (typeof nbf === 'number' && nbf > now + toleranceSeconds) return 'not yet valid';
  if (exp <= now - toleranceSeconds) return 'expired';
  return undefined;
}
