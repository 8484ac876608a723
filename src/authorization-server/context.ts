import { ClientKeys } from './assertions/client-keys.js';
import { IssuerKeys } from './assertions/issuer-keys.js';
import { ClientDocuments } from './client-documents/documents.js';
import { ClientUse } from './clients.js';
import { TokenEndpointDpop } from './dpop.js';
import { resolveConfig, type AuthorizationServerOptions, type ResolvedUpstreamConfig, type UpstreamOptions } from './config.js';
import { SigningKeys } from './keys.js';
import { RateLimits } from './rate-limit/rate-limits.js';
import { Revocations } from './revocations.js';
import { SignInThrottle } from './sign-in-throttle.js';
import { UpstreamProviders } from './upstream/registry.js';
import type { UpstreamSignIn } from './upstream/upstream-sign-in.js';
import type { BaseServices } from './services.js';
import { auditRecord, type AuditLog } from './audit.js';
import { countEvent } from './metrics/events.js';
import { ServerMetrics } from './metrics/metrics.js';
import { timedStore } from './metrics/store-timing.js';
import { AuditEventWriter } from './audit-events.js';
import { hasAuditEvents } from '../store/capabilities.js';

/**
 * The server's services, built once by createServerContext from the options and shared by every
 * request: the base (settings, store, clocks, log; services.ts) and the rest. Nothing in it belongs
 * to one request: what a token request brings (its client, parameters, DPoP key) travels apart
 * (grants/token-request.ts). The endpoints that dispatch to many parts take it whole; the parts
 * take what they use.
 */
export interface ServerContext extends BaseServices {
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
      {
        ...options.clientIdMetadataDocuments,
        ...config.clientIdMetadataDocuments,
        allowLoopbackJwksUri: clientKeys.allowLoopbackHttp,
        redirectUriRules: config.redirectUriRules,
      },
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
    dpop: new TokenEndpointDpop(store, keys, config.endpoints.token, config.dpopNonce),
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
