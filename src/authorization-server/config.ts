/**
 * The options of `createAuthorizationServer`, checked and resolved (defaults applied) into plain
 * data. What acts (the store, the clock, the log, caches, registries) is built from the options
 * beside it, in the server's context (context.ts).
 */
import { canonicalizeResourceUri, normalizeIssuer } from '../core/uri.js';
import { privateUseSchemeProblem } from '../core/redirect-uri.js';
import type { SecretBox } from '../core/secret-box.js';
import type { Store } from '../store/store.js';
import type { AuditRecord } from './audit.js';
import { hasDeviceAuthorization, hasRateBuckets } from '../store/capabilities.js';
import type { ClientJwksOptions } from './assertions/client-keys.js';
import type { ClientDocumentsOptions } from './client-documents/documents.js';
import type { UpstreamSignInPolicy } from './upstream/policy.js';
import type { UpstreamProviderOptions } from './upstream/provider.js';
import { cookieSettings, type CookieSettings } from './http/cookies.js';
import { resolveRateLimits, type RateLimitOptions, type ResolvedRateLimits } from './rate-limit/limits.js';
import { checkTrustedIssuer, resolveWorkloadRules, type WorkloadRule, type WorkloadRuleOptions } from './assertions/workload-rules.js';
import { resolveTokenExchange, type ResolvedTokenExchangeConfig, type TokenExchangeOptions } from './grants/token-exchange-policy.js';

/** Where each endpoint is served, under the issuer. Revision A's defaults (/authorize, /token, /register) are the paths used. */
export const ENDPOINT_PATHS = {
  authorization: '/authorize',
  token: '/token',
  registration: '/register',
  revocation: '/revoke',
  introspection: '/introspect',
  jwks: '/jwks',
  deviceAuthorization: '/device_authorization',
  userinfo: '/userinfo',
} as const;

/** Each endpoint's URL: the issuer and its path. */
export type EndpointUrls = { readonly [name in keyof typeof ENDPOINT_PATHS]: string };

/** Where upstream providers send the person back, under the issuer. */
export const UPSTREAM_CALLBACK_PATH = '/upstream/callback';

/** Sign-in through upstream identity providers: the spec's third-party authorization. */
export interface UpstreamOptions {
  /** Offered as buttons on the sign-in page, in this order. */
  providers: UpstreamProviderOptions[];
  /** Seals upstream tokens at rest (AES-256-GCM). */
  secretBox: SecretBox;
  /** Whether local usernames and passwords are offered too. Default true. */
  localUsers?: boolean;
  /** Seconds one upstream sign-in may carry our grants before the person must sign in upstream again. Default: 24 hours. */
  sessionTtl?: number;
  /** Who may sign in (email domains, addresses, a hook). Default: anyone the provider signs in. */
  policy?: UpstreamSignInPolicy;
  /** Allows http:// providers on loopback (development and tests only). Default false. */
  allowLoopbackHttp?: boolean;
  /** Replaces fetch for requests to the providers (proxies, tests). */
  fetch?: typeof fetch;
}

/** Upstream sign-in's settings; its providers, sealing and policy are in the services (`UpstreamSignIn`, upstream/upstream-sign-in.ts). */
export interface ResolvedUpstreamConfig {
  localUsers: boolean;
  sessionTtl: number;
  /** `<issuer>/upstream/callback`: what the operator registers at each provider. */
  callbackUrl: string;
}

/**
 * The `aud` a private_key_jwt client assertion may carry. `issuer` (the default): our issuer
 * identifier alone, as a single string (draft-ietf-oauth-rfc7523bis). An assertion whose audience
 * is a token endpoint URL may have been made for another server that named our URL as its own in
 * its metadata, and handed to it (audience injection). `issuer-or-token-endpoint` also accepts
 * our token endpoint URL, or a list of nothing but these two, for clients that follow RFC 7523 as
 * first written; a list that names anyone else is refused either way.
 */
export type ClientAssertionAudience = 'issuer' | 'issuer-or-token-endpoint';

/** Options of `createAuthorizationServer`. Defaults are documented where they are declared. */
export interface AuthorizationServerOptions {
  /** The issuer identifier: https (http only on loopback). Endpoints live under it. */
  issuer: string;
  /** Any store: what it has beyond the core contract (upkeep, shared rate buckets, a revocation feed) is used where it helps. */
  store: Store;
  /**
   * Canonical URIs of the context servers (resources) this server issues tokens for.
   * A `resource` parameter must name one of them (RFC 8707); the first is the default.
   */
  resources: string[];
  /** Resource used when a request has no `resource` parameter (Revision A). Default: resources[0]. */
  defaultResource?: string;
  /** Scopes advertised and accepted. Default: ['mcp:tools', 'mcp:admin']. */
  scopesSupported?: string[];
  /** Scopes granted when a request names none; all that a machine client registered with no `scope`, or an ID-JAG without one, may have. Default: ['mcp:tools']. */
  defaultScopes?: string[];
  /** Access token lifetime in seconds. Default: 600 (10 minutes). */
  accessTokenTtl?: number;
  /** Refresh token lifetime in seconds; each rotation starts it again. Default: 14 days. */
  refreshTokenTtl?: number;
  /** Authorization code lifetime in seconds. Default: 60. */
  codeTtl?: number;
  /** Browser login session lifetime in seconds. Default: 8 hours. */
  sessionTtl?: number;
  /** How long a login/consent page may stay open, in seconds. Default: 600. */
  interactionTtl?: number;
  /**
   * Seconds after a refresh token's rotation during which presenting it again, when it cannot be
   * taken for a retry (refreshRetrySeconds: the token it was rotated to was used, or retries are
   * off), is refused with invalid_grant but does not revoke the family. Default: 0 — a reuse
   * revokes the family, as RFC 9700 §4.14.2 describes.
   */
  refreshReuseGraceSeconds?: number;
  /**
   * Seconds after a refresh token's rotation during which presenting it again, while the token it
   * was rotated to has never been used, is taken for a retry of that rotation (its answer lost to a
   * crash or a dropped connection, or two sessions of one client refreshing at once): answered
   * with that same token and a new access token, as often as it comes, instead of revoking the
   * family. 0 turns it off. Default: 60; at most 300.
   */
  refreshRetrySeconds?: number;
  /**
   * Dynamic client registration (RFC 7591): 'open' (default), 'closed', or
   * { initialAccessToken } to require `Authorization: Bearer <token>` on /register.
   */
  registration?: 'open' | 'closed' | { initialAccessToken: string };
  /**
   * Native apps' own redirect URI schemes (RFC 8252 §7.1 private-use schemes, such as `cursor` or
   * `com.example.app`) that registrations and client ID metadata documents may use beside https
   * and loopback http. A URI of such a scheme is matched as an exact string, and the consent page
   * says that the application returns to an app on the person's device. Schemes that browsers or
   * operating systems give a meaning of their own (`http`, `javascript`, `data`, `file`…) are
   * refused. Default: none (the spec's rule: https, or http on loopback).
   */
  allowedRedirectSchemes?: string[];
  /**
   * Seconds after its last use (or, never used, its registration) that a dynamically registered
   * client is deleted by `sweep()`, with everything issued to it. 0 keeps them forever. Default: 30 days.
   */
  registrationTtl?: number;
  /**
   * The address a request came from (the socket's peer), for rate limits and for throttling
   * sign-in by address as well as by account. Default: unknown (no limits by address; sign-in
   * throttled by account only). `serve` gives the socket's peer address.
   */
  clientAddress?: (request: Request) => string | undefined;
  /**
   * Reverse proxies (IP addresses or CIDR ranges) whose `X-Forwarded-For` is believed: when the
   * peer is one of them, the client is the rightmost hop that is not. Default: none — the header
   * is never read, since anyone can send it.
   */
  trustProxy?: string[];
  /**
   * Token buckets per client address on /register, /token, the sign-in pages and new client ID
   * metadata documents (429 with Retry-After). Defaults: rate-limit/limits.ts; each can be
   * changed or turned off (`false`).
   */
  rateLimits?: RateLimitOptions;
  /** Largest accepted request body in bytes. Default: 64 KiB. */
  maxBodyBytes?: number;
  /** Sign-in through upstream identity providers. Default: local users only. */
  upstream?: UpstreamOptions;
  /**
   * Client ID metadata documents (a URL as client_id, MCP 2025-11-25). Default: accepted from any
   * public https host when registration is open; refused when it is not, unless `enabled: true`.
   * New ones are rate-limited (`rateLimits.clientDocument`, `rateLimits.clientDocumentTotal`).
   */
  clientIdMetadataDocuments?: ClientDocumentsOptions;
  /** Fetching the key sets of private_key_jwt clients registered with a `jwks_uri`. */
  clientJwks?: ClientJwksOptions;
  /** The `aud` a private_key_jwt client assertion may carry (above). Default: 'issuer'. */
  clientAssertionAudience?: ClientAssertionAudience;
  /**
   * Enterprise identity providers (issuer URLs, https) whose Identity Assertion JWT Authorization
   * Grants (ID-JAG) confidential clients may present with the jwt-bearer grant: the person the
   * IdP names becomes a local user on first use. Default: none.
   */
  trustedIdps?: string[];
  /** Workload identity federation: platform tokens accepted with the jwt-bearer grant, as which client. Default: none. */
  workloads?: WorkloadRuleOptions[];
  /** Tests only: allows trusted IdPs and workload issuers at http://127.0.0.1. Default false. */
  allowInsecureIssuers?: boolean;
  /** Token exchange (RFC 8693): delegated tokens for a context server calling another on a person's behalf. Default: off. */
  tokenExchange?: TokenExchangeOptions;
  /**
   * DPoP (RFC 9449) at the token endpoint. Proofs are always accepted (and bind the tokens);
   * `nonce: true` makes every proof carry a recent nonce from this server (RFC 9449 §8), so a
   * proof made ahead of time is refused. Default: no nonce.
   */
  dpop?: { nonce?: boolean };
  /**
   * Prometheus metrics (docs/metrics.md), kept in a registry of this server's own
   * (`AuthorizationServer.metrics`) and served at `<issuer>/metrics`: to loopback peers only (as
   * `clientAddress` tells them), or with `{ token }` to whoever sends `Authorization: Bearer <token>`.
   * Default: off (no metrics kept, /metrics is 404).
   */
  metrics?: boolean | { token?: string };
  /**
   * The admin console at `<issuer>/admin` (where the store has the console capability), for users
   * marked administrators (`users admin NAME on`) and for people whose upstream identity has one of
   * `emails` (verified by their provider). An action there needs a sign-in younger than
   * `reauthSeconds` (default 600); older, the console asks the person to sign in again first.
   */
  admin?: { emails?: string[]; reauthSeconds?: number };
  /** Seconds clock; tests replace it. Default: the system clock. */
  now?: () => number;
  /**
   * Where audit events go, each stamped with its time and outcome (src/authorization-server/audit.ts,
   * docs/audit.md; never tokens or secrets). Default: nowhere.
   */
  log?: (record: AuditRecord) => void;
  /**
   * Audit events kept in the store too (where it has the audit events capability), for the admin
   * console: written in batches, never in a request's way; `sweep()` deletes those older than
   * `retentionDays` (default 30; 0 keeps none and deletes those kept before). Call `close()` before
   * closing the store, so the last ones are written. Default: off (`serve` turns it on).
   */
  auditEvents?: boolean | { retentionDays?: number };
  /**
   * More for /readyz to report beside its checks, each under its own key (`serve` reports its
   * gateway upstreams as `upstreams`): what is served beside this server, which must not make it
   * fail. Each report is given 2 s; one that fails or takes longer reads `"unknown"`.
   */
  readinessReports?: Record<string, () => Promise<Record<string, string>>>;
}

/** The options resolved: plain data only (no store, clock, log or other function). */
export interface ResolvedConfig {
  issuer: string;
  /** issuer URL's path ('' for an issuer at the root), for mounting endpoints. */
  basePath: string;
  /** Every endpoint's URL, whether served or not (registration closed, no device grant): what metadata advertises, assertions are addressed to, DPoP proofs name. */
  endpoints: EndpointUrls;
  resources: string[];
  defaultResource: string;
  scopesSupported: string[];
  defaultScopes: string[];
  accessTokenTtl: number;
  refreshTokenTtl: number;
  codeTtl: number;
  sessionTtl: number;
  interactionTtl: number;
  refreshReuseGraceSeconds: number;
  refreshRetrySeconds: number;
  registration: 'open' | 'closed' | { initialAccessToken: string };
  registrationTtl: number;
  /** What redirect URIs may be besides https and loopback http: the admitted private-use schemes, lowercase. */
  redirectUriRules: { privateUseSchemes: string[] };
  rateLimits: ResolvedRateLimits;
  maxBodyBytes: number;
  /** Our cookies' names and attributes (http/cookies.ts): `__Host-` names for an https issuer. */
  cookies: CookieSettings;
  /** Null when upstream sign-in is off (no providers). */
  upstream: ResolvedUpstreamConfig | null;
  /** Whether URL client ids are accepted (the `enabled` default applied). */
  clientIdMetadataDocuments: { enabled: boolean };
  clientAssertionAudience: ClientAssertionAudience;
  /** Null when the jwt-bearer grant is off (no trusted IdP, no workload rule). */
  jwtBearer: ResolvedJwtBearerConfig | null;
  /** Null when token exchange is off (nothing the policy allows). */
  tokenExchange: ResolvedTokenExchangeConfig | null;
  /** Whether the device grant (RFC 8628) is served: where the store keeps device authorizations. */
  deviceGrant: boolean;
  /** Whether DPoP proofs at the token endpoint must carry a nonce of ours. */
  dpopNonce: boolean;
  /** Null when metrics are off; `token` null serves them to loopback peers only. */
  metrics: { token: string | null } | null;
  /** Emails (lowercase) whose upstream identities are administrators; how young a sign-in an admin action needs. */
  admin: { emails: string[]; reauthSeconds: number };
  /** Null when audit events are not kept in the store; `retentionDays` 0 keeps none. */
  auditEvents: { retentionDays: number } | null;
}

/** Who may sign jwt-bearer grants. */
export interface ResolvedJwtBearerConfig {
  trustedIdps: string[];
  workloads: WorkloadRule[];
  allowLoopbackHttp: boolean;
}

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  const result = value ?? fallback;
  if (!Number.isInteger(result) || result <= 0) throw new Error(`${name} must be a positive whole number of seconds`);
  return result;
}

export function resolveConfig(options: AuthorizationServerOptions): ResolvedConfig {
  const issuer = normalizeIssuer(options.issuer);
  if (!options.store) throw new Error('store is required');
  if (!Array.isArray(options.resources) || options.resources.length === 0) {
    throw new Error('resources must name at least one context server URI');
  }
  const resources = options.resources.map((resource) => canonicalizeResourceUri(resource));
  const defaultResource = canonicalizeResourceUri(options.defaultResource ?? resources[0]!);
  if (!resources.includes(defaultResource)) throw new Error('defaultResource must be one of resources');
  const scopesSupported = options.scopesSupported ?? ['mcp:tools', 'mcp:admin'];
  const defaultScopes = options.defaultScopes ?? ['mcp:tools'];
  for (const scope of defaultScopes) {
    if (!scopesSupported.includes(scope)) throw new Error(`default scope ${scope} is not in scopesSupported`);
  }
  const registration = options.registration ?? 'open';
  if (typeof registration === 'object' && !(registration.initialAccessToken?.length >= 16)) {
    throw new Error('registration.initialAccessToken must be at least 16 characters');
  }
  const refreshReuseGraceSeconds = options.refreshReuseGraceSeconds ?? 0;
  if (!Number.isInteger(refreshReuseGraceSeconds) || refreshReuseGraceSeconds < 0 || refreshReuseGraceSeconds > 60) {
    throw new Error('refreshReuseGraceSeconds must be a whole number from 0 to 60');
  }
  const refreshRetrySeconds = options.refreshRetrySeconds ?? 60;
  if (!Number.isInteger(refreshRetrySeconds) || refreshRetrySeconds < 0 || refreshRetrySeconds > 300) {
    throw new Error('refreshRetrySeconds must be a whole number from 0 to 300');
  }
  for (const name of Object.keys(options.readinessReports ?? {})) {
    if (name === 'status' || name === 'checks') throw new Error(`readinessReports.${name} would replace /readyz's own ${name}`);
  }
  const basePath = new URL(issuer).pathname.replace(/\/+$/, '');
  return {
    issuer,
    basePath,
    endpoints: endpointUrls(issuer),
    resources,
    defaultResource,
    scopesSupported,
    defaultScopes,
    accessTokenTtl: positiveInteger('accessTokenTtl', options.accessTokenTtl, 600),
    refreshTokenTtl: positiveInteger('refreshTokenTtl', options.refreshTokenTtl, 14 * 24 * 3600),
    codeTtl: positiveInteger('codeTtl', options.codeTtl, 60),
    sessionTtl: positiveInteger('sessionTtl', options.sessionTtl, 8 * 3600),
    interactionTtl: positiveInteger('interactionTtl', options.interactionTtl, 600),
    refreshReuseGraceSeconds,
    refreshRetrySeconds,
    registration,
    registrationTtl: options.registrationTtl === 0 ? 0 : positiveInteger('registrationTtl', options.registrationTtl, 30 * 24 * 3600),
    redirectUriRules: { privateUseSchemes: resolveRedirectSchemes(options.allowedRedirectSchemes) },
    rateLimits: resolveRateLimits(options.rateLimits, options.store.sharedByReplicas ?? false, hasRateBuckets(options.store)),
    maxBodyBytes: positiveInteger('maxBodyBytes', options.maxBodyBytes, 64 * 1024),
    cookies: cookieSettings(issuer),
    upstream: options.upstream ? resolveUpstreamConfig(options.upstream, issuer) : null,
    // A document creates a client: unless the operator says otherwise, only where registration is open.
    clientIdMetadataDocuments: { enabled: options.clientIdMetadataDocuments?.enabled ?? registration === 'open' },
    clientAssertionAudience: resolveClientAssertionAudience(options.clientAssertionAudience),
    jwtBearer: resolveJwtBearerConfig(options, issuer, scopesSupported),
    tokenExchange: resolveTokenExchange(options.tokenExchange, { resources, scopesSupported }),
    deviceGrant: hasDeviceAuthorization(options.store),
    dpopNonce: options.dpop?.nonce ?? false,
    metrics: resolveMetricsConfig(options.metrics),
    admin: resolveAdminConfig(options.admin),
    auditEvents: resolveAuditEventsConfig(options.auditEvents),
  };
}

function endpointUrls(issuer: string): EndpointUrls {
  const urls: Record<string, string> = {};
  for (const [name, path] of Object.entries(ENDPOINT_PATHS)) urls[name] = `${issuer}${path}`;
  return urls as EndpointUrls;
}

function resolveClientAssertionAudience(value: AuthorizationServerOptions['clientAssertionAudience']): ClientAssertionAudience {
  if (value === undefined) return 'issuer';
  if (value === 'issuer' || value === 'issuer-or-token-endpoint') return value;
  throw new Error(`clientAssertionAudience must be 'issuer' or 'issuer-or-token-endpoint', not ${JSON.stringify(value)}`);
}

function resolveRedirectSchemes(schemes: AuthorizationServerOptions['allowedRedirectSchemes']): string[] {
  if (schemes === undefined) return [];
  if (!Array.isArray(schemes)) throw new Error('allowedRedirectSchemes must be an array of URI schemes');
  return [
    ...new Set(
      schemes.map((scheme) => {
        const problem = typeof scheme === 'string' ? privateUseSchemeProblem(scheme) : 'a scheme is a string';
        if (problem) throw new Error(`allowedRedirectSchemes: ${problem}`);
        return scheme.toLowerCase();
      }),
    ),
  ];
}

function resolveAuditEventsConfig(auditEvents: AuthorizationServerOptions['auditEvents']): ResolvedConfig['auditEvents'] {
  if (!auditEvents) return null;
  const retentionDays = auditEvents === true ? 30 : (auditEvents.retentionDays ?? 30);
  if (!Number.isInteger(retentionDays) || retentionDays < 0) throw new Error('auditEvents.retentionDays must be a whole number of days, 0 or more');
  return { retentionDays };
}

function resolveAdminConfig(admin: AuthorizationServerOptions['admin']): ResolvedConfig['admin'] {
  const emails = (admin?.emails ?? []).map((email) => {
    if (typeof email !== 'string' || !/^[^\s@]+@[^\s@]+$/.test(email)) throw new Error(`admin.emails: ${JSON.stringify(email)} is not an email address`);
    return email.toLowerCase();
  });
  return { emails, reauthSeconds: positiveInteger('admin.reauthSeconds', admin?.reauthSeconds, 600) };
}

function resolveMetricsConfig(metrics: AuthorizationServerOptions['metrics']): ResolvedConfig['metrics'] {
  if (!metrics) return null;
  const token = metrics === true ? undefined : metrics.token;
  if (token !== undefined && !(typeof token === 'string' && token.length >= 16)) throw new Error('metrics.token must be at least 16 characters');
  return { token: token ?? null };
}

function resolveJwtBearerConfig(options: AuthorizationServerOptions, issuer: string, scopesSupported: string[]): ResolvedJwtBearerConfig | null {
  const allowLoopbackHttp = options.allowInsecureIssuers ?? false;
  const trustedIdps = (options.trustedIdps ?? []).map((idp, index) => checkTrustedIssuer(idp, `trustedIdps[${index}]`, allowLoopbackHttp));
  const workloads = resolveWorkloadRules(options.workloads ?? [], { issuer, scopesSupported, allowLoopbackHttp });
  if (trustedIdps.length === 0 && workloads.length === 0) return null;
  return { trustedIdps: [...new Set(trustedIdps)], workloads, allowLoopbackHttp };
}

function resolveUpstreamConfig(options: UpstreamOptions, issuer: string): ResolvedUpstreamConfig | null {
  if (options.providers.length === 0) {
    if (options.localUsers === false) throw new Error('with local users off, at least one upstream provider is needed');
    return null;
  }
  if (!options.secretBox) throw new Error('upstream.secretBox is required: upstream tokens are kept sealed');
  return {
    localUsers: options.localUsers ?? true,
    sessionTtl: positiveInteger('upstream.sessionTtl', options.sessionTtl, 24 * 3600),
    callbackUrl: `${issuer}${UPSTREAM_CALLBACK_PATH}`,
  };
}
