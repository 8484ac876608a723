/**
 * `context-auth/store`: the contract (the core `Store` and its optional capabilities), its
 * records and errors, the capability checks, and the in-memory store. The SQL stores have entry
 * points of their own, `context-auth/store/sqlite` and `context-auth/store/postgres`, so
 * importing one never loads the other's native driver; the suite a store passes is
 * `context-auth/store/testing`.
 */
export type {
  Store,
  StoreUpkeep,
  RateBucketStore,
  RevocationFeedStore,
  StoreAdministration,
  StoreConsole,
  AuditEventStore,
  AuditEventRecord,
  AuditEventQuery,
  PageQuery,
  FullStore,
  AuthorizationRequest,
  GrantType,
  TokenEndpointAuthMethod,
  ClientRecord,
  UserRecord,
  UserIdentityRecord,
  IdentityKey,
  UserKey,
  UpstreamSessionRecord,
  InteractionUpstream,
  InteractionRecord,
  InteractionChange,
  SessionRecord,
  ConsentRecord,
  GrantRecord,
  AuthorizationCodeRecord,
  RefreshTokenRecord,
  SpentRefreshTokenRecord,
  RefreshRequest,
  RefreshResult,
  RepeatRefreshRequest,
  RepeatRefreshResult,
  RevocationRecord,
  SigningKeyRecord,
  TokenIssue,
  ConsumeResult,
  RateTokensRequest,
  RateTokensResult,
  SweepOptions,
} from './store.js';
export { StoreConflictError, StoreUnavailableError } from './store.js';
export { capabilitiesOf, hasAdministration, hasAuditEvents, hasConsole, hasRateBuckets, hasRevocationFeed, hasUpkeep, isFullStore, type StoreCapability } from './capabilities.js';
export { createMemoryStore } from './memory.js';
