import type { SecretBox } from '../core/secret-box.js';
import type { Store } from '../store/store.js';
import { ClientKeys } from './assertions/client-keys.js';
import { IssuerKeys } from './assertions/issuer-keys.js';
import { ClientDocuments } from './client-documents/documents.js';
import { ClientUse } from './clients.js';
import { TokenEndpointDpop, type DpopKey } from './dpop.js';
import { authorizationServerMetadata } from './endpoints/metadata.js';
import { resolveConfig, type AuthorizationServerOptions, type ResolvedConfig, type ResolvedUpstreamConfig, type UpstreamOptions } from './config.js';
import { SigningKeys } from './keys.js';
import { RateLimits } from './rate-limit/rate-limits.js';
import { Revocations } from './revocations.js';
import { SignInThrottle } from './sign-in-throttle.js';
import type { UpstreamSignInPolicy } from './upstream/policy.js';
import { UpstreamProviders } from './upstream/registry.js';
import { auditRecord, type AuditLog } from './audit.js';
import { countEvent } from './metrics/events.js';
import { ServerMetrics } from './metrics/metrics.js';
import { timedStore } from './metrics/store-timing.js';
import { AuditEventWriter } from './audit-events.js';
import { hasAuditEvents } from '../store/capabilities.js';

/** Upstream sign-in as it runs: its settings (`config.upstream`) and what acts on them. */
export interface UpstreamSignIn extends ResolvedUpstreamConfig {
  providers: UpstreamProviders;
  /** Seals upstream tokens at rest. */
  secretBox: SecretBox;
  /** Who may sign in; its `allow` hook is the operator's code. */
  policy: UpstreamSignInPolicy;
}

/**
 * What every endpoint and grant gets: the resolved configuration (plain data) and the services
 * that act on it, the store, the clock and the log first.
 */
export interface ServerContext {
  config: ResolvedConfig;
  store: Store;
  /** Seconds since the epoch: the `now` option, else the system clock. */
  now: () => number;
  /** Milliseconds, for rate limits and throttles: the `now` option's seconds × 1000 when one is given, else the system clock. */
  nowMs: () => number;
  /** Audit events (never tokens or secrets), stamped and handed to the `log` option; with metrics on, each also moves their counters. */
  log: AuditLog;
  /** Null when metrics are off, as `config.metrics` is. */
  metrics: ServerMetrics | null;
  /** Where every record also goes to be kept in the store; null when `config.auditEvents` is off, keeps none, or the store cannot keep them. */
  auditEvents: AuditEventWriter | null;
  /** Client ID metadata documents, fetched and cached. */
  clientDocuments: ClientDocuments;
  /** The public keys of private_key_jwt clients, key sets at a `jwks_uri` fetched and cached. */
  clientKeys: ClientKeys;
  /** Null when upstream sign-in is off, as `config.upstream` is. */
  upstream: UpstreamSignIn | null;
  keys: SigningKeys;
  clientUse: ClientUse;
  signInThrottle: SignInThrottle;
  rateLimits: RateLimits;
  /** Every revocation goes through here, so a guard in this process learns of it before the response. */
  revocations: Revocations;
  /** The keys of trusted IdPs and workload issuers; null when the jwt-bearer grant is off, as `config.jwtBearer` is. */
  issuerKeys: IssuerKeys | null;
  /** Checks the DPoP proofs of token requests. */
  dpop: TokenEndpointDpop;
  /**
   * Set only in the context the token endpoint hands a grant when its request came with a DPoP
   * proof: the key its tokens are bound to.
   */
  dpopKey?: DpopKey;
}

/** Checks and resolves the options (config.ts), then builds the services on them; throws on a bad option. */
export function createServerContext(options: AuthorizationServerOptions): ServerContext {
  const config = resolveConfig(options);
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const nowMs = options.now ? () => options.now!() * 1000 : () => Date.now();
  // The revocation set's size is read when scraped, from the services made below.
  let revocations: Revocations | undefined;
  let auditEvents: AuditEventWriter | null = null;
  const metrics = config.metrics
    ? new ServerMetrics({ revocationSetSize: () => revocations?.size ?? 0, auditEventsPending: () => auditEvents?.pending ?? 0 })
    : null;
  const store = metrics ? timedStore(options.store, metrics) : options.store;
  if (config.auditEvents && config.auditEvents.retentionDays > 0 && hasAuditEvents(store)) {
    auditEvents = new AuditEventWriter(store, {
      warn: (message) => console.warn(`warning: ${message}`),
      ...(metrics ? { dropped: (count: number) => metrics.auditEventsDropped.inc(count) } : {}),
    });
  }
  const write = auditWrite(options.log, auditEvents, nowMs);
  const log: AuditLog = metrics
    ? (event) => {
        countEvent(metrics, event);
        write(event);
      }
    : write;
  // The documents' test switch covers the keys they name: fetched from http://127.0.0.1 too.
  const clientKeys = new ClientKeys(options.clientJwks ?? {}, log, { documentsAtLoopback: options.clientIdMetadataDocuments?.allowLoopbackHttp ?? false });
  const keys = new SigningKeys(store, now);
  return {
    config,
    store,
    now,
    nowMs,
    log,
    metrics,
    auditEvents,
    clientDocuments: new ClientDocuments(
      { ...options.clientIdMetadataDocuments, ...config.clientIdMetadataDocuments, allowLoopbackJwksUri: clientKeys.allowLoopbackHttp, redirectUriRules: config.redirectUriRules },
      config.scopesSupported,
      log,
    ),
    clientKeys,
    upstream: options.upstream && config.upstream ? upstreamSignIn(options.upstream, config.upstream) : null,
    keys,
    clientUse: new ClientUse(),
    signInThrottle: new SignInThrottle(),
    rateLimits: new RateLimits(config.rateLimits, store, nowMs, log),
    revocations: (revocations = new Revocations(store, now, config.accessTokenTtl, log)),
    issuerKeys: config.jwtBearer ? new IssuerKeys({ allowLoopbackHttp: config.jwtBearer.allowLoopbackHttp }) : null,
    dpop: new TokenEndpointDpop(store, keys, authorizationServerMetadata(config).token_endpoint, config.dpopNonce),
  };
}

/** Each event stamped once, then handed to the `log` option and to the store's writer, whichever are there. */
function auditWrite(sink: AuthorizationServerOptions['log'], writer: AuditEventWriter | null, nowMs: () => number): AuditLog {
  if (!writer) return sink ? (event) => sink(auditRecord(event, nowMs())) : () => {};
  return (event) => {
    const occurredAt = nowMs();
    sink?.(auditRecord(event, occurredAt));
    writer.add(event, occurredAt);
  };
}

function upstreamSignIn(options: UpstreamOptions, settings: ResolvedUpstreamConfig): UpstreamSignIn {
  const resolve = { ...(options.fetch ? { fetch: options.fetch } : {}), allowLoopbackHttp: options.allowLoopbackHttp ?? false };
  return {
    ...settings,
    providers: new UpstreamProviders(options.providers, resolve),
    secretBox: options.secretBox,
    policy: options.policy ?? {},
  };
}
