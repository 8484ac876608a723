import { createHash } from 'node:crypto';
import { fetchAuthorizationServerMetadata } from './discovery.js';
import { ExpiringCache, InvalidTokenError, scopesOf, VerifierUnavailableError, type TokenVerifier, type VerifiedToken, withThumbprint } from './types.js';

export interface IntrospectionVerifierOptions {
  /** The introspection endpoint; found through `authorizationServer`'s metadata when absent. */
  endpoint?: string;
  /** The authorization server whose tokens these are (its metadata gives the endpoint; `iss` must match when present). */
  authorizationServer: string;
  /** This resource server's confidential client credentials at the authorization server. */
  clientId: string;
  clientSecret: string;
  /**
   * How long an active answer is trusted, in seconds, capped by the token's exp. Default 30:
   * a revoked token stops working within that time without a network call per request.
   */
  cacheSeconds?: number;
  cacheSize?: number;
  now?: () => number;
  fetch?: typeof fetch;
}

/** Verifies opaque or third-party tokens by asking the authorization server (RFC 7662). */
export function introspectionVerifier(options: IntrospectionVerifierOptions): TokenVerifier {
  const fetchImpl = options.fetch ?? fetch;
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const cacheSeconds = options.cacheSeconds ?? 30;
  const cache = new ExpiringCache<VerifiedToken>(options.cacheSize);
  const credentials = `Basic ${Buffer.from(`${encodeURIComponent(options.clientId)}:${encodeURIComponent(options.clientSecret)}`).toString('base64')}`;
  let endpoint: Promise<string> | undefined = options.endpoint ? Promise.resolve(options.endpoint) : undefined;

  function introspectionEndpoint(): Promise<string> {
    endpoint ??= fetchAuthorizationServerMetadata(options.authorizationServer, fetchImpl).then((metadata) => {
      if (typeof metadata.introspection_endpoint !== 'string') {
        throw new VerifierUnavailableError(`${options.authorizationServer} offers no introspection endpoint`);
      }
      return metadata.introspection_endpoint;
    });
    endpoint.catch(() => (endpoint = undefined));
    return endpoint;
  }

  return {
    async verify(token: string): Promise<VerifiedToken> {
      const key = createHash('sha256').update(token).digest('base64url');
      const cached = cache.get(key, now());
      if (cached) return cached;
      const url = await introspectionEndpoint();
      let response: Response;
      try {
        response = await fetchImpl(url, {
          method: 'POST',
          headers: { authorization: credentials, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
          body: new URLSearchParams({ token, token_type_hint: 'access_token' }),
          signal: AbortSignal.timeout(10_000),
        });
      } catch (error) {
        throw new VerifierUnavailableError('cannot reach the introspection endpoint', { cause: error });
      }
      if (!response.ok) throw new VerifierUnavailableError(`the introspection endpoint answered ${response.status}`);
      const body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
      if (!body || typeof body.active !== 'boolean') throw new VerifierUnavailableError('the introspection answer is not RFC 7662 JSON');
      if (!body.active) throw new InvalidTokenError('the access token is not active');
      if (body.iss !== undefined && body.iss !== options.authorizationServer) {
        throw new InvalidTokenError('the access token was not issued by the trusted authorization server');
      }
      const exp = typeof body.exp === 'number' ? body.exp : undefined;
      if (exp !== undefined && exp <= now()) throw new InvalidTokenError('the access token has expired');
      const verified: VerifiedToken = {
        token,
        subject: typeof body.sub === 'string' ? body.sub : '',
        clientId: typeof body.client_id === 'string' ? body.client_id : '',
        scopes: scopesOf(body.scope),
        audience: Array.isArray(body.aud) ? body.aud.filter((a): a is string => typeof a === 'string') : typeof body.aud === 'string' ? [body.aud] : [],
        issuer: typeof body.iss === 'string' ? body.iss : options.authorizationServer,
        expiresAt: exp ?? now() + cacheSeconds,
        // RFC 9449 §6.2: a DPoP-bound token's introspection answer names its key in cnf.jkt.
        ...withThumbprint(body.cnf),
        claims: body,
      };
      cache.set(key, verified, Math.min(verified.expiresAt, now() + cacheSeconds));
      return verified;
    },
  };
}
