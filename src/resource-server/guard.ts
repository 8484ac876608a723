import { formatScope } from '../core/scopes.js';
import { canonicalizeResourceUri } from '../core/uri.js';
import { bearerChallenge, type BearerChallenge } from '../core/www-authenticate.js';
import { extractBearer } from './bearer.js';
import { protectedResourceMetadata, protectedResourceMetadataUrl } from './metadata.js';
import { InvalidTokenError, VerifierUnavailableError, type RevocationCheck, type TokenVerifier, type VerifiedToken } from './types.js';
import { jwtVerifier } from './verify-jwt.js';

export interface ProtectedResourceOptions {
  /** This context server's canonical URI (spec, Revision B): the audience its tokens must name. */
  resource: string;
  /** Authorization servers listed in the metadata and trusted as token issuers. */
  authorizationServers: string[];
  scopesSupported?: string[];
  /** Scopes every request needs. Default: none. */
  requiredScopes?: string[];
  /** How tokens are checked. Default: local JWT verification against the servers' JWKS. */
  verifier?: TokenVerifier;
  /**
   * Revoked grants and tokens to refuse before they expire, checked in memory on every request:
   * `revocationFeed({ url, … })` for a remote authorization server, or a co-hosted one's
   * `revocations`. Default: none (a revoked token works until its exp).
   */
  revocations?: RevocationCheck;
  resourceName?: string;
  /** Where the metadata is published. Default: RFC 9728's path-inserted URL for `resource`. */
  metadataUrl?: string;
}

export type Denial = { status: 400 | 401 | 403 | 503; headers: Record<string, string>; body: { error: string; error_description: string } };
export type GuardResult = { ok: true; auth: VerifiedToken } | ({ ok: false } & Denial);

export interface ProtectedResource {
  resource: string;
  metadataUrl: string;
  /** Paths to serve the metadata at: the path-inserted one, and the root one when they differ. */
  metadataPaths: string[];
  metadata: Record<string, unknown>;
  metadataResponse(): Response;
  /** Checks an Authorization header value; nothing else of the request is looked at. */
  check(authorization: string | null | undefined, requiredScopes?: string[]): Promise<GuardResult>;
  /**
   * The same answer at once when it needs nothing but memory ("Bearer <token>" with a token the
   * verifier holds as verified), undefined when check() must be awaited. For adapters: one
   * promise less on nearly every request. Optional, so a ProtectedResource written by hand
   * before it existed still type-checks; adapters then await check().
   */
  checkKnown?(authorization: string | null | undefined, requiredScopes?: string[]): GuardResult | undefined;
  /** The same for a Web Request, with the denial as a ready Response. */
  authenticate(request: Request, requiredScopes?: string[]): Promise<{ ok: true; auth: VerifiedToken } | { ok: false; response: Response }>;
}

function audienceMatches(audience: string[], resource: string): boolean {
  // Our own tokens carry the canonical form already: skip URL parsing on the hot path.
  if (audience.includes(resource)) return true;
  return audience.some((value) => {
    try {
      return canonicalizeResourceUri(value) === resource;
    } catch {
      return false;
    }
  });
}

/**
 * A context server's protection: its RFC 9728 metadata and a bearer guard that runs before the
 * request is processed. No token → 401 with the metadata URL (the start of discovery for both
 * revisions); a bad, expired or foreign token → 401 invalid_token; a token for another
 * audience → 401 (spec: MUST reject); missing scope → 403 insufficient_scope.
 */
export function protectedResource(options: ProtectedResourceOptions): ProtectedResource {
  const resource = canonicalizeResourceUri(options.resource);
  if (options.authorizationServers.length === 0) throw new Error('list at least one authorization server');
  const verifier = options.verifier ?? jwtVerifier({ authorizationServers: options.authorizationServers });
  const metadataUrl = options.metadataUrl ?? protectedResourceMetadataUrl(resource);
  const metadataPath = new URL(metadataUrl).pathname;
  const metadataPaths = [...new Set([metadataPath, '/.well-known/oauth-protected-resource'])];
  const metadata = protectedResourceMetadata({
    resource,
    authorizationServers: options.authorizationServers,
    ...(options.scopesSupported ? { scopesSupported: options.scopesSupported } : {}),
    ...(options.resourceName ? { resourceName: options.resourceName } : {}),
  });
  const metadataBody = JSON.stringify(metadata);

  function deny(status: Denial['status'], challenge: BearerChallenge, error: string, description: string): GuardResult {
    const headers: Record<string, string> = { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' };
    if (status === 503) headers['Retry-After'] = '5';
    else headers['WWW-Authenticate'] = bearerChallenge({ resourceMetadata: metadataUrl, ...challenge });
    return { ok: false, status, headers, body: { error, error_description: description } };
  }

  function checkKnown(authorization: string | null | undefined, requiredScopes = options.requiredScopes ?? []): GuardResult | undefined {
    // The request nearly every client sends: "Bearer <token>" with a token verified before. The
    // verifier's cache holds only tokens it accepted, all well-formed, so an exact match needs no
    // parsing of the header and no promise.
    if (authorization === null || authorization === undefined || !authorization.startsWith('Bearer ')) return undefined;
    const known = verifier.cached?.(authorization.slice(7));
    return known && admit(known, requiredScopes);
  }

  async function check(authorization: string | null | undefined, requiredScopes = options.requiredScopes ?? []): Promise<GuardResult> {
    const known = checkKnown(authorization, requiredScopes);
    if (known) return known;
    const extracted = extractBearer(authorization);
    if (extracted.kind === 'none') {
      // RFC 6750 §3.1: no error code in the challenge when the request carried no credentials.
      return deny(401, { scope: formatScope(requiredScopes) }, 'unauthorized', 'this server requires an access token');
    }
    if (extracted.kind === 'malformed') {
      return deny(400, { error: 'invalid_request', errorDescription: extracted.reason }, 'invalid_request', extracted.reason);
    }
    let auth: VerifiedToken;
    try {
      auth = await verifier.verify(extracted.token);
    } catch (error) {
      if (error instanceof InvalidTokenError) {
        return deny(401, { error: 'invalid_token', errorDescription: error.message }, 'invalid_token', error.message);
      }
      if (error instanceof VerifierUnavailableError) {
        return deny(503, {}, 'temporarily_unavailable', 'the token cannot be checked right now; try again shortly');
      }
      throw error;
    }
    return admit(auth, requiredScopes);
  }

  /** What every valid token must also pass, cached or not: revocation, audience, scope. */
  function admit(auth: VerifiedToken, requiredScopes: string[]): GuardResult {
    // After the verifier, whose cache of verified tokens must not outlive a revocation.
    if (options.revocations?.isRevoked(auth)) {
      const description = 'the access token has been revoked';
      return deny(401, { error: 'invalid_token', errorDescription: description }, 'invalid_token', description);
    }
    if (!audienceMatches(auth.audience, resource)) {
      const description = 'the access token was not issued for this server';
      return deny(401, { error: 'invalid_token', errorDescription: description }, 'invalid_token', description);
    }
    // every() first: no array is made for the request that has all it needs.
    if (!requiredScopes.every((needed) => auth.scopes.includes(needed))) {
      const missing = requiredScopes.filter((needed) => !auth.scopes.includes(needed));
      const description = `this request needs the scope ${formatScope(missing)}`;
      return deny(403, { error: 'insufficient_scope', errorDescription: description, scope: formatScope(requiredScopes) }, 'insufficient_scope', description);
    }
    return { ok: true, auth };
  }

  return {
    resource,
    metadataUrl,
    metadataPaths,
    metadata,
    metadataResponse: () =>
      new Response(metadataBody, {
        status: 200,
        headers: { 'Content-Type': 'application/json', 'Cache-Control': 'public, max-age=300', 'Access-Control-Allow-Origin': '*' },
      }),
    check,
    checkKnown,
    async authenticate(request, requiredScopes) {
      const result = await check(request.headers.get('authorization'), requiredScopes);
      if (result.ok) return result;
      return { ok: false, response: denialResponse(result) };
    },
  };
}

/** A denial as a ready Response. */
export function denialResponse(denial: Denial): Response {
  return new Response(JSON.stringify(denial.body), { status: denial.status, headers: denial.headers });
}

/** The SDK's AuthInfo shape (tools read it as `extra.authInfo`), from what we verified. */
export function toMcpAuthInfo(auth: VerifiedToken, resource: string) {
  return {
    token: auth.token,
    clientId: auth.clientId,
    scopes: auth.scopes,
    expiresAt: auth.expiresAt,
    resource: new URL(resource),
    extra: { subject: auth.subject, issuer: auth.issuer, claims: auth.claims },
  };
}
