import type { ServerMetrics } from './metrics.js';

type Event = Record<string, unknown>;

/** A label value only when it is one of `allowed`: an event's field never adds a label value of its own. */
function oneOf(value: unknown, allowed: readonly string[], fallback: string): string {
  return typeof value === 'string' && allowed.includes(value) ? value : fallback;
}

/** How many refusals a rate-limit line stands for: they are logged in batches (rate-limit/rate-limits.ts). */
function refusedCount(event: Event): number {
  return typeof event.refused === 'number' && event.refused > 0 ? event.refused : 1;
}

const REGISTRATION_KINDS = ['admin', 'document', 'dynamic'] as const;
const RATE_LIMITS = ['register', 'token', 'signIn', 'clientDocument', 'clientDocumentTotal'] as const;

/**
 * Counts what the audit events tell (the server's log calls this with every event it writes):
 * sign-ins, registrations, rate-limit and throttle refusals, revocations. Keyed on the event names
 * the audit log already uses, so the log stays the one place these things are told.
 */
export function countEvent(metrics: ServerMetrics, event: Event): void {
  switch (event.event) {
    case 'login':
      metrics.signIns.inc({ method: event.provider === undefined ? 'password' : 'upstream', outcome: 'success' });
      break;
    case 'login_failed':
      metrics.signIns.inc({ method: 'password', outcome: 'failure' });
      break;
    case 'login_throttled':
      metrics.signIns.inc({ method: 'password', outcome: 'throttled' });
      metrics.throttled.inc({ kind: 'password' });
      break;
    case 'user_code_throttled':
      metrics.throttled.inc({ kind: 'user_code' });
      break;
    case 'upstream_refused':
      metrics.signIns.inc({ method: 'upstream', outcome: 'refused' });
      break;
    case 'upstream_failed':
      // Also logged when an upstream session fails later (a tool's call): only a sign-in names no grant.
      if (event.grant_id === undefined) metrics.signIns.inc({ method: 'upstream', outcome: 'failure' });
      break;
    case 'client_registered':
      metrics.registrations.inc({ kind: 'dynamic' });
      break;
    case 'client_created':
      metrics.registrations.inc({ kind: oneOf(event.registered_by, REGISTRATION_KINDS, 'admin') });
      break;
    case 'rate_limited':
      metrics.rateLimited.inc({ limit: oneOf(event.limit, RATE_LIMITS, 'other') }, refusedCount(event));
      break;
    case 'gateway_rate_limited':
      metrics.rateLimited.inc({ limit: 'gateway' }, refusedCount(event));
      break;
    case 'token_revoked':
      metrics.revocations.inc({ kind: oneOf(event.kind, ['access_token', 'refresh_token'], 'other') });
      break;
    case 'refresh_token_reused':
      metrics.revocations.inc({ kind: 'refresh_token_reuse' });
      break;
  }
}
