import { randomBytes } from 'node:crypto';
import { DPOP_SIGNING_ALGORITHMS, DpopProofVerifier } from '../core/dpop.js';
import { DpopNonces } from '../core/dpop-nonce.js';
import { ReplayCache } from '../core/replay-cache.js';

export interface DpopOptions {
  /**
   * How many proofs are remembered to refuse their replay (about 110 bytes each), each until it
   * is too old to pass anyway (six minutes after its iat). Default 100,000. When full, those
   * made in the earliest second are let go and proofs made before the next are refused as stale;
   * proofs dated ahead of the clock may take at most a tenth of it.
   */
  replayCacheSize?: number;
  /**
   * How many clients' public keys are kept imported. Default 10,000: a proof by a key not kept
   * costs more than twice one by a key kept (the key's import, its first use), so a busy server
   * should hold one key per client at work. When full, the key that came first goes, unless a
   * proof used it since: then it is kept, and the next one is considered.
   */
  keyCacheSize?: number;
  /**
   * RFC 9449 §9: require proofs to carry a nonce this server gave (`DPoP-Nonce`), so that no
   * proof can be made ahead of time. Default: off. A nonce is a MAC of a time slot (two minutes
   * by default): replicas of one context server take each other's nonces only when given the
   * same `key` (16 bytes or more); without one, each process makes its own at random.
   */
  nonces?: boolean | { key?: string | Uint8Array; slotSeconds?: number };
}

/** What the proof check reads of a request (see GuardRequest). */
export interface DpopRequestFacts {
  dpop?: string | null | undefined;
  method?: string;
  target?: string;
  request?: object;
}

export type DpopOutcome = { ok: true; nonce?: string } | { ok: false; error: 'invalid_dpop_proof' | 'use_dpop_nonce' | 'invalid_token'; description: string };

export interface DpopGate {
  /** The proof algorithms accepted: `algs` in challenges, `dpop_signing_alg_values_supported` in the metadata. */
  algorithms: readonly string[];
  /** The nonce to hand out now, when nonces are required. */
  currentNonce(): string | undefined;
  /** Checks the proof sent with `token`, a token bound to the key whose thumbprint is `jkt`. */
  check(request: DpopRequestFacts, token: string, jkt: string): DpopOutcome;
  /** How many proofs are remembered now against replay (for memory figures). */
  replayRecords(): number;
}

const refuse = (description: string): DpopOutcome => ({ ok: false, error: 'invalid_dpop_proof', description });

/**
 * The resource server's side of DPoP (RFC 9449 §7.1): every request's proof is checked, never
 * remembered as good: its `htm` against the request's method, its `htu` against the resource's
 * origin with the request's path (the URL the client reached, whatever proxy forwarded it here),
 * its `ath` against the token, its key against the token's `cnf.jkt`, its `jti` against the
 * proofs seen (a bounded record per guard), and, when required, its nonce.
 */
export function dpopGate(options: DpopOptions, resource: string, now: () => number): DpopGate {
  const verifier = new DpopProofVerifier({ maxKeys: options.keyCacheSize ?? 10_000 });
  const replays = new ReplayCache(options.replayCacheSize ?? 100_000);
  const nonces = options.nonces ? nonceIssuer(options.nonces) : undefined;
  const origin = new URL(resource).origin;
  // The proof this gate accepted for a request, so that a second guard on the same request does
  // not take it for a replay: a property of the request's object, which goes with it (a weak
  // entry would cost the collector on every scavenge); in a WeakMap for an object that takes none.
  const mark = Symbol('context-auth.dpopAccepted');
  const unmarkable = new WeakMap<object, string>();
  const acceptedFor = (request: object): string | undefined => (request as Marked)[mark] ?? unmarkable.get(request);
  const accept = (request: object, proof: string): void => {
    if (Object.isExtensible(request)) (request as Marked)[mark] = proof;
    else unmarkable.set(request, proof);
  };
  type Marked = { [mark]?: string };
  // The last request target and its URL: a resource's requests name the same few paths.
  let lastTarget: string | undefined;
  let lastUrl: string | undefined;
  const urlOf = (target: string): string | undefined => {
    if (target !== lastTarget) {
      lastUrl = targetUrl(origin, target);
      lastTarget = target;
    }
    return lastUrl;
  };

  return {
    algorithms: DPOP_SIGNING_ALGORITHMS,
    currentNonce: () => nonces?.issue(now()),
    replayRecords: () => replays.size,
    check(request, token, jkt) {
      const proof = request.dpop;
      if (proof === undefined || proof === null || proof === '') return refuse('the request carries no DPoP proof');
      if (request.method === undefined || request.target === undefined) return refuse('the DPoP proof cannot be checked without the request method and target');
      const url = urlOf(request.target);
      if (url === undefined) return refuse('the request target is not a path');
      const at = now();
      let given: string | undefined;
      const nonce = nonces && ((value: string | undefined, time: number) => nonces.check((given = value), time));
      const result = verifier.check({ proof, method: request.method, url, now: at, accessToken: token, ...(nonce ? { nonce } : {}) });
      if (!result.ok) return result;
      // The RFC's own example answers a key that is not the token's with invalid_token: the proof is sound, the token is not for it.
      if (result.proof.jkt !== jkt)
        return { ok: false, error: 'invalid_token', description: 'the DPoP proof is not signed by the key the access token is bound to' };
      if (request.request === undefined || acceptedFor(request.request) !== proof) {
        const replay = replays.use(result.proof.replayKey, result.proof.iat, result.proof.replayUntil, at);
        if (replay === 'replayed') return refuse('the DPoP proof was used before');
        if (replay === 'stale') return refuse('the DPoP proof is older than the proofs this server still remembers');
        if (replay === 'ahead')
          return refuse(
            "the DPoP proof iat is ahead of this server's clock, and this server already keeps as many proofs dated ahead as it will: date proofs by the current time",
          );
        if (request.request !== undefined) accept(request.request, proof);
      }
      // RFC 9449 §9: a nonce about to be refused is replaced on a good answer, sparing the client a round trip.
      const fresh = nonces?.issue(at);
      return fresh === undefined || fresh === given ? { ok: true } : { ok: true, nonce: fresh };
    },
  };
}

function nonceIssuer(option: true | { key?: string | Uint8Array; slotSeconds?: number }): DpopNonces {
  const settings = option === true ? {} : option;
  const key = settings.key === undefined ? randomBytes(32) : Buffer.from(settings.key);
  return new DpopNonces(key, settings.slotSeconds === undefined ? {} : { slotSeconds: settings.slotSeconds });
}

/**
 * The URL the client reached: the resource's origin and the request's path. Only the path is
 * taken from the request: a proxy may have changed the host and scheme on the way, and an
 * absolute-form target names whatever host its sender chose.
 */
function targetUrl(origin: string, target: string): string | undefined {
  if (target.startsWith('/')) {
    const query = target.indexOf('?');
    return origin + (query === -1 ? target : target.slice(0, query));
  }
  try {
    return origin + new URL(target).pathname;
  } catch {
    return undefined;
  }
}
