import { Hono } from 'hono';
import { wellKnownUrl } from '../core/uri.js';
import { ENDPOINT_PATHS, UPSTREAM_CALLBACK_PATH, type AuthorizationServerOptions } from './config.js';
import { createServerContext } from './context.js';
import { ensureWorkloadClients } from './assertions/workload-clients.js';
import { authorizeEndpoint } from './endpoints/authorize.js';
import { interactionPage, interactionSubmit } from './endpoints/interaction.js';
import { deviceAuthorizationEndpoint } from './endpoints/device-authorization.js';
import { ACCOUNT_PATH, servesAccountPage } from './account-link.js';
import { accountEndpoint, accountSubmit } from './endpoints/account.js';
import { ADMIN_PATH, adminEndpoint, adminSubmit } from './endpoints/admin.js';
import { devicePage, deviceSubmit } from './endpoints/device.js';
import { DEVICE_VERIFICATION_PATH } from './device-codes.js';
import { introspectEndpoint } from './endpoints/introspect.js';
import { jwksEndpoint } from './endpoints/jwks.js';
import { authorizationServerMetadata, metadataEndpoint, type AuthorizationServerMetadata } from './endpoints/metadata.js';
import { REVOCATION_LIST_PATH } from './revocation-list.js';
import { registerEndpoint } from './endpoints/register.js';
import { revokeEndpoint } from './endpoints/revoke.js';
import { tokenEndpoint } from './endpoints/token.js';
import { upstreamCallbackEndpoint } from './endpoints/upstream-callback.js';
import { healthzEndpoint, readyzEndpoint } from './endpoints/health.js';
import { metricsEndpoint } from './endpoints/metrics.js';
import { notFound } from './http/errors.js';
import { route } from './http/routes.js';
import type { SigningKeys } from './keys.js';
import type { Revocations } from './revocations.js';
import type { RateLimitName } from './rate-limit/limits.js';
import type { AuditEvent } from './audit.js';
import type { Edge, Gated, Handler } from './http/routes.js';
import type { EndpointRequest } from './http/request.js';
import { trustedProxies } from '../core/client-address.js';
import { revocationListEndpoint } from './endpoints/revocation-list.js';
import { userinfoEndpoint } from './endpoints/userinfo.js';
import { upstreamAccessFor, type UpstreamAccess } from './upstream/tool-access.js';
import { gatewayToken, type GatewayTokenRequest, type GatewayTokenResult } from './grants/token-exchange-gateway.js';
import type { SweepOptions } from '../store/store.js';
import { hasAdministration, hasAuditEvents, hasConsole, hasRevocationFeed, hasSignOut, hasUpkeep } from '../store/capabilities.js';
import type { Registry } from 'prom-client';
import { startOnNode, type Running, type StartOptions } from './node-server/start.js';

export type { AuthorizationServerOptions, ClientAssertionAudience, UpstreamOptions } from './config.js';
export { AUDIT_EVENTS, type AuditEvent, type AuditEventName, type AuditFields, type AuditOutcome, type AuditRecord, type AuditValue } from './audit.js';
export type { AuthorizationServerMetadata } from './endpoints/metadata.js';
export type { RateLimit, RateLimitOptions } from './rate-limit/limits.js';
export { DEFAULT_RATE_LIMITS } from './rate-limit/limits.js';
export type { UpstreamAccess } from './upstream/tool-access.js';
export { Revocations, type RevocationsOptions } from './revocations.js';
export type { UpstreamProviderOptions, OidcProviderOptions, OAuth2ProviderOptions, UpstreamIdentity } from './upstream/provider.js';
export { checkUpstreamProviders, githubProvider, githubProfile } from './upstream/provider.js';
export type { UpstreamSignInPolicy } from './upstream/policy.js';
export type { WorkloadRuleOptions } from './assertions/workload-rules.js';
export type { DelegationRuleOptions, IdJagAudienceOptions, TokenExchangeOptions } from './grants/token-exchange-policy.js';
export type { GatewayTokenDefect, GatewayTokenRequest, GatewayTokenResult } from './grants/token-exchange-gateway.js';
export type { SigningKeys } from './keys.js';
/** The JSON 404 the server answers for paths it does not serve; for apps that mount it beside others. */
export { notFound } from './http/errors.js';
export { StartError, type StartStep } from './node-server/start.js';
export { LISTEN_DEFAULTS, type FetchApp, type ListenOptions } from './node-server/listener.js';

const DAY_MS = 24 * 3600 * 1000;

export interface AuthorizationServer {
  /** The Hono app with every endpoint; mount it or serve it as it is. */
  app: Hono;
  /** Web-standard handler: Request in, Response out. */
  handle(request: Request): Promise<Response>;
  /**
   * The metadata document it serves (RFC 8414): its issuer identifier as resolved, its endpoints,
   * `scopes_supported`, … For a context server beside it, and for whatever must name it as clients see it.
   */
  metadata: AuthorizationServerMetadata;
  keys: SigningKeys;
  /**
   * Revoked grants and tokens, for a guard beside this server (`protectedResource({ revocations })`):
   * this process's revocations at once; other processes' once `start()` follows the store (about
   * a second on SQLite, at once on PostgreSQL). Call `stop()` before closing the store.
   */
  revocations: Revocations;
  /** The Prometheus registry of this server's metrics (docs/metrics.md); null unless the `metrics` option is set. */
  metrics: Registry | null;
  /**
   * The pages for people it serves, by URL: a person's own page (`account`) and the admin console
   * (`admin`); null where the store cannot hold what the page needs.
   */
  pages: { account: string | null; admin: string | null };
  /**
   * Third-party authorization, for tools of a context server beside this one: the provider's
   * access to the person behind one of our access tokens (its verified claims: the grant is found
   * by `grant_id`), or null when that token did not come from an upstream sign-in.
   */
  upstreamAccess(claims: Record<string, unknown>): Promise<UpstreamAccess | null>;
  /**
   * For a gateway beside this server (`mountGateway`'s `upstreamToken`): the token exchange
   * grant's delegation (RFC 8693), in process. The access token the gateway's guard accepted is
   * exchanged for a token for the upstream (`audience`), naming the gateway in `act`, with the
   * grant's rules: at most the token's scopes, never past its end, not for a revoked token, the
   * actor chain within `maxDelegationDepth`. The gateway's own rule is its configuration: no
   * delegation rule is needed. The new token is a bearer token; the gateway presents it.
   */
  gatewayToken(request: GatewayTokenRequest): Promise<GatewayTokenResult>;
  /**
   * Logs an audit event of a part served beside this server (a gateway's `gateway_*` events) as
   * the server logs its own: to the `log` option, the stored audit events and the metrics.
   */
  audit(event: AuditEvent): void;
  /**
   * Spends one request of a person's budget at a gateway path beside this server (the `gateway`
   * rate limit, per path and subject; in the store when the limits are shared by replicas). Past
   * it, a `gateway_rate_limited` audit event, and how many seconds until a request is allowed.
   */
  gatewayRateLimit(path: string, subject: string): Promise<{ allowed: true } | { allowed: false; retryAfter: number }>;
  /** Resolves every upstream provider (discovery); rejects naming the first that is misconfigured or unreachable. */
  upstreamReady(): Promise<void>;
  /**
   * Creates the clients the workload rules name that do not exist yet (each is also created on its
   * first use); rejects naming one that exists and cannot use the jwt-bearer grant.
   */
  workloadClientsReady(): Promise<void>;
  /**
   * Deletes what expired, and dynamically registered clients unused for `registrationTtl`; returns
   * how many rows. `signal` stops it after the batch in flight (the rest is the next sweep's);
   * `pause` replaces its rests between batches. Nothing on a store without upkeep.
   */
  sweep(options?: Pick<SweepOptions, 'signal' | 'pause'>): Promise<number>;
  /**
   * Writes the audit events still waiting for the store (the `auditEvents` option) and takes no
   * more. Call it when the server stops serving, before closing the store.
   */
  close(): Promise<void>;
}

/**
 * An OAuth 2.1 authorization server for context servers, serving Revision A clients (metadata at
 * the base URL, default paths, no `resource`) and Revision B clients (`resource`, audience-bound
 * tokens) from the same endpoints.
 */
export function createAuthorizationServer(options: AuthorizationServerOptions): AuthorizationServer {
  const ctx = createServerContext(options);
  const { config, keys, rateLimits, revocations } = ctx;
  /** The handler, after the client address's budget for `name` is checked (before any work, the body's reading included). */
  const limited = (name: RateLimitName, handle: Handler): Gated => ({ before: (request) => rateLimits.check(name, request.clientAddress), handle });
  // How the edge reads each request (http/routes.ts).
  const edge: Edge = {
    maxBodyBytes: config.maxBodyBytes,
    trustedProxies: options.trustProxy && options.trustProxy.length > 0 ? trustedProxies(options.trustProxy) : null,
    peerOf: options.clientAddress,
  };
  const app = new Hono();
  const base = config.basePath;
  // With metrics on, every error answer is counted by endpoint (its path under the issuer) and code.
  const metrics = ctx.metrics;
  const failed = metrics ? { failed: (path: string, code: string) => metrics.endpointError(path.slice(base.length) || '/', code) } : {};
  const api = { cors: true, log: ctx.log, edge, ...failed };
  const pages = { cors: false, html: true, log: ctx.log, edge, ...failed };

  route(app, new URL(wellKnownUrl(config.issuer, 'oauth-authorization-server')).pathname, { GET: () => metadataEndpoint(config) }, api);
  // OpenID Connect Discovery 1.0 §4: the same document, under the issuer's path rather than before it.
  route(app, `${base}/.well-known/openid-configuration`, { GET: () => metadataEndpoint(config) }, api);
  route(app, base + ENDPOINT_PATHS.jwks, { GET: () => jwksEndpoint(ctx) }, api);
  // A token's signature checked and the store read for each request: the token endpoint's budget bounds it.
  route(
    app,
    base + ENDPOINT_PATHS.userinfo,
    { GET: limited('token', (request) => userinfoEndpoint(ctx, request)), POST: limited('token', (request) => userinfoEndpoint(ctx, request)) },
    api,
  );
  route(app, base + ENDPOINT_PATHS.token, { POST: limited('token', (request) => tokenEndpoint(ctx, request)) }, api);
  route(app, base + ENDPOINT_PATHS.registration, { POST: limited('register', (request) => registerEndpoint(ctx, request)) }, api);
  // The device grant's endpoints only where the store keeps device authorizations.
  if (config.deviceGrant) {
    route(app, base + ENDPOINT_PATHS.deviceAuthorization, { POST: limited('token', (request) => deviceAuthorizationEndpoint(ctx, request)) }, api);
    route(
      app,
      base + DEVICE_VERIFICATION_PATH,
      { GET: (request) => devicePage(ctx, request), POST: limited('signIn', (request) => deviceSubmit(ctx, request)) },
      pages,
    );
  }
  route(app, base + ENDPOINT_PATHS.revocation, { POST: (request) => revokeEndpoint(ctx, request) }, api);
  route(app, base + ENDPOINT_PATHS.introspection, { POST: (request) => introspectEndpoint(ctx, request) }, { cors: false, log: ctx.log, edge, ...failed });
  // The list is read from the store's revocation feed: a store without one has no list to serve.
  const feed = ctx.store;
  if (hasRevocationFeed(feed)) {
    route(app, base + REVOCATION_LIST_PATH, { POST: (request) => revocationListEndpoint(ctx, request, feed) }, { cors: false, log: ctx.log, edge, ...failed });
  }
  route(
    app,
    base + ENDPOINT_PATHS.authorization,
    { GET: (request) => authorizeEndpoint(ctx, request), POST: (request) => authorizeEndpoint(ctx, request) },
    pages,
  );
  route(
    app,
    `${base}/interaction/:id`,
    {
      GET: (request, params) => interactionPage(ctx, request, params.id!),
      POST: limited('signIn', (request, params) => interactionSubmit(ctx, request, params.id!)),
    },
    pages,
  );

  const pageUrls: AuthorizationServer['pages'] = { account: null, admin: null };
  // The account page lists and revokes consents, and signs out: a store that cannot has no account page.
  const admin = ctx.store;
  if (servesAccountPage(admin)) {
    pageUrls.account = `${config.issuer}${ACCOUNT_PATH}`;
    route(
      app,
      base + ACCOUNT_PATH,
      { GET: (request) => accountEndpoint(ctx, admin, request), POST: limited('signIn', (request) => accountSubmit(ctx, admin, request)) },
      pages,
    );
  }

  // The admin console pages clients and users, and signs out: a store without those capabilities has none.
  const consoleStore = ctx.store;
  if (hasAdministration(consoleStore) && hasConsole(consoleStore) && hasSignOut(consoleStore)) {
    const handlers = {
      GET: (request: EndpointRequest, params: Record<string, string>) => adminEndpoint(ctx, consoleStore, request, params.section ?? ''),
      POST: limited('signIn', (request) => adminSubmit(ctx, consoleStore, request)),
    };
    pageUrls.admin = `${config.issuer}${ADMIN_PATH}`;
    route(app, base + ADMIN_PATH, handlers, pages);
    route(app, `${base}${ADMIN_PATH}/:section`, { GET: handlers.GET }, pages);
  }

  if (config.upstream) {
    route(app, base + UPSTREAM_CALLBACK_PATH, { GET: limited('signIn', (request) => upstreamCallbackEndpoint(ctx, request)) }, pages);
  }

  // Probes for orchestrators and load balancers: never rate-limited, never cached.
  const probes = { cors: false, log: ctx.log, edge };
  route(app, `${base}/healthz`, { GET: () => healthzEndpoint() }, probes);
  route(app, `${base}/readyz`, { GET: () => readyzEndpoint(ctx, options.readinessReports ?? {}) }, probes);
  if (metrics && config.metrics) {
    const token = config.metrics.token;
    route(app, `${base}/metrics`, { GET: (request) => metricsEndpoint(metrics, token, request) }, probes);
  }

  app.notFound(notFound);

  return {
    app,
    handle: async (request) => app.fetch(request),
    // A copy: nothing a caller changes in it reaches the configuration.
    metadata: structuredClone(authorizationServerMetadata(config)),
    keys,
    revocations,
    metrics: metrics?.registry ?? null,
    pages: pageUrls,
    upstreamAccess: (claims) => upstreamAccessFor(ctx, claims),
    gatewayToken: (request) => gatewayToken(ctx, request, ctx.now()),
    audit: (event) => ctx.log(event),
    gatewayRateLimit: (path, subject) => rateLimits.takeGateway(path, subject),
    upstreamReady: async () => ctx.upstream?.providers.ready(),
    workloadClientsReady: () => ensureWorkloadClients(ctx),
    sweep: (options = {}) => {
      const now = ctx.now();
      const store = ctx.store;
      if (!hasUpkeep(store)) return Promise.resolve(0);
      const auditEventsBefore = config.auditEvents && hasAuditEvents(store) ? ctx.nowMs() - config.auditEvents.retentionDays * DAY_MS : undefined;
      const sweep = () =>
        store.sweepExpired(now, {
          ...(config.registrationTtl > 0 ? { unusedClientsBefore: now - config.registrationTtl } : {}),
          ...(auditEventsBefore !== undefined ? { auditEventsBefore } : {}),
          ...(options.signal ? { signal: options.signal } : {}),
          ...(options.pause ? { pause: options.pause } : {}),
        });
      return metrics ? metrics.timeSweep(sweep) : sweep();
    },
    close: async () => ctx.auditEvents?.close(),
  };
}

/** The options of `startAuthorizationServer`: createAuthorizationServer's, and how to run it on Node. */
export type StartAuthorizationServerOptions = StartOptions<AuthorizationServer>;

/** An authorization server listening on Node: its parts, its `url`, and `close()` (or `await using`). */
export type RunningAuthorizationServer = Running<AuthorizationServer>;

/**
 * An authorization server listening on a Node HTTP(S) server, started in order and stopped in
 * order by `close()` or at the end of an `await using` scope. It owns the store it is given:
 * the stop closes it last, and so does a start that fails (rejecting with a `StartError`).
 */
export function startAuthorizationServer(options: StartAuthorizationServerOptions): Promise<RunningAuthorizationServer> {
  return startOnNode(createAuthorizationServer, options);
}
