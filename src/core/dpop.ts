import { createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { generateJwkPair, type KeyPairKind } from './key-pairs.js';
import {
  SUPPORTED_JWS_ALGORITHMS,
  hasTyp,
  jwkFits,
  jwtSigner,
  parseCompactJwt,
  verificationKey,
  verifyJwtSignature,
  type CompactJwt,
  type JwtVerificationKey,
} from './jwt.js';
import { hashSecret, matchesDigest, randomToken } from './secrets.js';

/**
 * DPoP (RFC 9449): a proof, made by the client for each request with a key only it holds, that
 * binds tokens to that key. The client makes proofs here (`dpopProofSigner`); the authorization
 * server (token requests) and resource servers (protected requests) check them
 * (`DpopProofVerifier`). Pure: the caller passes the clock and keeps the record of `jti`s spent,
 * with the key and expiry the check gives it.
 */

export const DPOP_JWT_TYPE = 'dpop+jwt';

/** The proof algorithms accepted, for `dpop_signing_alg_values_supported` and the `algs` of a challenge: asymmetric only. */
export const DPOP_SIGNING_ALGORITHMS: readonly string[] = SUPPORTED_JWS_ALGORITHMS;

/** RFC 9449 §4.3: a proof is fresh for a short window after its `iat`. */
export const DPOP_PROOF_MAX_AGE_SECONDS = 300;
/** How far ahead of our clock a client's `iat` may be. */
export const DPOP_CLOCK_TOLERANCE_SECONDS = 60;

/**
 * The RSA proof keys taken: exponent 65537 and a modulus of 2048 to 4096 bits. A proof's key is
 * the sender's choice and its signature is checked before anything else about the sender is
 * known, so a key must not make that check expensive: a huge exponent or modulus makes one check
 * cost milliseconds instead of a fraction of one.
 */
const RSA_PUBLIC_EXPONENT = 65537n;
const RSA_MIN_BITS = 2048;
const RSA_MAX_BITS = 4096;

/** Members of a JWK that only a private (or symmetric) key has: a proof's `jwk` must carry none. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

/** RFC 7638 §3.2: the required members of each key type, in lexicographic order. */
const THUMBPRINT_MEMBERS: Record<string, readonly string[]> = {
  EC: ['crv', 'kty', 'x', 'y'],
  RSA: ['e', 'kty', 'n'],
  OKP: ['crv', 'kty', 'x'],
};

/** The JWK SHA-256 thumbprint (RFC 7638) of a public key, base64url: `cnf.jkt` and `dpop_jkt`. Undefined for a key type it does not cover. */
export function jwkThumbprint(jwk: Record<string, unknown>): string | undefined {
  const members = typeof jwk.kty === 'string' ? THUMBPRINT_MEMBERS[jwk.kty] : undefined;
  if (!members || !members.every((name) => typeof jwk[name] === 'string')) return undefined;
  // The JSON of an object of those members in that order, without the object: names need no escaping.
  const canonical = `{${members.map((name) => `"${name}":${JSON.stringify(jwk[name])}`).join(',')}}`;
  return hashSecret(canonical);
}

/** `ath` (RFC 9449 §4.2): the base64url SHA-256 of the access token a proof is sent with. */
export function accessTokenHash(accessToken: string): string {
  return hashSecret(accessToken);
}

/**
 * The HTTP URI a proof's `htu` is compared with (RFC 9449 §4.3 step 9): scheme, host and port
 * normalised as RFC 3986 §6.2.2–6.2.3 say (lower case, default port dropped, dot segments
 * resolved), path as sent, no query, no fragment. Undefined when it does not parse.
 */
export function dpopTargetUri(url: string | URL): string | undefined {
  let parsed: URL;
  try {
    parsed = typeof url === 'string' ? new URL(url) : url;
  } catch {
    return undefined;
  }
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}

// --- Keys and proofs, the client's side ------------------------------------------------------

/** A DPoP key pair as a client keeps it: JWKs (JSON-safe, for storage with the grant it binds). */
export interface DpopKeyPair {
  alg: string;
  privateJwk: JsonWebKey;
  publicJwk: JsonWebKey;
}

/** A fresh key pair for `alg` (ES256 by default: the shortest proofs, the quickest to check). */
export function generateDpopKeyPair(alg = 'ES256'): DpopKeyPair {
  const kinds: Record<string, KeyPairKind> = {
    ES256: { type: 'ec', namedCurve: 'P-256' },
    ES384: { type: 'ec', namedCurve: 'P-384' },
    ES512: { type: 'ec', namedCurve: 'P-521' },
    EdDSA: { type: 'ed25519' },
    RS256: { type: 'rsa', modulusLength: 2048 },
    PS256: { type: 'rsa', modulusLength: 2048 },
  };
  const kind = kinds[alg];
  if (!kind) throw new Error(`DPoP keys are made for ${Object.keys(kinds).join(', ')}, not ${alg}`);
  return { alg, ...generateJwkPair(kind) };
}

export interface DpopProofRequest {
  /** The HTTP method of the request the proof goes with. */
  method: string;
  /** Its URL; the query and fragment are left out of `htu`. */
  url: string | URL;
  /** The access token the request carries, for `ath` (resource requests). */
  accessToken?: string;
  /** The latest nonce the server gave (`DPoP-Nonce`), if it asks for one. */
  nonce?: string;
  /** Seconds since the epoch; the system clock by default. */
  now?: number;
}

/** Makes proofs with one key pair: its header is encoded once; each proof has a fresh `jti`. */
export function dpopProofSigner(pair: DpopKeyPair): { jkt: string; sign(request: DpopProofRequest): string } {
  const { kty, crv, x, y, n, e } = pair.publicJwk as Record<string, string | undefined>;
  const jwk = Object.fromEntries(Object.entries({ kty, crv, x, y, n, e }).filter(([, value]) => value !== undefined));
  const jkt = jwkThumbprint(jwk);
  if (!jkt) throw new Error('a DPoP key must be an EC, RSA or OKP public key');
  const sign = jwtSigner({ alg: pair.alg, typ: DPOP_JWT_TYPE, jwk }, createPrivateKey({ key: pair.privateJwk, format: 'jwk' }));
  return {
    jkt,
    sign: (request) =>
      sign({
        jti: randomToken(16),
        htm: request.method.toUpperCase(),
        htu: dpopTargetUri(request.url),
        iat: request.now ?? Math.floor(Date.now() / 1000),
        ...(request.accessToken === undefined ? {} : { ath: accessTokenHash(request.accessToken) }),
        ...(request.nonce === undefined ? {} : { nonce: request.nonce }),
      }),
  };
}

// --- Checking proofs, the servers' side ------------------------------------------------------

/** What a request offers to be checked against its proof. */
export interface DpopCheckRequest {
  /** The `DPoP` header: one proof (a list of several is refused). */
  proof: string;
  method: string;
  /** The URL the request was received at, as this server is reached (its public origin). */
  url: string | URL;
  /** Seconds since the epoch. */
  now: number;
  /** At a resource server: the access token sent with the proof, whose hash `ath` must be. */
  accessToken?: string;
  /** When the server asks for nonces: whether a proof's `nonce` is one it gave and still takes. */
  nonce?: (nonce: string | undefined, now: number) => boolean;
}

/** A proof that passed: its key's thumbprint, and what its replay record is kept by and until. */
export interface DpopProof {
  jkt: string;
  jti: string;
  iat: number;
  /** A key for the replay record: the `jti` is unique per key (RFC 9449 §11.1), so both go in. */
  replayKey: string;
  /** Until when a replay of it could still pass the freshness check. */
  replayUntil: number;
}

export type DpopCheck =
  | { ok: true; proof: DpopProof }
  /** `use_dpop_nonce`: the proof was sound but its nonce missing or stale (the server answers with a fresh one). */
  | { ok: false; error: 'invalid_dpop_proof' | 'use_dpop_nonce'; description: string };

const refuse = (description: string): DpopCheck => ({ ok: false, error: 'invalid_dpop_proof', description });

/**
 * Checks DPoP proofs (RFC 9449 §4.3) in the order the RFC gives, every refusal naming its defect:
 * one well-formed JWT; `typ` dpop+jwt; `alg` asymmetric and supported (never none, never HMAC);
 * `jwk` a public key fitting `alg` with no private member (an RSA key with exponent 65537 and
 * 2048 to 4096 bits); the signature by that key; `jti`,
 * `htm`, `htu`, `iat` present; `htm` and `htu` the request's; `iat` fresh; `ath` the token's;
 * `nonce` when asked for. The replay check (step 12) is the caller's, with the proof's
 * `replayKey`. Public keys seen are kept imported, a bounded number, by their header's text.
 */
export class DpopProofVerifier {
  /**
   * Headers of proofs that verified, by their encoded segment: a client's proofs share one header
   * byte for byte (one key, one `alg`), so its checks, the key's import and its thumbprint are
   * done once. Only a header whose signature verified goes in, so a sender cannot fill it with
   * junk; and a proof is checked with the key its own header names. When full, the header that
   * went in first leaves, unless a proof used it since it went in or was last passed over (it then
   * goes to the back, unmarked): the keys of clients at work stay, at the cost of a mark per proof.
   */
  readonly #known = new Map<string, KnownHeader>();
  readonly #maxKeys: number;
  readonly #maxAge: number;
  readonly #tolerance: number;
  /** The last request URL given as a string and its target URI: a server checks proofs for the same few URLs. */
  #lastUrl: string | undefined;
  #lastTarget: string | undefined;
  /** The proof unverifiedClaims parsed last, for the check that follows it. */
  #readAhead: { proof: string; jwt: CompactJwt | undefined } | undefined;

  constructor(options: { maxKeys?: number; maxAgeSeconds?: number; clockToleranceSeconds?: number } = {}) {
    this.#maxKeys = options.maxKeys ?? 1_000;
    this.#maxAge = options.maxAgeSeconds ?? DPOP_PROOF_MAX_AGE_SECONDS;
    this.#tolerance = options.clockToleranceSeconds ?? DPOP_CLOCK_TOLERANCE_SECONDS;
  }

  /** The thumbprints of the keys kept imported now. */
  keptKeys(): string[] {
    return [...this.#known.values()].map((known) => known.jkt);
  }

  /**
   * The claims of a proof, nothing of it checked yet: for a server that asks for a nonce before
   * anything else (RFC 9449 §8). Undefined when it does not parse; `check` names the defect.
   */
  unverifiedClaims(proof: string): Record<string, unknown> | undefined {
    const trimmed = proof.trim();
    this.#readAhead = { proof: trimmed, jwt: parseCompactJwt(trimmed, this.#headers) };
    return this.#readAhead.jwt?.claims;
  }

  check(request: DpopCheckRequest): DpopCheck {
    const proof = request.proof.trim();
    if (proof.includes(',')) return refuse('more than one DPoP proof');
    const jwt = this.#parse(proof);
    if (!jwt) return refuse('the DPoP proof is not a JWT');
    const known = this.#known.get(jwt.encodedHeader);
    const header = known ?? this.#checkHeader(jwt.header);
    if ('problem' in header) return refuse(header.problem);
    if (!verifyJwtSignature(jwt, header.key)) return refuse('the DPoP proof signature does not verify');
    if (known) known.used = true;
    else this.#remember(jwt.encodedHeader, header);
    const { claims } = jwt;
    const { jti, htm, htu, iat } = claims;
    if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256) return refuse('the DPoP proof has no jti');
    if (typeof htm !== 'string') return refuse('the DPoP proof has no htm');
    if (typeof htu !== 'string') return refuse('the DPoP proof has no htu');
    if (typeof iat !== 'number' || !Number.isFinite(iat)) return refuse('the DPoP proof has no iat');
    if (htm !== request.method.toUpperCase()) return refuse(`the DPoP proof htm is not ${request.method.toUpperCase()}`);
    if (htu.includes('?') || htu.includes('#')) return refuse('the DPoP proof htu has a query or fragment');
    const expected = this.#targetUri(request.url);
    // A target URI normalises to itself, so an htu spelled exactly as ours needs no parsing.
    if (expected === undefined || (htu !== expected && dpopTargetUri(htu) !== expected)) return refuse('the DPoP proof htu is not the URL of this request');
    if (iat > request.now + this.#tolerance) return refuse('the DPoP proof iat is in the future');
    if (iat < request.now - this.#maxAge) return refuse('the DPoP proof is too old (iat)');
    if (request.accessToken !== undefined) {
      if (typeof claims.ath !== 'string') return refuse('the DPoP proof has no ath');
      if (!matchesDigest(claims.ath, accessTokenHash(request.accessToken))) return refuse('the DPoP proof ath is not the hash of this access token');
    }
    if (request.nonce && !request.nonce(typeof claims.nonce === 'string' ? claims.nonce : undefined, request.now)) {
      return { ok: false, error: 'use_dpop_nonce', description: 'a DPoP nonce from this server is required' };
    }
    const { jkt } = header;
    return {
      ok: true,
      proof: { jkt, jti, iat, replayKey: hashSecret(`dpop.${jkt}.${jti}`), replayUntil: Math.floor(iat) + this.#maxAge + this.#tolerance },
    };
  }

  /** The proof as a JWT, a known header not decoded again, nor a proof unverifiedClaims just read. */
  #parse(proof: string): CompactJwt | undefined {
    const ahead = this.#readAhead;
    if (ahead === undefined) return parseCompactJwt(proof, this.#headers);
    this.#readAhead = undefined;
    return ahead.proof === proof ? ahead.jwt : parseCompactJwt(proof, this.#headers);
  }

  #targetUri(url: string | URL): string | undefined {
    if (typeof url !== 'string') return dpopTargetUri(url);
    if (url !== this.#lastUrl) {
      this.#lastTarget = dpopTargetUri(url);
      this.#lastUrl = url;
    }
    return this.#lastTarget;
  }

  /** The header's checks (RFC 9449 §4.3 steps 4–7), its key imported and its thumbprint taken. */
  #checkHeader(header: Record<string, unknown>): KnownHeader | { problem: string } {
    if (!hasTyp(header, DPOP_JWT_TYPE)) return { problem: 'the DPoP proof typ is not dpop+jwt' };
    const alg = header.alg;
    if (typeof alg !== 'string' || !DPOP_SIGNING_ALGORITHMS.includes(alg)) return { problem: 'the DPoP proof alg is not an asymmetric algorithm we accept' };
    if (header.crit !== undefined) return { problem: 'the DPoP proof names an extension (crit) we do not understand' };
    const jwk = header.jwk;
    if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) return { problem: 'the DPoP proof has no jwk header' };
    const publicJwk = jwk as Record<string, unknown>;
    if (PRIVATE_MEMBERS.some((name) => name in publicJwk)) return { problem: 'the DPoP proof jwk carries a private key' };
    if (!jwkFits(publicJwk, alg, undefined)) return { problem: 'the DPoP proof jwk does not fit its alg' };
    const jkt = jwkThumbprint(publicJwk);
    let publicKey: KeyObject;
    try {
      publicKey = createPublicKey({ key: publicJwk as JsonWebKey, format: 'jwk' });
    } catch {
      return { problem: 'the DPoP proof jwk is not a usable public key' };
    }
    const rsaProblem = rsaKeyProblem(publicKey);
    if (rsaProblem) return { problem: rsaProblem };
    let key: JwtVerificationKey;
    try {
      key = verificationKey(publicKey, alg);
    } catch {
      return { problem: 'the DPoP proof jwk is not a usable public key' };
    }
    if (jkt === undefined) return { problem: 'the DPoP proof jwk is not a usable public key' };
    return { header, key, jkt, used: false };
  }

  /** Keeps a header that verified; when full, the first one in that no proof used since leaves (see #known). */
  #remember(encodedHeader: string, header: KnownHeader): void {
    if (this.#maxKeys < 1) return;
    while (this.#known.size >= this.#maxKeys) {
      const [segment, first] = this.#known.entries().next().value!;
      this.#known.delete(segment);
      if (!first.used) break;
      first.used = false;
      this.#known.set(segment, first);
    }
    this.#known.set(encodedHeader, header);
  }

  /** The decoded headers of #known, as parseCompactJwt takes them (so a known header is not decoded again). */
  readonly #headers: ReadonlyMap<string, Record<string, unknown>> = {
    get: (segment: string) => this.#known.get(segment)?.header,
  } as ReadonlyMap<string, Record<string, unknown>>;
}

/** Why an RSA proof key is refused (RSA_PUBLIC_EXPONENT, RSA_MIN_BITS..RSA_MAX_BITS); undefined for a key taken or not RSA. */
function rsaKeyProblem(key: KeyObject): string | undefined {
  if (key.asymmetricKeyType !== 'rsa' && key.asymmetricKeyType !== 'rsa-pss') return undefined;
  const { publicExponent, modulusLength = 0 } = key.asymmetricKeyDetails ?? {};
  if (publicExponent !== RSA_PUBLIC_EXPONENT) return 'the DPoP proof jwk is an RSA key whose exponent is not 65537';
  if (modulusLength < RSA_MIN_BITS || modulusLength > RSA_MAX_BITS) {
    return `the DPoP proof jwk is a ${modulusLength}-bit RSA key: ${RSA_MIN_BITS} to ${RSA_MAX_BITS} bits are taken`;
  }
  return undefined;
}

interface KnownHeader {
  header: Record<string, unknown>;
  key: JwtVerificationKey;
  jkt: string;
  /** Whether a proof used it since it went in, or since the cache last passed over it. */
  used: boolean;
}
