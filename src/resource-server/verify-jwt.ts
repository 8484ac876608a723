import { createHash } from 'node:crypto';
import { createRemoteJWKSet, customFetch, decodeJwt, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { fetchAuthorizationServerMetadata } from './discovery.js';
import { ExpiringCache, InvalidTokenError, scopesOf, VerifierUnavailableError, type TokenVerifier, type VerifiedToken } from './types.js';

export interface JwtVerifierOptions {
  /** Issuers whose tokens are accepted; each one's JWKS is found through its metadata. */
  authorizationServers: string[];
  /** Allowed clock difference for exp/nbf/iat, in seconds. Default 10. */
  clockToleranceSeconds?: number;
  /** Least time between two JWKS fetches for one issuer (an unknown kid triggers one). Default 5. */
  jwksCooldownSeconds?: number;
  /** How many verified tokens to remember (until each one's exp). Default 10,000. */
  cacheSize?: number;
  now?: () => number;
  fetch?: typeof fetch;
}

/** Errors of the key lookup that are the token's fault (its kid or alg matches no published key). */
function isKeyMismatch(error: unknown): boolean {
  return error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys || error instanceof errors.JOSENotSupported;
}

/** Refusals that time or a rotation can turn into acceptance: an unknown kid, an nbf still ahead. */
function mayBecomeValid(error: InvalidTokenError): boolean {
  const cause = error.cause;
  return cause instanceof errors.JWKSNoMatchingKey || (cause instanceof errors.JWTClaimValidationFailed && cause.claim === 'nbf');
}

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
  const cooldownDuration = (options.jwksCooldownSeconds ?? 5) * 1000;
  const cache = new ExpiringCache<VerifiedToken>(options.cacheSize);
  // Tokens proven bad (forged signature, expired…) are refused from memory for a minute, so
  // replaying one costs a hash, not a signature check. Never cached: an unknown key id, which
  // a key rotation can make valid within seconds, nor an nbf that is still ahead.
  const refused = new ExpiringCache<string>(options.cacheSize);
  const keySets = new Map<string, Promise<JWTVerifyGetKey>>();

  function keySetFor(issuer: string): Promise<JWTVerifyGetKey> {
    let keySet = keySets.get(issuer);
    if (!keySet) {
      keySet = fetchAuthorizationServerMetadata(issuer, fetchImpl).then((metadata) => {
        if (typeof metadata.jwks_uri !== 'string') throw new VerifierUnavailableError(`${issuer} publishes no jwks_uri`);
        const remote = createRemoteJWKSet(new URL(metadata.jwks_uri), { cooldownDuration, timeoutDuration: 10_000, [customFetch]: fetchImpl });
        // A JWKS we cannot fetch or read (network error, 5xx, not JSON) is not the token's fault:
        // 503 rather than a 401 that would also be remembered as a refusal.
        const getKey: JWTVerifyGetKey = async (header, token) => {
          try {
            return await remote(header, token);
          } catch (error) {
            if (isKeyMismatch(error)) throw error;
            throw new VerifierUnavailableError('cannot fetch the signing keys', { cause: error });
          }
        };
        return getKey;
      });
      // A failed discovery is retried on the next request rather than remembered.
      keySet.catch(() => keySets.delete(issuer));
      keySets.set(issuer, keySet);
    }
    return keySet;
  }

  return {
    async verify(token: string): Promise<VerifiedToken> {
      const key = createHash('sha256').update(token).digest('base64url');
      const cached = cache.get(key, now());
      if (cached) return cached;
      const refusal = refused.get(key, now());
      if (refusal !== undefined) throw new InvalidTokenError(refusal);
      try {
        const verified = await verifyUncached(token);
        cache.set(key, verified, verified.expiresAt + clockTolerance);
        return verified;
      } catch (error) {
        if (error instanceof InvalidTokenError && !mayBecomeValid(error)) {
          refused.set(key, error.message, now() + 60);
        }
        throw error;
      }
    },
  };

  async function verifyUncached(token: string): Promise<VerifiedToken> {
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(token);
    } catch {
      throw new InvalidTokenError('the access token is not a JWT');
    }
    if (typeof unverified.iss !== 'string' || !issuers.has(unverified.iss)) {
      throw new InvalidTokenError('the access token was not issued by a trusted authorization server');
    }
    const keySet = await keySetFor(unverified.iss);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keySet, {
        issuer: unverified.iss,
        typ: 'at+jwt',
        clockTolerance,
        currentDate: new Date(now() * 1000),
      }));
    } catch (error) {
      if (error instanceof VerifierUnavailableError) throw error;
      if (error instanceof errors.JWTExpired) throw new InvalidTokenError('the access token has expired');
      throw new InvalidTokenError('the access token is invalid', { cause: error });
    }
    if (typeof payload.exp !== 'number' || typeof payload.sub !== 'string' || typeof payload.client_id !== 'string') {
      throw new InvalidTokenError('the access token lacks exp, sub or client_id');
    }
    return {
      token,
      subject: payload.sub,
      clientId: payload.client_id,
      scopes: scopesOf(payload.scope),
      audience: Array.isArray(payload.aud) ? payload.aud : payload.aud === undefined ? [] : [payload.aud],
      issuer: unverified.iss,
      expiresAt: payload.exp,
      claims: payload as Record<string, unknown>,
    };
  }
}
