import { formatScope } from '../core/scopes.js';
import { canonicalizeResourceUri } from '../core/uri.js';
import { bearerChallenge, dpopChallenge, type BearerChallenge, type DpopChallenge } from '../core/www-authenticate.js';
import { extractAccessToken } from './bearer.js';
import { dpopGate, type DpopOptions } from './dpop.js';
import { protectedResourceMetadata, protectedResourceMetadataUrl } from './metadata.js';
import { unreachable } from '../core/result.js';
import { confirmationThumbprint, type RevocationCheck, type TokenDefect, type TokenVerifier, type VerifiedToken } from './types.js';
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
  /**
   * DPoP (RFC 9449): tokens bound to a key, sent as `Authorization: DPoP <token>` with a proof
   * signed by that key on every request. Accepted by default; `false` takes bearer tokens only
   * (a DPoP-bound token is refused either way when sent as a bearer token).
   */
  dpop?: DpopOptions | false;
  /** The clock for DPoP proofs and nonces, in seconds since the epoch. Default: the system clock. */
  now?: () => number;
}

/** What the guard reads of a request: the Authorization header, and for DPoP its proof, method and target. */
export interface GuardRequest {
  authorization: string | null | undefined;
  /** The `DPoP` header (sent twice, its values joined with a comma, which is refused). */
  dpop?: string | null | undefined;
  method?: string;
  /** The request target as received: its path (a query is ignored), or an absolute URL. */
  target?: string;
  /**
   * An object that stands for this request (the framework's request or context). A second guard
   * on the same request (a step-up for more scopes) then takes the proof the first one accepted
   * instead of refusing it as replayed.
   */
  request?: object;
}

export type Denial = { status: 400 | 401 | 403 | 503; headers: Record<string, string>; body: { error: string; error_description: string } };
/** `headers`, when present, go on the answer the request gets (a fresh `DPoP-Nonce`). */
export type GuardResult = { ok: true; auth: VerifiedToken; headers?: Record<string, string> } | ({ ok: false } & Denial);

export interface ProtectedResource {
  resource: string;
  metadataUrl: string;
  /** Paths to serve the metadata at: the path-inserted one, and the root one when they differ. */
  metadataPaths: string[];
  metadata: Record<string, unknown>;
  metadataResponse(): Response;
  /**
   * Checks a request: its Authorization header, and for a DPoP-bound token its proof, method and
   * target. Given the header alone, a DPoP request is refused (there is no proof to check).
   */
  check(request: GuardRequest | string | null | undefined, requiredScopes?: string[]): Promise<GuardResult>;
  /**
   * The same answer at once when it needs nothing but memory (a token the verifier holds as
   * verified), undefined when check() must be awaited. For adapters: one promise less on nearly
   * every request. Optional, so a ProtectedResource written by hand without it type-checks;
   * adapters then await check().
   */
  checkKnown?(request: GuardRequest | string | null | undefined, requiredScopes?: string[]): GuardResult | undefined;
  /** The same for a Web Request, with the denial as a ready Response. */
  authenticate(
    request: Request,
    requiredScopes?: string[],
  ): Promise<{ ok: true; auth: VerifiedToken; headers?: Record<string, string> } | { ok: false; response: Response }>;
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
 * audience → 401 (spec: MUST reject); missing scope → 403 insufficient_scope. A DPoP-bound token
 * (RFC 9449) passes only as `Authorization: DPoP` with a good proof by its key, on every request.
 */
export function protectedResource(options: ProtectedResourceOptions): ProtectedResource {
  const resource = canonicalizeResourceUri(options.resource);
  if (options.authorizationServers.length === 0) throw new Error('list at least one authorization server');
  const verifier = options.verifier ?? jwtVerifier({ authorizationServers: options.authorizationServers });
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const dpop = options.dpop === false ? undefined : dpopGate(options.dpop ?? {}, resource, now);
  const metadataUrl = options.metadataUrl ?? protectedResourceMetadataUrl(resource);
  const metadataPath = new URL(metadataUrl).pathname;
  const metadataPaths = [...new Set([metadataPath, '/.well-known/oauth-protected-resource'])];
  const metadata = protectedResourceMetadata({
    resource,
    authorizationServers: options.authorizationServers,
    ...(options.scopesSupported ? { scopesSupported: options.scopesSupported } : {}),
    ...(options.resourceName ? { resourceName: options.resourceName } : {}),
    ...(dpop ? { dpopSigningAlgValuesSupported: dpop.algorithms } : {}),
  });
  const metadataBody = JSON.stringify(metadata);

  /** What a denial's challenge says besides the metadata URL. */
  type ChallengeDetails = Omit<DpopChallenge, 'algs' | 'resourceMetadata'>;

  /**
   * A denial. Its challenges: Bearer first (today's clients read the first challenge's
   * resource_metadata), then DPoP when it is accepted; the error goes on the challenge of the
   * scheme the request used, on both when it used none.
   */
  function deny(status: Denial['status'], scheme: Scheme | undefined, details: ChallengeDetails, error: string, description: string): GuardResult {
    const headers: Record<string, string> = { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' };
    if (status === 503) headers['Retry-After'] = '5';
    else {
      // A DPoP-only error code never goes on the Bearer challenge: only requests with a proof get one.
      const bearerDetails = scheme === 'dpop' ? {} : (details as BearerChallenge);
      const bearer = bearerChallenge({ resourceMetadata: metadataUrl, ...bearerDetails });
      if (dpop) {
        const dpopDetails = scheme === 'bearer' ? {} : details;
        headers['WWW-Authenticate'] = `${bearer}, ${dpopChallenge({ algs: dpop.algorithms, ...dpopDetails, resourceMetadata: metadataUrl })}`;
        const nonce = dpop.currentNonce();
        if (nonce !== undefined) headers['DPoP-Nonce'] = nonce;
      } else headers['WWW-Authenticate'] = bearer;
    }
    return { ok: false, status, headers, body: { error, error_description: description } };
  }

  function invalidToken(scheme: Scheme, description: string): GuardResult {
    return deny(401, scheme, { error: 'invalid_token', errorDescription: description }, 'invalid_token', description);
  }

  function checkKnown(input: GuardRequest | string | null | undefined, requiredScopes = options.requiredScopes ?? []): GuardResult | undefined {
    // The request nearly every client sends: "Bearer <token>" (or "DPoP <token>") with a token
    // verified before. The verifier's cache holds only tokens it accepted, all well-formed, so an
    // exact match needs no parsing of the header and no promise.
    const authorization = typeof input === 'object' && input !== null ? input.authorization : input;
    if (authorization === null || authorization === undefined) return undefined;
    const scheme = authorization.startsWith('Bearer ') ? 'bearer' : dpop && authorization.startsWith('DPoP ') ? 'dpop' : undefined;
    if (scheme === undefined) return undefined;
    const token = authorization.slice(scheme === 'bearer' ? 7 : 5);
    const known = verifier.cached?.(token);
    return known && admit(known, scheme, input, requiredScopes);
  }

  async function check(input: GuardRequest | string | null | undefined, requiredScopes = options.requiredScopes ?? []): Promise<GuardResult> {
    const known = checkKnown(input, requiredScopes);
    if (known) return known;
    const extracted = extractAccessToken(typeof input === 'object' && input !== null ? input.authorization : input);
    if (extracted.kind === 'none' || (extracted.kind === 'token' && extracted.scheme === 'dpop' && !dpop)) {
      // RFC 6750 §3.1: no error code in the challenge when the request carried no credentials.
      return deny(401, undefined, { scope: formatScope(requiredScopes) }, 'unauthorized', 'this server requires an access token');
    }
    if (extracted.kind === 'malformed') {
      return deny(400, undefined, { error: 'invalid_request', errorDescription: extracted.reason }, 'invalid_request', extracted.reason);
    }
    const verified = await verifier.verify(extracted.token);
    if (!verified.ok) return refusal(verified.defect, extracted.scheme);
    return admit(verified.value, extracted.scheme, input, requiredScopes);
  }

  /** The verifier's refusal as the guard answers it; an unavailable verifier's reason stays here. */
  function refusal(defect: TokenDefect, scheme: Scheme): GuardResult {
    switch (defect.code) {
      case 'invalid_token':
        return invalidToken(scheme, defect.description);
      case 'unavailable':
        return deny(503, undefined, {}, 'temporarily_unavailable', 'the token cannot be checked right now; try again shortly');
      default:
        return unreachable(defect.code);
    }
  }

  /** What every valid token must also pass, cached or not: its binding and proof, revocation, audience, scope. */
  function admit(auth: VerifiedToken, scheme: Scheme, input: GuardRequest | string | null | undefined, requiredScopes: string[]): GuardResult {
    let headers: Record<string, string> | undefined;
    const jkt = auth.jkt ?? (auth.claims.cnf === undefined ? undefined : (confirmationThumbprint(auth.claims.cnf) ?? null));
    if (scheme === 'bearer') {
      // RFC 9449 §7.2: a bound token is worthless without its key; as a bearer token it is refused.
      if (jkt === null) return invalidToken(scheme, 'the access token is bound by a confirmation method this server does not check');
      if (jkt !== undefined) return invalidToken(scheme, 'the access token is DPoP-bound: send it as "Authorization: DPoP" with a proof');
    } else {
      // RFC 9449 §7.1: nothing ties a proof to a token that is not bound to a key.
      if (jkt === undefined) return invalidToken(scheme, 'the access token is not DPoP-bound: send it as a Bearer token');
      if (jkt === null) return invalidToken(scheme, 'the access token is bound by a confirmation method this server does not check');
      const proven = dpop!.check(typeof input === 'object' && input !== null ? input : {}, auth.token, jkt);
      if (!proven.ok) return deny(401, scheme, { error: proven.error, errorDescription: proven.description }, proven.error, proven.description);
      if (proven.nonce !== undefined) headers = { 'DPoP-Nonce': proven.nonce };
    }
    // After the verifier, whose cache of verified tokens must not outlive a revocation.
    if (options.revocations?.isRevoked(auth)) return invalidToken(scheme, 'the access token has been revoked');
    if (!audienceMatches(auth.audience, resource)) return invalidToken(scheme, 'the access token was not issued for this server');
    // every() first: no array is made for the request that has all it needs.
    if (!requiredScopes.every((needed) => auth.scopes.includes(needed))) {
      const missing = requiredScopes.filter((needed) => !auth.scopes.includes(needed));
      const description = `this request needs the scope ${formatScope(missing)}`;
      return deny(
        403,
        scheme,
        { error: 'insufficient_scope', errorDescription: description, scope: formatScope(requiredScopes) },
        'insufficient_scope',
        description,
      );
    }
    return headers ? { ok: true, auth, headers } : { ok: true, auth };
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
      const result = await check(guardRequestOf(request), requiredScopes);
      if (result.ok) return result;
      return { ok: false, response: denialResponse(result) };
    },
  };
}

type Scheme = 'bearer' | 'dpop';

/** What the guard reads of a Web Request. */
export function guardRequestOf(request: Request): GuardRequest {
  return { authorization: request.headers.get('authorization'), dpop: request.headers.get('dpop'), method: request.method, target: request.url, request };
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
    extra: { subject: auth.subject, issuer: auth.issuer, claims: auth.claims, ...(auth.actors ? { actors: auth.actors } : {}) },
  };
}
