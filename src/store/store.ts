/**
 * The store: every piece of state the authorization server keeps, declared by aggregate in
 * store/contract/. `Store` is the core, what every flow needs; what only one optional feature
 * (the device grant, signing out, retries of a refresh), upkeep, shared rate limits, the
 * revocation feed or an operator needs is a capability of its own, which the server uses when
 * the store has it (capabilities.ts). Implementations (memory, SQLite, PostgreSQL, and stores of
 * other databases) pass one suite, `context-auth/store/testing`.
 *
 * Rules every implementation keeps:
 * - Times are whole seconds since the epoch, passed in by the caller (so tests control the clock;
 *   where `now` is optional, the system clock).
 * - Secrets are never stored: codes, refresh tokens, client secrets and session ids arrive here
 *   already hashed (core/secrets.ts `hashSecret`).
 * - Single use is one atomic operation (`consume…`, `redeem…`, `refresh…`), never read-then-write.
 * - Methods are async so a networked database fits behind the same interface.
 */
import type { ClientStore } from './contract/clients.js';
import type { GrantStore, RefreshRetryStore, RefreshWithAssertionStore } from './contract/grants.js';
import type { DeviceAuthorizationStore } from './contract/devices.js';
import type { InteractionStore } from './contract/interactions.js';
import type { KeyStore } from './contract/keys.js';
import type { PeopleStore } from './contract/people.js';
import type { ReplayStore } from './contract/replay.js';
import type { SessionStore, SignOutStore } from './contract/sessions.js';
import type { StoreUpkeep } from './contract/upkeep.js';
import type { RateBucketStore } from './contract/rate-buckets.js';
import type { RevocationFeedStore } from './contract/revocations.js';
import type { StoreAdministration } from './contract/administration.js';
import type { StoreConsole } from './contract/console.js';
import type { AuditEventStore } from './contract/audit-events.js';

export type { AuthorizationRequest, GrantType, TokenEndpointAuthMethod } from '../core/protocol.js';
export type * from './contract/clients.js';
export type * from './contract/people.js';
export type * from './contract/interactions.js';
export type * from './contract/sessions.js';
export type * from './contract/grants.js';
export type * from './contract/devices.js';
export type * from './contract/replay.js';
export type * from './contract/keys.js';
export type * from './contract/upkeep.js';
export type * from './contract/rate-buckets.js';
export type * from './contract/revocations.js';
export type * from './contract/administration.js';
export type * from './contract/console.js';
export type * from './contract/audit-events.js';

/**
 * What a store throws when it cannot do what was asked, for one of two reasons, the only
 * exception a store method throws on purpose:
 * - `conflict`: a unique value is taken already (a client id, a username, a user code);
 * - `unavailable`: the database cannot be reached or answered with a failure (the server answers
 *   503 `temporarily_unavailable`).
 */
export class StoreError extends Error {
  constructor(
    readonly reason: 'conflict' | 'unavailable',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StoreError';
  }
}

/** True for a StoreError whose unique value was taken. */
export const isStoreConflict = (error: unknown): error is StoreError => error instanceof StoreError && error.reason === 'conflict';

/** True for a StoreError from a database that cannot answer now. */
export const isStoreUnavailable = (error: unknown): error is StoreError => error instanceof StoreError && error.reason === 'unavailable';

/** What every flow needs: the contract a store for another database implements first, aggregate by aggregate. */
export interface Store extends ClientStore, PeopleStore, InteractionStore, SessionStore, GrantStore, ReplayStore, KeyStore {
  /** Releases connections and file handles. */
  close(): Promise<void>;
  /**
   * True when several server processes serve from this store at once, as replicas (PostgreSQL):
   * what one process would otherwise keep in memory, such as rate limits, must then live here
   * (RateBucketStore).
   */
  readonly sharedByReplicas?: boolean;
}

/** A store with every capability, as the memory, SQLite and PostgreSQL stores are. */
export type FullStore = Store &
  DeviceAuthorizationStore &
  SignOutStore &
  RefreshRetryStore &
  RefreshWithAssertionStore &
  StoreUpkeep &
  RateBucketStore &
  RevocationFeedStore &
  StoreAdministration &
  StoreConsole &
  AuditEventStore;
