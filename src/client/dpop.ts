/**
 * DPoP (RFC 9449) on the client's side: which grants are bound to a key, the proofs each request
 * carries, and the nonces servers hand out. The key pair of a grant is made here and kept with the
 * grant in the token store; only its public JWK ever leaves the process, inside proofs.
 */
import { generateDpopKeyPair, dpopProofSigner, type DpopKeyPair } from '../core/dpop.js';
import { findChallenge } from '../core/www-authenticate.js';
import type { Discovery } from './discovery.js';
import { ClientError } from './errors.js';
import type { StoredGrant } from './types.js';

/** The algorithms we sign proofs with, in the order we prefer them. */
const OUR_ALGORITHMS = ['ES256', 'ES384', 'ES512', 'EdDSA', 'PS256', 'RS256'];

/** A grant whose access token is DPoP-bound: presented as `Authorization: DPoP` with a proof. */
export function isDpopBound(grant: StoredGrant | undefined): grant is StoredGrant & { dpopKey: DpopKeyPair } {
  return grant?.tokenType === 'DPoP' && grant.dpopKey !== undefined;
}

/**
 * Whether the resource asks for DPoP-bound tokens: its metadata requires them (RFC 9728
 * `dpop_bound_access_tokens_required`), or its 401 challenged with the DPoP scheme and not Bearer.
 */
export function resourceWantsDpop(discovery: Discovery): boolean {
  return discovery.resourceMetadata?.dpop_bound_access_tokens_required === true || discovery.dpopChallenge === true;
}

/**
 * A new key pair for a grant at this authorization server, in an algorithm it lists in
 * `dpop_signing_alg_values_supported`. An authorization server that lists none we can sign with
 * (or omits the list: the DPoP extension makes it mandatory for servers that support DPoP) is
 * refused here, before anything is sent: asking it for a bound token could only end in a bearer one.
 */
export function newDpopKey(discovery: Discovery): DpopKeyPair {
  const listed = (discovery.authorizationServer as { dpop_signing_alg_values_supported?: unknown }).dpop_signing_alg_values_supported;
  if (!Array.isArray(listed)) {
    throw new ClientError('dpop_unsupported', `${discovery.issuer} does not offer DPoP (its metadata has no dpop_signing_alg_values_supported)`);
  }
  // `none` and symmetric algorithms are never ours to sign with, whatever the server lists.
  const alg = OUR_ALGORITHMS.find((candidate) => listed.includes(candidate));
  if (!alg) {
    throw new ClientError(
      'dpop_unsupported',
      `${discovery.issuer} offers no DPoP proof algorithm we sign with (it lists ${listed.length > 0 ? listed.map(String).join(', ') : 'none'}; we sign with ${OUR_ALGORITHMS.join(', ')})`,
    );
  }
  return generateDpopKeyPair(alg);
}

/**
 * Proofs, and the latest nonce each server gave (by origin: an authorization server and a resource
 * server each have their own). A `DPoP-Nonce` on any answer replaces the one kept; nonces live in
 * this process only, as servers hand out fresh ones whenever they want one.
 */
export class DpopProofs {
  private readonly nonces = new Map<string, string>();
  private readonly signers = new Map<string, ReturnType<typeof dpopProofSigner>>();

  constructor(private readonly now: () => number) {}

  /** A fresh proof (new `jti`, current `iat`, the server's latest nonce) for one request. */
  proof(key: DpopKeyPair, request: { method: string; url: string | URL; accessToken?: string }): string {
    const nonce = this.nonces.get(new URL(request.url).origin);
    return this.signer(key).sign({
      method: request.method,
      url: request.url,
      now: this.now(),
      ...(request.accessToken === undefined ? {} : { accessToken: request.accessToken }),
      ...(nonce === undefined ? {} : { nonce }),
    });
  }

  /** Keeps the nonce an answer carries; true when it had one. */
  remember(url: string | URL, response: Response): boolean {
    const nonce = response.headers.get('dpop-nonce');
    if (!nonce) return false;
    this.nonces.set(new URL(url).origin, nonce);
    return true;
  }

  /** One signer per key (the private key is imported once), found by its public key. */
  private signer(key: DpopKeyPair): ReturnType<typeof dpopProofSigner> {
    const id = JSON.stringify(key.publicJwk);
    let signer = this.signers.get(id);
    if (!signer) {
      signer = dpopProofSigner(key);
      this.signers.set(id, signer);
    }
    return signer;
  }
}

/** A resource server's 401 asking for a nonce (RFC 9449 §9), which `proofs` has now remembered. */
export function isResourceNonceChallenge(response: Response): boolean {
  return (
    response.status === 401 && response.headers.has('dpop-nonce') && findChallenge(response.headers.get('www-authenticate'), 'dpop')?.error === 'use_dpop_nonce'
  );
}

/** An authorization server's 400 asking for a nonce (RFC 9449 §8). Reads a copy of the body. */
export async function isTokenNonceChallenge(response: Response): Promise<boolean> {
  if (response.status !== 400 || !response.headers.has('dpop-nonce')) return false;
  const body = (await response
    .clone()
    .json()
    .catch(() => undefined)) as { error?: unknown } | undefined;
  return body?.error === 'use_dpop_nonce';
}
