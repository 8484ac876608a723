import { DpopProofVerifier } from '../core/dpop.js';
import { DpopNonces } from '../core/dpop-nonce.js';
import { OAuthError } from '../core/errors.js';
import type { AssertionUse, ClientRecord, Store } from '../store/store.js';
import type { SigningKeys } from './keys.js';

/**
 * DPoP (RFC 9449) at the token endpoint: the one place a token request's proof is checked, before
 * any grant runs. A grant learns of the proof only through its request (`TokenRequest.dpopKey`),
 * which it hands to what makes its tokens: so every grant binds them the same way.
 */

/** A token request's proof that passed its checks: its key, and the one way to spend it. */
export interface CheckedProof {
  /** The key's JWK SHA-256 thumbprint: `cnf.jkt` of the access token. */
  jkt: string;
  /**
   * Spends the proof's `jti`, once however often it is called: refused (invalid_dpop_proof) when
   * the proof was spent before. The token endpoint calls it as soon as the client is
   * authenticated; a request with no client (a workload's token authenticates it) spends it when
   * its grant has verified that token, before any token is made.
   */
  spend(): Promise<void>;
  /**
   * Spends the proof within `write`, a store call that keeps the proof's replay record in the
   * transaction of its own work (one commit for both) and answers 'assertion-used', changing
   * nothing, when the record was kept before: then refused as `spend` refuses it. A proof spent
   * already is not handed over: `alone` runs instead. When `write` fails, the proof is spent as
   * `spend` spends it before the failure goes on, so that no request leaves its proof unspent.
   */
  spendWithin<T>(write: (record: AssertionUse) => Promise<T | { status: 'assertion-used' }>, alone: () => Promise<T>): Promise<T>;
}

/** The DPoP key a token request proved it holds, as the grant it is dispatched to sees it. */
export interface DpopKey extends CheckedProof {
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
 * Checks the proofs sent to the token endpoint, and spends each proof's `jti` once, in the store
 * (useAssertionId), so a proof replayed to another replica, or to this server after a restart, is
 * refused. With nonces on (RFC 9449 §8), a proof must carry a recent one; the nonce key is derived
 * from the current signing key, which every replica on one store shares, so any replica takes a
 * nonce another gave.
 */
export class TokenEndpointDpop {
  readonly #verifier = new DpopProofVerifier();
  #nonces: { key: Buffer; nonces: DpopNonces } | undefined;

  constructor(
    private readonly store: Store,
    private readonly keys: SigningKeys,
    /** Our token endpoint as metadata publishes it: the `htu` every proof must name. */
    private readonly tokenEndpoint: string,
    readonly nonceRequired: boolean,
  ) {}

  /**
   * With nonces on, a proof without a nonce we still take is answered use_dpop_nonce at once,
   * before the client is authenticated, so that nothing of the request is spent (a client
   * assertion included) and the client may send it again with the nonce. Only the nonce is read,
   * no signature checked: a nonce is no secret (every answer gives one). A proof that does not
   * parse is left to `check`, which names its defect; one that does is not parsed again there.
   */
  async askForNonce(header: string | null, now: number): Promise<void> {
    if (header === null || !this.nonceRequired) return;
    const claims = this.#verifier.unverifiedClaims(header);
    if (claims === undefined) return;
    const nonces = await this.#currentNonces();
    if (!nonces.check(typeof claims.nonce === 'string' ? claims.nonce : undefined, now)) {
      throw new OAuthError('use_dpop_nonce', 'a DPoP nonce from this server is required', 400, { 'DPoP-Nonce': nonces.issue(now) });
    }
  }

  /**
   * The proof of a token request (its `DPoP` header), checked; undefined when it sent none. Any
   * defect is thrown: 400 invalid_dpop_proof naming it, or use_dpop_nonce with a fresh nonce.
   * Nothing is recorded yet: the proof is spent by its `spend`.
   */
  async check(header: string | null, now: number): Promise<CheckedProof | undefined> {
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
    const record: AssertionUse = { key: proof.replayKey, expiresAt: proof.replayUntil };
    let spent: Promise<void> | undefined;
    const spendAlone = () => this.#spend(record, now);
    const spend = () => (spent ??= spendAlone());
    return {
      jkt: proof.jkt,
      spend,
      async spendWithin(write, alone) {
        if (spent) {
          await spent;
          return alone();
        }
        const written = write(record);
        spent = written.then(
          (outcome) => {
            if (isAssertionUsed(outcome)) throw replayed();
          },
          () => spendAlone(),
        );
        await spent;
        return written as Promise<Exclude<Awaited<typeof written>, { status: 'assertion-used' }>>;
      },
    };
  }

  async #spend(record: AssertionUse, now: number): Promise<void> {
    if (!(await this.store.useAssertionId(record.key, record.expiresAt, now))) throw replayed();
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

const replayed = (): OAuthError => new OAuthError('invalid_dpop_proof', 'the DPoP proof was already used (jti)');

const isAssertionUsed = (outcome: unknown): outcome is { status: 'assertion-used' } =>
  typeof outcome === 'object' && outcome !== null && (outcome as { status?: unknown }).status === 'assertion-used';

/** The label the nonce key is derived under from the signing key (SigningKeys.macKeys). */
const NONCE_KEY_LABEL = 'context-auth DPoP nonces';
