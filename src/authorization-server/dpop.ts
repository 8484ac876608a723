import { DpopProofVerifier, type DpopProof } from '../core/dpop.js';
import { DpopNonces } from '../core/dpop-nonce.js';
import { OAuthError } from '../core/errors.js';
import { ReplayCache } from '../core/replay-cache.js';
import type { ClientRecord, Store } from '../store/store.js';
import type { SigningKeys } from './keys.js';

/**
 * DPoP (RFC 9449) at the token endpoint: the one place a token request's proof is checked, before
 * any grant runs. A grant learns of the proof only through its context (`dpopKey`), which the
 * token responses and refresh tokens read: so every grant binds its tokens without code of its own.
 */

/** The DPoP key a token request proved it holds, as the grant it is dispatched to sees it. */
export interface DpopKey {
  /** The key's JWK SHA-256 thumbprint: `cnf.jkt` of the access token. */
  jkt: string;
  /** Whether refresh tokens issued to this request are bound too: public clients only (RFC 9449 §5). */
  bindsRefreshTokens: boolean;
}

/** `dpop_jkt` (RFC 9449 §10) and a bound token's suffix: a base64url SHA-256 thumbprint. */
const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/;

export function isJwkThumbprint(value: string): boolean {
  return THUMBPRINT.test(value);
}

/**
 * A code or refresh token bound to a DPoP key carries the key's thumbprint after a dot (our random
 * tokens are base64url, which has none). The store keeps the hash of the whole string, so the
 * suffix cannot be changed or dropped without the token no longer being found.
 */
export function bindToKey(token: string, jkt: string | undefined): string {
  return jkt === undefined ? token : `${token}.${jkt}`;
}

/** The thumbprint a presented code or refresh token is bound to, if it is bound. */
export function boundKeyOf(token: string): string | undefined {
  const dot = token.lastIndexOf('.');
  return dot < 0 ? undefined : token.slice(dot + 1);
}

/**
 * Refuses a token request whose code or refresh token is bound to a key its proof does not show:
 * checked before the token is redeemed, so someone holding it without the key spends nothing.
 */
export function requireBoundKey(token: string, dpopKey: DpopKey | undefined, what: string): void {
  const bound = boundKeyOf(token);
  if (bound === undefined) return;
  if (!dpopKey) throw new OAuthError('invalid_dpop_proof', `the ${what} is bound to a DPoP key: send a DPoP proof made with it`);
  if (dpopKey.jkt !== bound) throw new OAuthError('invalid_dpop_proof', `the DPoP proof is not made with the key the ${what} is bound to`);
}

/** Whether a client registered `dpop_bound_access_tokens` (RFC 9449 §5.2): then every token request needs a proof. */
export function requiresDpop(client: ClientRecord | null): boolean {
  return client?.metadata.dpop_bound_access_tokens === true;
}

/**
 * Checks the proofs sent to the token endpoint. A proof's `jti` is spent once: in the store when
 * replicas share it (a proof replayed to another replica is caught), else in a bounded record in
 * memory, so a refresh on SQLite costs no extra write. With nonces on (RFC 9449 §8), a proof must
 * carry a recent one; the nonce key is derived from the current signing key, which every replica
 * on one store shares, so any replica takes a nonce another gave.
 */
export class TokenEndpointDpop {
  readonly #verifier = new DpopProofVerifier();
  readonly #replays: ReplayCache | null;
  #nonces: { key: Buffer; nonces: DpopNonces } | undefined;

  constructor(
    private readonly store: Store,
    private readonly keys: SigningKeys,
    /** Our token endpoint as metadata publishes it: the `htu` every proof must name. */
    private readonly tokenEndpoint: string,
    readonly nonceRequired: boolean,
  ) {
    this.#replays = store.sharedByReplicas ? null : new ReplayCache();
  }

  /**
   * The proof of a token request (its `DPoP` header), checked; undefined when it sent none. Any
   * defect is thrown: 400 invalid_dpop_proof naming it, or use_dpop_nonce with a fresh nonce.
   */
  async check(header: string | null, now: number): Promise<DpopProof | undefined> {
    if (header === null) return undefined;
    const nonces = this.nonceRequired ? await this.#currentNonces() : undefined;
    const result = this.#verifier.check({
      proof: header,
      method: 'POST',
      url: this.tokenEndpoint,
      now,
      ...(nonces ? { nonce: (nonce: string | undefined, at: number) => nonces.check(nonce, at) } : {}),
    });
    if (!result.ok) {
      const headers: Record<string, string> = nonces ? { 'DPoP-Nonce': nonces.issue(now) } : {};
      throw new OAuthError(result.error, result.description, 400, headers);
    }
    const { proof } = result;
    const fresh = this.#replays
      ? this.#replays.use(proof.replayKey, proof.iat, proof.replayUntil, now) === 'ok'
      : await this.store.useAssertionId(proof.replayKey, proof.replayUntil, now);
    if (!fresh) throw new OAuthError('invalid_dpop_proof', 'the DPoP proof was already used (jti)');
    return proof;
  }

  /** The header that gives a client the nonce to put in its next proof; none when nonces are off. */
  async nonceHeader(now: number): Promise<Record<string, string>> {
    if (!this.nonceRequired) return {};
    return { 'DPoP-Nonce': (await this.#currentNonces()).issue(now) };
  }

  async #currentNonces(): Promise<DpopNonces> {
    const key = (this.keys.macKeysIfCached(NONCE_KEY_LABEL) ?? (await this.keys.macKeys(NONCE_KEY_LABEL)))[0]!;
    if (this.#nonces?.key !== key) this.#nonces = { key, nonces: new DpopNonces(key) };
    return this.#nonces.nonces;
  }
}

/** The label the nonce key is derived under from the signing key (SigningKeys.macKeys). */
const NONCE_KEY_LABEL = 'context-auth DPoP nonces';
