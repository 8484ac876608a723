import type * as PromClient from 'prom-client';
import type { Counter, Gauge, Registry } from 'prom-client';
import { loadOptionalPackage, PROM_CLIENT } from '../../core/optional-package.js';
import type { OAuthErrorCode } from '../../core/errors.js';
import { TOKEN_EXCHANGE_GRANT_TYPE } from '../../core/id-jag.js';
import { DEVICE_CODE_GRANT_TYPE, JWT_BEARER_GRANT_TYPE } from '../../core/protocol.js';
import { SeriesHistogram, type HistogramSeries } from './series-histogram.js';

export const METRIC_PREFIX = 'context_auth_';

/** The grant types a label may name; anything else a client sends is counted as `other`, so no request can add a label value. */
const GRANT_TYPES = new Set([
  'authorization_code',
  'refresh_token',
  'client_credentials',
  DEVICE_CODE_GRANT_TYPE,
  JWT_BEARER_GRANT_TYPE,
  TOKEN_EXCHANGE_GRANT_TYPE,
]);

/** Latency buckets in seconds: a store call is often under a millisecond, a token request a few. */
const STORE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const TOKEN_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/**
 * The server's Prometheus metrics, in a registry of their own (never prom-client's global one, so
 * two servers in one process, or the program's own metrics, do not collide). Every label value
 * comes from a fixed set (grant types, OAuth error codes, endpoint paths, store method names):
 * never a token, a secret, a client or a user.
 */
export class ServerMetrics {
  readonly registry: Registry;
  readonly tokenRequests: Counter<'grant_type' | 'outcome'>;
  readonly tokenDuration: SeriesHistogram<'grant_type'>;
  readonly errors: Counter<'endpoint' | 'error'>;
  readonly signIns: Counter<'method' | 'outcome'>;
  readonly registrations: Counter<'kind'>;
  readonly rateLimited: Counter<'limit'>;
  readonly throttled: Counter<'kind'>;
  readonly revocations: Counter<'kind'>;
  readonly storeDuration: SeriesHistogram<'method' | 'outcome'>;
  readonly auditEventsDropped: Counter;
  private readonly tokenSeries = new Map<string, HistogramSeries>();
  private readonly sweepRunning: Gauge;
  private readonly sweepLastCompleted: Gauge;
  private readonly sweepLastDeleted: Gauge;
  private readonly sweepDuration: Gauge;

  constructor(options: { revocationSetSize?: () => number; auditEventsPending?: () => number } = {}) {
    const { collectDefaultMetrics, Counter, Gauge, Registry } = loadOptionalPackage<typeof PromClient>(PROM_CLIENT);
    this.registry = new Registry();
    const registers = [this.registry];
    const name = (suffix: string) => METRIC_PREFIX + suffix;
    collectDefaultMetrics({ register: this.registry, prefix: METRIC_PREFIX });
    this.tokenRequests = new Counter({
      name: name('token_requests_total'),
      help: 'Token endpoint requests by grant type and outcome (success, or the OAuth error code)',
      labelNames: ['grant_type', 'outcome'],
      registers,
    });
    this.tokenDuration = new SeriesHistogram(
      name('token_request_duration_seconds'),
      'Time to answer a token endpoint request, by grant type',
      ['grant_type'],
      TOKEN_BUCKETS,
      this.registry,
    );
    this.errors = new Counter({
      name: name('errors_total'),
      help: 'Error answers by endpoint and OAuth error code',
      labelNames: ['endpoint', 'error'],
      registers,
    });
    this.signIns = new Counter({
      name: name('sign_ins_total'),
      help: 'Sign-ins by method (password, upstream) and outcome (success, failure, throttled, refused)',
      labelNames: ['method', 'outcome'],
      registers,
    });
    this.registrations = new Counter({
      name: name('registrations_total'),
      help: 'Clients created, by kind (dynamic, document, admin)',
      labelNames: ['kind'],
      registers,
    });
    this.rateLimited = new Counter({ name: name('rate_limited_total'), help: 'Requests refused by a rate limit, by limit', labelNames: ['limit'], registers });
    this.throttled = new Counter({
      name: name('sign_in_throttled_total'),
      help: 'Guesses refused by the sign-in throttle, by kind (password, user_code)',
      labelNames: ['kind'],
      registers,
    });
    this.revocations = new Counter({
      name: name('revocations_total'),
      help: 'Revocations, by kind (access_token, refresh_token at /revoke; refresh_token_reuse for a family revoked on reuse)',
      labelNames: ['kind'],
      registers,
    });
    this.storeDuration = new SeriesHistogram(
      name('store_call_duration_seconds'),
      'Time of each store call, by method and outcome (ok, error)',
      ['method', 'outcome'],
      STORE_BUCKETS,
      this.registry,
    );
    // Upkeep falling behind shows as a last completion that grows old, a sweep always running, or
    // sweeps that each delete many rows and take long.
    this.sweepRunning = new Gauge({ name: name('sweep_running'), help: '1 while a sweep of expired records runs, else 0', registers });
    this.sweepLastCompleted = new Gauge({
      name: name('sweep_last_completed_timestamp_seconds'),
      help: 'When the last sweep that did not fail ended (Unix seconds); 0 before the first',
      registers,
    });
    this.sweepLastDeleted = new Gauge({ name: name('sweep_last_deleted_rows'), help: 'Rows the last sweep that did not fail deleted', registers });
    this.sweepDuration = new Gauge({
      name: name('sweep_duration_seconds'),
      help: 'How long the last sweep that did not fail took, its rests between batches included',
      registers,
    });
    const pending = options.auditEventsPending;
    new Gauge({
      name: name('audit_events_pending'),
      help: 'Audit events waiting to be written to the store',
      registers,
      collect() {
        this.set(pending?.() ?? 0);
      },
    });
    this.auditEventsDropped = new Counter({
      name: name('audit_events_dropped_total'),
      help: 'Audit events never written to the store: the oldest, dropped while too many waited for it',
      registers,
    });
    const size = options.revocationSetSize;
    if (size) {
      new Gauge({
        name: name('revocation_set_size'),
        help: 'Revoked grants and access tokens this process holds in memory until they expire',
        registers,
        collect() {
          this.set(size());
        },
      });
    }
  }

  /** One token endpoint request, answered or refused (the OAuth error code it was answered with), that began at `started` (performance.now()). */
  tokenRequest(grantType: string | undefined, errorCode: OAuthErrorCode | undefined, started: number): void {
    const grant = grantType === undefined ? 'none' : GRANT_TYPES.has(grantType) ? grantType : 'other';
    this.tokenRequests.inc({ grant_type: grant, outcome: errorCode ?? 'success' });
    let series = this.tokenSeries.get(grant);
    if (!series) this.tokenSeries.set(grant, (series = this.tokenDuration.series({ grant_type: grant })));
    series.observe((performance.now() - started) / 1000);
  }

  /** An error answer of `endpoint` (its path under the issuer, as routed), by its OAuth error code. */
  endpointError(endpoint: string, errorCode: string): void {
    this.errors.inc({ endpoint, error: errorCode });
  }

  /** Runs a sweep, and records when it ended, what it deleted and how long it took, unless it failed. */
  async timeSweep(sweep: () => Promise<number>): Promise<number> {
    const started = performance.now();
    this.sweepRunning.set(1);
    try {
      const deleted = await sweep();
      this.sweepLastCompleted.set(Date.now() / 1000);
      this.sweepLastDeleted.set(deleted);
      this.sweepDuration.set((performance.now() - started) / 1000);
      return deleted;
    } finally {
      this.sweepRunning.set(0);
    }
  }

  /** The Prometheus text exposition of every metric. */
  async text(): Promise<string> {
    return this.registry.metrics();
  }
}
