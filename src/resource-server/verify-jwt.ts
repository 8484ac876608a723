import { hash } from 'node:crypto';
import { jwtHeaderProblem, jwtTimeProblem, parseCompactJwt, verifyJwtSignature, type CompactJwt } from '../core/jwt.js';
import { RemoteKeySet, type KeyLookup } from '../core/remote-key-set.js';
import { fail, ok, type Result } from '../core/result.js';
import { fetchAuthorizationServerMetadata } from './discovery.js';
import {
  ExpiringCache,
  scopesOf,
  tokenRefused,
  type TokenDefect,
  type TokenVerification,
  type TokenVerifier,
  type VerifiedToken,
  withActors,
  withThumbprint,
} from './types.js';

export interface JwtVerifierOptions {
  /** Issuers whose tokens are accepted; each one's JWKS is found through its metadata. */
  authorizationServers: string[];
  /** Allowed clock difference for exp/nbf/iat, in seconds. Default 10. */
  clockToleranceSeconds?: number;
  /** Least time between two JWKS fetches for one issuer (an unknown kid triggers one). Default 5. */
  jwksCooldownSeconds?: number;
  /** How many verified tokens to remember (until each one's exp; least recently used go first). Default 50,000. */
  cacheSize?: number;
  now?: () => number;
  fetch?: typeof fetch;
}

/** Where a token is filed in the caches: its last 32 characters (see jwtVerifier). */
function cacheKey(token: string): string {
  return token.length > 32 ? token.slice(-32) : token;
}

/**
 * A refusal, and whether it lasts: one that time or a rotation can turn into acceptance (an
 * unknown kid, an nbf still ahead) is never remembered, nor a verifier that could not reach the keys.
 */
type Refusal = { defect: TokenDefect; lasting: boolean };

const invalid = (description: string, lasting = true): Refusal => ({ defect: { code: 'invalid_token', description }, lasting });

/**
 * Verifies RFC 9068 JWT access tokens locally: signature against the issuer's JWKS (fetched
 * once, refetched when a token names an unknown key, so a rotation is picked up without a
 * restart), `iss` one of the configured authorization servers, `typ` at+jwt, exp/nbf with a
 * small tolerance. Audience is checked by the guard, for every verifier alike.
 */
export function jwtVerifier(options: JwtVerifierOptions): TokenVerifier {
  const issuers = new Set(options.authorizationServers);
  if (issuers.size === 0) throw new Error('jwtVerifier needs at least one authorization server');
  const fetchImpl = options.fetch ?? fetch;
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const clockTolerance = options.clockToleranceSeconds ?? 10;
  const cooldownMs = (options.jwksCooldownSeconds ?? 5) * 1000;
  const cacheSize = options.cacheSize ?? 50_000;
  // Verified tokens, keyed by the last 32 characters of the token (inside its signature, which
  // differs for every token): a lookup hashes 32 characters instead of the whole token, on every
  // request. A hit counts only when the entry's own token is
  // equal to the presented one in full, so two tokens ending alike cost a verification, never a
  // mix-up. Only tokens a trusted issuer signed get in, so their size is the issuer's.
  const cache = new ExpiringCache<VerifiedToken>(cacheSize);
  // Tokens proven bad (forged signature, expired…) are refused from memory for a minute, so
  // replaying one costs a hash, not a signature check. Keyed by a SHA-256 digest, not by the end
  // of the token: these strings are the sender's, of any length, and as Map keys they could be
  // chosen to collide in V8's string hash, whose strength is the runtime's, not ours. Never
  // cached: an unknown key id, which a key rotation can make valid within seconds, nor an nbf
  // that is still ahead.
  const refused = new ExpiringCache<string>(cacheSize);
  // Header segments of tokens verified here, decoded: an issuer's tokens share theirs byte for
  // byte, so a new token's header is not decoded again. Only verified tokens add one, so a few.
  const knownHeaders = new Map<string, Record<string, unknown>>();
  const keySets = new Map<string, Promise<Result<RemoteKeySet, string>>>();
  const discovered = new Map<string, RemoteKeySet>();

  function keySetFor(issuer: string): Promise<Result<RemoteKeySet, string>> {
    let keySet = keySets.get(issuer);
    if (!keySet) {
      keySet = fetchAuthorizationServerMetadata(issuer, fetchImpl).then((metadata) => {
        if (!metadata.ok) return metadata;
        const jwksUri = metadata.value.jwks_uri;
        if (typeof jwksUri !== 'string') return fail(`${issuer} publishes no jwks_uri`);
        if (!URL.canParse(jwksUri)) return fail(`${issuer} publishes a jwks_uri that is not a URL`);
        const remote = new RemoteKeySet(new URL(jwksUri).href, { cooldownMs, maxAgeMs: 600_000, timeoutMs: 10_000, fetch: fetchImpl });
        discovered.set(issuer, remote);
        return ok(remote);
      });
      // A failed discovery is retried on the next request rather than remembered.
      void keySet.then(
        (found) => found.ok || keySets.delete(issuer),
        () => keySets.delete(issuer),
      );
      keySets.set(issuer, keySet);
    }
    return keySet;
  }

  function cached(token: string): VerifiedToken | undefined {
    const hit = cache.get(cacheKey(token), now());
    return hit !== undefined && hit.token === token ? hit : undefined;
  }

  return {
    cached,
    verify(token: string): Promise<TokenVerification> {
      const hit = cached(token);
      if (hit) return Promise.resolve(ok(hit));
      // Nothing refused in the last minute (the usual state): no digest to look a refusal up by.
      const digest = refused.holdsAnyAt(now()) ? hash('sha256', token, 'base64url') : undefined;
      if (digest !== undefined) {
        const description = refused.get(digest, now());
        if (description !== undefined) return Promise.resolve(tokenRefused('invalid_token', description));
      }
      let outcome: ReturnType<typeof verifyUncached>;
      try {
        outcome = verifyUncached(token);
      } catch (error) {
        return Promise.reject(error);
      }
      // Synchronous when the issuer's key is at hand (every token but the first of a key):
      // one promise per first verification instead of three.
      if (!(outcome instanceof Promise)) return Promise.resolve(settle(token, digest, outcome));
      return outcome.then((settled) => settle(token, digest, settled));
    },
  };

  /** The verification's answer: a token verified is remembered until its exp, a lasting refusal for a minute. */
  function settle(token: string, digest: string | undefined, outcome: Result<VerifiedToken, Refusal>): TokenVerification {
    if (outcome.ok) {
      cache.set(cacheKey(token), outcome.value, outcome.value.expiresAt + clockTolerance);
      return outcome;
    }
    const { defect, lasting } = outcome.defect;
    if (lasting) refused.set(digest ?? hash('sha256', token, 'base64url'), defect.description, now() + 60);
    return { ok: false, defect };
  }

  /** The checks of a token not seen before; a promise only when the issuer's keys must be fetched first. */
  function verifyUncached(token: string): Result<VerifiedToken, Refusal> | Promise<Result<VerifiedToken, Refusal>> {
    const jwt = parseCompactJwt(token, knownHeaders);
    if (!jwt) return fail(invalid('the access token is not a JWT'));
    const { header, claims } = jwt;
    // Before any key is fetched: a foreign issuer's token makes us contact no one.
    if (typeof claims.iss !== 'string' || !issuers.has(claims.iss)) {
      return fail(invalid('the access token was not issued by a trusted authorization server'));
    }
    if (jwtHeaderProblem(header, { typ: 'at+jwt' })) return fail(invalid('the access token is invalid'));
    const alg = header.alg as string;
    const kid = header.kid as string | undefined;
    const known = discovered.get(claims.iss)?.known(alg, kid);
    if (known) return checked(token, jwt, known);
    return keySetFor(claims.iss).then(async (keySet) => {
      if (!keySet.ok) return fail(unavailable(keySet.defect));
      return checked(token, jwt, await keySet.value.lookup(alg, kid));
    });
  }

  /** The rest of the checks, once the key is found (or known not to be). */
  function checked(token: string, jwt: CompactJwt, found: KeyLookup): Result<VerifiedToken, Refusal> {
    const { header, claims } = jwt;
    if ('problem' in found) {
      if (found.problem === 'unavailable') return fail(unavailable(found.reason));
      return fail(invalid('the access token is invalid', found.problem !== 'unknown'));
    }
    if (!verifyJwtSignature(jwt, found.key)) return fail(invalid('the access token is invalid'));
    const timeProblem = jwtTimeProblem(claims, now(), clockTolerance);
    if (timeProblem === 'expired') return fail(invalid('the access token has expired'));
    if (timeProblem === 'not yet valid') return fail(invalid('the access token is not valid yet', false));
    if (timeProblem || typeof claims.sub !== 'string') return fail(invalid('the access token lacks exp or sub'));
    const clientId = clientOf(claims);
    if (clientId === undefined) return fail(invalid("the access token's client_id or azp is not a string"));
    const actors = withActors(claims.act);
    if (!actors) return fail(invalid("the access token's act claim is malformed"));
    if (!knownHeaders.has(jwt.encodedHeader)) {
      // Bounded all the same: a key rotation every few minutes for a year stays small, but clear it past 100.
      if (knownHeaders.size >= 100) knownHeaders.clear();
      knownHeaders.set(jwt.encodedHeader, header);
    }
    return ok({
      token,
      subject: claims.sub,
      clientId,
      scopes: scopesOf(claims.scope),
      audience: Array.isArray(claims.aud) ? claims.aud : claims.aud === undefined ? [] : [claims.aud],
      issuer: claims.iss as string, // checked against the trusted issuers before the key was looked up
      expiresAt: claims.exp as number,
      ...withThumbprint(claims.cnf),
      ...actors,
      claims,
    });
  }
}

/** The verifier could not reach the issuer's metadata or keys (`reason`, for whoever calls verify()): not the token's fault. */
function unavailable(reason: string): Refusal {
  return { defect: { code: 'unavailable', description: reason }, lasting: false };
}

/**
 * RFC 9068 asks for `client_id`, but other authorization servers name the client in `azp` or not
 * at all; the guard needs no client to decide, so a token is not refused for lacking one: ''.
 * A claim present with another type than a string is a malformed token.
 */
function clientOf(claims: Record<string, unknown>): string | undefined {
  for (const claim of ['client_id', 'azp']) {
    const value = claims[claim];
    if (value !== undefined) return typeof value === 'string' ? value : undefined;
  }
  return '';
}
