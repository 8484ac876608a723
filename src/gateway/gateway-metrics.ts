import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';
import type { Counter, Histogram, Registry } from 'prom-client';
import type { Forwarded } from './forward.js';

/** The prefix of the authorization server's metrics, whose registry these join. */
const PREFIX = 'context_auth_gateway_';

/** Seconds until an upstream begins its answer: milliseconds on loopback, up to the 30 s default timeout. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * What came of a request at a gateway path: the upstream's status class, or what the gateway
 * answered itself: `denied` (the guard, a tool's scopes, a session of someone else),
 * `rate_limited`, `too_large`, and the upstream's failures (`unreachable`, `timeout`, `refused`
 * the gateway, the client gone first: `cancelled`).
 */
export type GatewayOutcome = '2xx' | '3xx' | '4xx' | '5xx' | 'denied' | 'rate_limited' | 'too_large' | 'unreachable' | 'timeout' | 'refused' | 'cancelled';

/** The metric's outcome for what the upstream did. */
export function forwardOutcome(outcome: Forwarded['outcome']): GatewayOutcome {
  if (outcome.kind === 'failed') return outcome.failure;
  const status = outcome.status;
  return status < 300 ? '2xx' : status < 400 ? '3xx' : status < 500 ? '4xx' : '5xx';
}

/**
 * The gateway's Prometheus metrics, in the authorization server's registry (`server.metrics`),
 * so /metrics serves them beside its own. Every label is a gateway path, which the operator
 * names, or an outcome from a fixed list: never a person, a token, a session or a tool.
 */
export class GatewayMetrics {
  private readonly requests: Counter<'path' | 'outcome'>;
  private readonly latency: Histogram<'path'>;
  private readonly sessionCounts = new Map<string, () => number>();

  constructor(registry: Registry) {
    // Loaded here rather than imported: prom-client is an optional peer, and a registry to join
    // means the server that made it has loaded it.
    const { Counter, Gauge, Histogram } = createRequire(import.meta.url)('prom-client') as typeof PromClient;
    const registers = [registry];
    this.requests = new Counter({
      name: `${PREFIX}requests_total`,
      help: "Requests at each gateway path, by outcome: the upstream's status class, or what the gateway answered itself",
      labelNames: ['path', 'outcome'],
      registers,
    });
    this.latency = new Histogram({
      name: `${PREFIX}upstream_duration_seconds`,
      help: 'Time until the upstream began its answer (its status and headers), per gateway path',
      labelNames: ['path'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const counts = this.sessionCounts;
    new Gauge({
      name: `${PREFIX}stdio_sessions`,
      help: 'Sessions running at each stdio gateway path, one process each',
      labelNames: ['path'],
      registers,
      collect() {
        for (const [path, count] of counts) this.set({ path }, count());
      },
    });
  }

  request(path: string, outcome: GatewayOutcome): void {
    this.requests.inc({ path, outcome });
  }

  /** The upstream began its answer `seconds` after the request was sent on. */
  answered(path: string, seconds: number): void {
    this.latency.observe({ path }, seconds);
  }

  /** Reports `count()` as the running sessions of a stdio path at each scrape. */
  watchSessions(path: string, count: () => number): void {
    this.sessionCounts.set(path, count);
  }
}
