import type { Store } from '../store/store.js';
import type { AuditLog } from './audit.js';
import type { ResolvedConfig } from './config.js';
import type { SigningKeys } from './keys.js';

/**
 * What nearly every part of the server uses, built once per server (context.ts): the settings,
 * the store, the clocks and the audit log. A part that needs another service names it beside
 * these (`BaseServices & { keys: SigningKeys }`), or takes only what it reads (`Pick`), so that
 * what it depends on is in its signature.
 */
export interface BaseServices {
  config: ResolvedConfig;
  store: Store;
  /** Seconds since the epoch: the `now` option, else the system clock. */
  now: () => number;
  /** Milliseconds, for rate limits and throttles: the `now` option's seconds × 1000 when one is given, else the system clock. */
  nowMs: () => number;
  /** Audit events (never tokens or secrets), stamped and handed to the `log` option; with metrics on, each also moves their counters. */
  log: AuditLog;
}

/** What the pages people see add: their forms carry tokens made with the signing keys (form-tokens.ts). */
export interface BrowserServices extends BaseServices {
  keys: SigningKeys;
}
