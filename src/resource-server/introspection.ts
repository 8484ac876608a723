import { createHash } from 'node:crypto';
import { fail, ok, type Result } from '../core/result.js';
import { fetchAuthorizationServerMetadata } from './discovery.js';
import { ExpiringCache, scopesOf, tokenRefused, type TokenVerification, type TokenVerifier, type VerifiedToken, withActors, withThumbprint } from './types.js';

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
  let endpoint: Promise<Result<string, string>> | undefined = options.endpoint ? Promise.resolve(ok(options.endpoint)) : undefined;

  /** The endpoint, or why it cannot be found; a failure is not kept, so the next request looks again. */
  function introspectionEndpoint(): Promise<Result<string, string>> {
    endpoint ??= fetchAuthorizationServerMetadata(options.authorizationServer, fetchImpl).then((metadata) => {
      if (!metadata.ok) return metadata;
      const found = metadata.value.introspection_endpoint;
      return typeof found === 'string' ? ok(found) : fail(`${options.authorizationServer} offers no introspection endpoint`);
    });
    void endpoint.then(
      (found) => found.ok || (endpoint = undefined),
      () => (endpoint = undefined),
    );
    return endpoint;
  }

  // Why the token cannot be checked now: said to whoever calls verify(), never to the client (the guard answers 503).
  const unavailable = (reason: string) => tokenRefused('unavailable', reason);

  return {
    async verify(token: string): Promise<TokenVerification> {
      const key = createHash('sha256').update(token).digest('base64url');
      const cached = cache.get(key, now());
      if (cached) return ok(cached);
      const url = await introspectionEndpoint();
      if (!url.ok) return unavailable(url.defect);
      let response: Response;
      try {
        response = await fetchImpl(url.value, {
          method: 'POST',
          headers: { authorization: credentials, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
          body: new URLSearchParams({ token, token_type_hint: 'access_token' }),
          signal: AbortSignal.timeout(10_000),
        });
      } catch {
        return unavailable('cannot reach the introspection endpoint');
      }
      if (!response.ok) return unavailable(`the introspection endpoint answered ${response.status}`);
      const body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
      if (!body || typeof body.active !== 'boolean') return unavailable('the introspection answer is not RFC 7662 JSON');
      if (!body.active) return tokenRefused('invalid_token', 'the access token is not active');
      if (body.iss !== undefined && body.iss !== options.authorizationServer) {
        return tokenRefused('invalid_token', 'the access token was not issued by the trusted authorization server');
      }
      const exp = typeof body.exp === 'number' ? body.exp : undefined;
      if (exp !== undefined && exp <= now()) return tokenRefused('invalid_token', 'the access token has expired');
      const actors = withActors(body.act);
      if (!actors) return tokenRefused('invalid_token', "the access token's act claim is malformed");
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
        ...actors,
        claims: body,
      };
      cache.set(key, verified, Math.min(verified.expiresAt, now() + cacheSeconds));
      return ok(verified);
    },
  };
}
