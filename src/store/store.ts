/**
 * The store: every piece of state the authorization server keeps. `Store` is what every flow
 * needs; what only upkeep, shared rate limits, the revocation feed or an operator needs is a
 * capability of its own (below), which the server uses when the store has it (capabilities.ts).
 * Implementations (memory, SQLite, PostgreSQL, and stores of other databases) pass one suite,
 * `context-auth/store/testing`.
 *
 * Rules every implementation keeps:
 * - Times are whole seconds since the epoch, passed in by the caller (so tests control the clock;
 *   where `now` is optional, the system clock).
 * - Secrets are never stored: codes, refresh tokens, client secrets and session ids arrive here
 *   already hashed (core/secrets.ts `hashSecret`).
 * - Single use is one atomic operation (`consume…`, `rotate…`), never read-then-write.
 * - Methods are async so a networked database fits behind the same interface.
 */

import type { AuthorizationRequest, GrantType, TokenEndpointAuthMethod } from '../core/protocol.js';

export type { AuthorizationRequest, GrantType, TokenEndpointAuthMethod };

export interface ClientRecord {
  clientId: string;
  /** SHA-256 of the secret; null for public clients. */
  clientSecretHash: string | null;
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  redirectUris: string[];
  grantTypes: GrantType[];
  responseTypes: string[];
  clientName: string | null;
  /** Scopes this client may ask for; null means any the server supports. */
  scope: string | null;
  /** The registered metadata as the client sent it (validated), echoed by registration. */
  metadata: Record<string, unknown>;
  /** Set by an operator only (`clients add --introspect`): may introspect tokens of other clients. */
  canIntrospect: boolean;
  /** 'dynamic' (RFC 7591) or 'admin' (CLI / API). */
  registeredBy: 'dynamic' | 'admin';
  createdAt: number;
  /** When it last came to /authorize or /token, to a day; null until then. */
  lastUsedAt: number | null;
}

export interface UserRecord {
  id: string;
  username: string;
  /** Null for a user who signs in only through an upstream provider. */
  passwordHash: string | null;
  createdAt: number;
  /** May use the admin console. Absent or null: not an administrator. */
  admin?: boolean | null;
  /** When the user last began a browser session (epoch seconds); null or absent until then. */
  lastSignInAt?: number | null;
}

/**
 * Who a local user is at an upstream identity provider: the provider, its issuer and the subject
 * there (never the email, which can change hands). The provider is part of the key because a plain
 * OAuth 2.0 provider's issuer is only a name the operator chose, and its subjects (GitHub-style
 * numeric ids) would collide with another's.
 */
export interface UserIdentityRecord {
  issuer: string;
  subject: string;
  /** The provider's configured id (e.g. 'google'). */
  provider: string;
  userId: string;
  email: string | null;
  name: string | null;
  createdAt: number;
}

/** What finds a user by their upstream identity: all three must match. */
export type IdentityKey = Pick<UserIdentityRecord, 'provider' | 'issuer' | 'subject'>;

/** One sign-in at an upstream provider, behind a browser session and the grants it led to. */
export interface UpstreamSessionRecord {
  id: string;
  userId: string;
  provider: string;
  subject: string;
  /** The provider's tokens, sealed (core/secret-box.ts) with `id` as the owner. */
  sealedTokens: string;
  createdAt: number;
  /** The maximum lifetime: after it, its grants end and the person signs in upstream again. */
  expiresAt: number;
}

/** The upstream provider an interaction's person chose, and what its callback is checked against (sealed). */
export interface InteractionUpstream {
  provider: string;
  /** Sealed state, nonce and PKCE verifier, owned by the interaction; null until the person is sent upstream. */
  sealedPending: string | null;
}

/**
 * What an interaction started at the device verification page (RFC 8628) adds: the device
 * authorization its consent approves or denies, and the user code the person entered, sealed
 * with a key only this browser's binding cookie gives (never stored readable), shown on the
 * consent page for the person to compare with the device's.
 */
export interface DeviceInteraction {
  deviceCodeHash: string;
  sealedUserCode: string;
}

/** An authorization request waiting for the user to log in and consent. */
export interface InteractionRecord {
  id: string;
  clientId: string;
  /** The validated authorization request (see authorization-server/checks/authorization-request.ts). */
  request: AuthorizationRequest;
  /** SHA-256 of the cookie value that binds this interaction to the browser that started it. */
  browserBindingHash: string;
  /** The anti-CSRF token echoed by the pages' forms. */
  csrfToken: string;
  userId: string | null;
  createdAt: number;
  expiresAt: number;
  /** Set once the person chooses an upstream provider. */
  upstream: InteractionUpstream | null;
  /** Set for a device's authorization (the verification page); absent or null otherwise. */
  device?: DeviceInteraction | null;
}

export interface SessionRecord {
  idHash: string;
  userId: string;
  authTime: number;
  createdAt: number;
  expiresAt: number;
  /** The upstream sign-in this session came from, if any: the session ends with it. */
  upstreamSessionId: string | null;
}

export interface ConsentRecord {
  userId: string;
  clientId: string;
  resource: string;
  scope: string[];
  createdAt: number;
  updatedAt: number;
}

/** A grant: the family of codes, refresh tokens and access tokens one authorization produced. */
export interface GrantRecord {
  id: string;
  clientId: string;
  /** Null for client_credentials. */
  userId: string | null;
  scope: string[];
  resource: string;
  authTime: number | null;
  createdAt: number;
  revokedAt: number | null;
  /** The upstream sign-in the grant rests on (third-party authorization), checked at every refresh. */
  upstreamSessionId: string | null;
  /**
   * The latest `exp` of the access tokens issued under the grant (null before the first): a
   * revocation of the grant is recorded until then. Raised in the transaction that issues a
   * token, under the grant's row lock, so a revocation either comes first (and no token is
   * issued) or sees the token's expiry.
   */
  accessExpiresAt: number | null;
}

export interface AuthorizationCodeRecord {
  codeHash: string;
  grantId: string;
  clientId: string;
  userId: string;
  redirectUri: string;
  redirectUriProvided: boolean;
  codeChallenge: string;
  scope: string[];
  resource: string;
  authTime: number;
  createdAt: number;
  expiresAt: number;
  consumedAt: number | null;
}

/**
 * A device authorization request (RFC 8628), found by the hash of its device code (what the
 * device polls with) or of its user code (what the person enters). Approving it creates its
 * grant and an authorization code whose hash is the device code's, which the token endpoint
 * then redeems as it redeems codes: once.
 */
export interface DeviceAuthorizationRecord {
  deviceCodeHash: string;
  userCodeHash: string;
  clientId: string;
  scope: string[];
  resource: string;
  /** Seconds the device must wait between polls; 5 more after each poll that came too soon (RFC 8628 §3.5). */
  interval: number;
  lastPolledAt: number | null;
  status: 'pending' | 'approved' | 'denied';
  createdAt: number;
  expiresAt: number;
}

/**
 * What a poll found: the authorization as it stands after the poll was recorded. `slow_down`: it
 * is pending and the poll came sooner than the interval allows (which has grown by 5 s);
 * `foreign`: another client's, left as it was.
 */
export type DevicePollResult =
  | { status: 'pending' | 'slow_down' | 'approved' | 'denied' | 'expired' | 'foreign'; record: DeviceAuthorizationRecord }
  | { status: 'missing' };

/** A refresh token not yet used. Rotation removes it and keeps a SpentRefreshTokenRecord instead. */
export interface RefreshTokenRecord {
  tokenHash: string;
  grantId: string;
  clientId: string;
  scope: string[];
  createdAt: number;
  expiresAt: number;
}

/**
 * What is kept of a rotated refresh token until it would have expired: enough to recognise a
 * second use and revoke the grant, or to answer a retry of its refresh with the same token, far
 * less than the token's full record. Found by the first 22 characters of the token's hash (132
 * bits: no other token's hash shares them by chance), and only while its grant exists.
 */
export interface SpentRefreshTokenRecord {
  grantId: string;
  /** The grant's client (read through the grant, not kept twice). */
  clientId: string;
  spentAt: number;
  expiresAt: number;
  /**
   * Whether the token its rotation issued (its successor, kept by key) is still live, never used:
   * until it is, a retry of the rotation may be answered with it (repeatRefresh). False once the
   * successor was used, and for a record that names none.
   */
  successorUnused: boolean;
}

/** What a refresh (Store.refreshGrant) asks for: the presented token spent and a new one in its place, in one step. */
export interface RefreshRequest {
  /** Hash of the presented refresh token. */
  tokenHash: string;
  /** The authenticated client: another client's token is left as it is. */
  clientId: string;
  /**
   * The new refresh token; its grant, client and scope are the presented token's. The server
   * derives it from the presented token, so concurrent refreshes of one token name the same one.
   */
  next: { tokenHash: string; createdAt: number; expiresAt: number };
  /** The `exp` of the access token about to be issued with it (recorded on the grant). */
  accessExpiresAt: number;
  now: number;
  /**
   * True once the caller has checked the grant's upstream sign-in (third-party grants). Until
   * then, a grant resting on one is not refreshed but returned as 'upstream', its token unspent,
   * so an upstream that is down leaves the token usable.
   */
  upstreamChecked: boolean;
}

export type RefreshResult =
  /** Spent and replaced: the grant the access token is for, and the spent token's scope. */
  | { status: 'ok'; grant: GrantRecord; scope: string[] }
  /** Nothing changed: the grant rests on an upstream sign-in the caller must check first. */
  | { status: 'upstream'; grant: GrantRecord; record: RefreshTokenRecord }
  /** Rotated before: the caller treats this as a replay, a retry of the rotation, or (within the grace window) an honest race. */
  | { status: 'replayed'; record: SpentRefreshTokenRecord }
  /** Live but not the caller's ('foreign'), expired, or its grant revoked; nothing changed. */
  | { status: 'foreign' | 'expired' | 'revoked'; record: RefreshTokenRecord }
  | { status: 'missing' };

/**
 * What the retry of a refresh (Store.repeatRefresh) asks for: the successor that the refresh of
 * the presented token issued, answered again while it is unused.
 */
export interface RepeatRefreshRequest {
  /** Hash of the presented refresh token, spent by the refresh being retried. */
  tokenHash: string;
  /** The authenticated client: another client's token is left as it is. */
  clientId: string;
  /**
   * The hashes the successor may have. The server derives a rotation's new token from the
   * presented one with a key of its own, so it can name the successor again, once per key it
   * still holds; the store confirms the one its spent record names.
   */
  successorHashes: readonly string[];
  /** Only a token spent after this time is retried: the start of the retry window. */
  spentAfter: number;
  /** The `exp` of the access token about to be issued with it (recorded on the grant). */
  accessExpiresAt: number;
  now: number;
  /** As in RefreshRequest. */
  upstreamChecked: boolean;
}

export type RepeatRefreshResult =
  /** The successor, live and unchanged: its hash (one of the request's), its grant and its scope. */
  | { status: 'ok'; grant: GrantRecord; scope: string[]; successorHash: string }
  | Exclude<RefreshResult, { status: 'ok' }>;

/**
 * A revocation that resource servers must learn of: a grant (every access token it issued) or one
 * access token (by jti). Recorded only while some access token it affects is unexpired, and kept
 * until `expiresAt`, the latest `exp` among them; then the sweep removes it.
 */
export interface RevocationRecord {
  kind: 'grant' | 'token';
  id: string;
  revokedAt: number;
  expiresAt: number;
}

export interface SigningKeyRecord {
  kid: string;
  alg: string;
  /** JSON of the private JWK. */
  privateJwk: string;
  /** JSON of the public JWK. */
  publicJwk: string;
  status: 'current' | 'previous' | 'retired';
  createdAt: number;
}

/** What a code's redemption issues (redeemAuthorizationCode): the access token's expiry, and a refresh token if any. */
export interface TokenIssue {
  accessExpiresAt: number;
  refreshToken?: RefreshTokenRecord;
}

export type ConsumeResult<T> =
  | { status: 'ok'; record: T }
  /** It existed and was already used: the caller treats this as a replay. */
  | { status: 'replayed'; record: T }
  | { status: 'expired'; record: T }
  | { status: 'missing' };

export class StoreConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreConflictError';
  }
}

/** The database cannot be reached or answered with a failure; turned into 503 temporarily_unavailable. */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * Tokens asked of a shared token bucket, the rate limiter's budget that every replica of the
 * server spends from (the key is opaque to the store). The bucket holds at most `burst` tokens and
 * gains `perSecond` tokens a second; a bucket never seen before starts full.
 */
export interface RateTokensRequest {
  key: string;
  /** Tokens wanted: as many as the bucket holds, up to this, are granted. */
  want: number;
  burst: number;
  perSecond: number;
  /** Milliseconds since the epoch (finer than the seconds elsewhere: buckets refill continuously). */
  nowMs: number;
}

export interface RateTokensResult {
  /** Tokens granted, 0 to `want`. */
  granted: number;
  /** Tokens left in the bucket afterwards (a fraction when it is refilling). */
  level: number;
}

export interface SweepOptions {
  /** Also delete dynamically registered clients last used (or, never used, created) before this time. */
  unusedClientsBefore?: number;
  /** Also delete stored audit events that occurred before this time (epoch milliseconds), where the store keeps them. */
  auditEventsBefore?: number;
  /**
   * Stops the sweep after the batch in flight (each batch is committed on its own); the promise
   * then resolves with the rows deleted until then. What is left is the next sweep's.
   */
  signal?: AbortSignal;
  /**
   * How the sweep rests between batches, given how long it should (ms): a timer that long by
   * default. One that resolves later holds the sweep there, between two committed batches.
   */
  pause?: (ms: number) => Promise<void>;
}

/** Who a user lookup names: their id, their username, or an upstream identity linked to them. */
export type UserKey = { id: string } | { username: string } | { identity: IdentityKey };

/** What an interaction learns as the person goes on: who signed in, or the upstream provider they chose. */
export type InteractionChange = { userId: string } | { upstream: InteractionUpstream };

/** What every flow needs: the contract a store for another database implements first. */
export interface Store {
  /** Releases connections and file handles. */
  close(): Promise<void>;
  /**
   * True when several server processes serve from this store at once, as replicas (PostgreSQL):
   * what one process would otherwise keep in memory, such as rate limits, must then live here
   * (RateBucketStore).
   */
  readonly sharedByReplicas?: boolean;

  // Clients
  /** Throws StoreConflictError when the client id is taken. */
  createClient(client: ClientRecord): Promise<void>;
  getClient(clientId: string): Promise<ClientRecord | undefined>;
  /** Creates the client, or replaces its metadata keeping its creation time and last use (a metadata document fetched again). */
  saveClient(client: ClientRecord): Promise<void>;

  // Users
  getUser(key: UserKey): Promise<UserRecord | undefined>;
  /** Creates the user and their upstream identity together; StoreConflictError when either is taken. */
  createUserWithIdentity(user: UserRecord, identity: UserIdentityRecord): Promise<void>;
  listUserIdentities(filter?: { userId?: string }): Promise<UserIdentityRecord[]>;

  // Interactions (pending authorization requests)
  createInteraction(interaction: InteractionRecord): Promise<void>;
  /** Returns the interaction unless it is missing or expired at `now`. */
  getInteraction(id: string, now: number): Promise<InteractionRecord | undefined>;
  /** Records who signed in (a user that must exist), or the upstream provider chosen; nothing when the interaction is gone. */
  updateInteraction(id: string, change: InteractionChange): Promise<void>;
  /** Atomically removes and returns the interaction, so one consent yields one code. */
  consumeInteraction(id: string, now: number): Promise<InteractionRecord | undefined>;

  // Browser sessions
  /** Records the session and, where the store keeps it, the user's last sign-in (the session's creation). */
  createSession(session: SessionRecord): Promise<void>;
  getSession(idHash: string, now: number): Promise<SessionRecord | undefined>;
  /** Ends one browser session (signing out); nothing when it is already gone. */
  deleteSession(idHash: string): Promise<void>;

  // Upstream sessions (third-party authorization)
  createUpstreamSession(session: UpstreamSessionRecord): Promise<void>;
  getUpstreamSession(id: string): Promise<UpstreamSessionRecord | undefined>;
  /** Replaces the sealed tokens (after the provider renewed them, or to re-seal under a new key). */
  updateUpstreamSessionTokens(id: string, sealedTokens: string): Promise<void>;

  // Consents
  getConsent(userId: string, clientId: string, resource: string): Promise<ConsentRecord | undefined>;
  /** Creates or widens the consent (union of scopes). */
  saveConsent(consent: ConsentRecord): Promise<void>;

  // Grants
  /**
   * Creates the grant and, given one, its authorization code, in one transaction (both or
   * neither): what approving an authorization request writes, committed once. StoreConflictError
   * when the grant id or the code hash is taken.
   */
  createGrant(grant: GrantRecord, code?: AuthorizationCodeRecord): Promise<void>;
  getGrant(id: string): Promise<GrantRecord | undefined>;
  /**
   * Revokes the grant and with it every refresh and access token of its family, and records the
   * revocation (RevocationFeedStore.listRevocations) until its accessExpiresAt, if that is later,
   * in one transaction.
   */
  revokeGrant(id: string, now: number): Promise<void>;

  // Authorization codes
  /**
   * In one transaction, one commit: marks the code used if it is unused, unexpired and its grant
   * is not revoked (one atomic step, like refreshGrant: a winner of a concurrent redemption then
   * needs no second look at its grant, which the loser's replay may already have revoked), then
   * issues what `issue` decides for it, or (undefined: the redemption is refused) nothing, the
   * code staying used all the same. Issuing raises the grant's accessExpiresAt to the access
   * token's expiry and saves the refresh token (if any); a revocation of the grant, whether it
   * comes at the same moment or came just before (a code replayed while its first redemption
   * issues tokens), covers the access token: the recorded expiry is lengthened to it where
   * needed. `issue` runs synchronously inside the transaction and must not throw for a refusal
   * (a throw rolls the consumption back).
   */
  redeemAuthorizationCode(
    codeHash: string,
    now: number,
    issue: (code: AuthorizationCodeRecord) => TokenIssue | undefined,
  ): Promise<ConsumeResult<AuthorizationCodeRecord> | { status: 'revoked'; record: AuthorizationCodeRecord }>;

  // Device authorizations (RFC 8628)
  /** Throws StoreConflictError when the device code hash or the user code hash is taken. */
  createDeviceAuthorization(record: DeviceAuthorizationRecord): Promise<void>;
  /** The authorization whose user code this is, while it is pending and unexpired at `now`. */
  findPendingDeviceAuthorization(userCodeHash: string, now: number): Promise<DeviceAuthorizationRecord | undefined>;
  /**
   * In one transaction: marks the authorization approved if it is pending and unexpired, and
   * creates `grant` with its authorization code, whose hash is the device code's and which
   * expires with the authorization (the token endpoint redeems it with redeemAuthorizationCode).
   * False, writing nothing, otherwise: of two concurrent decisions only one is taken.
   */
  approveDeviceAuthorization(
    deviceCodeHash: string,
    now: number,
    grant: GrantRecord,
    code: Omit<AuthorizationCodeRecord, 'codeHash' | 'expiresAt'>,
  ): Promise<boolean>;
  /** Marks the authorization denied if it is pending and unexpired; false otherwise. */
  denyDeviceAuthorization(deviceCodeHash: string, now: number): Promise<boolean>;
  /**
   * A poll by the client, in one atomic step: records when it came and, for a pending
   * authorization polled sooner than its interval after the last poll, adds 5 s to the interval
   * (this and every later poll are held to it) and says `slow_down`. Another client's
   * authorization is neither changed nor shown (`foreign`); an expired one is `expired`.
   */
  pollDeviceAuthorization(deviceCodeHash: string, clientId: string, now: number): Promise<DevicePollResult>;

  // Refresh tokens
  /** A token not yet used (a rotated one is found by findSpentRefreshToken). */
  getRefreshToken(tokenHash: string): Promise<RefreshTokenRecord | undefined>;
  /** The spent record of a rotated token, while it is kept and its grant exists. */
  findSpentRefreshToken(tokenHash: string): Promise<SpentRefreshTokenRecord | undefined>;
  /**
   * A whole refresh in one transaction (one statement on PostgreSQL): if the presented token is
   * the client's, unused and unexpired, and its grant stands (and rests on no upstream sign-in
   * left unchecked), removes it, keeps its spent record (naming the new token as its successor),
   * saves the new token in its place and raises the grant's accessExpiresAt. One conditional
   * DELETE, so of two concurrent refreshes with the same token only one gets it, and the other,
   * naming the same new token, is told the token was spent (never a conflict). Otherwise changes
   * nothing and says why.
   */
  refreshGrant(request: RefreshRequest): Promise<RefreshResult>;
  /**
   * The retry of a refresh, with the token it spent (its answer lost, or two sessions of one
   * client refreshing at once), in one transaction (one statement on PostgreSQL): if that token
   * was spent after `spentAfter` and the successor its spent record names is one of
   * `successorHashes`, live and unexpired, and its grant is the client's and stands (and rests on
   * no upstream sign-in left unchecked), raises the grant's accessExpiresAt and returns the
   * successor's hash, grant and scope. The successor stays as it is, so every retry is answered
   * with it until it is used. Otherwise changes nothing and says why, as refreshGrant does.
   *
   * Optional only so that a store written before it keeps working: the server then falls back to
   * retryRefresh. The store suite requires it.
   */
  repeatRefresh?(request: RepeatRefreshRequest): Promise<RepeatRefreshResult>;
  /**
   * The older retry, used only when a store has no repeatRefresh: replaces the unused successor
   * with `next`, once, so that of two answers only the last one's token stays usable. The stores
   * of this package do not have it.
   */
  retryRefresh?(request: RefreshRequest, spentAfter: number): Promise<RefreshResult>;

  // Access tokens are not stored: a JWT names its grant (grant_id), whose row says whether it stands.
  /** Records the revocation of one access token (listRevocations) while it is unexpired. */
  revokeAccessToken(jti: string, expiresAt: number, now: number): Promise<void>;
  /** Whether revokeAccessToken recorded this token (and the record is still kept). */
  isAccessTokenRevoked(jti: string): Promise<boolean>;

  // JWT assertions (client assertions, authorization grants from trusted issuers, DPoP proofs)
  /**
   * Records that a JWT assertion was used, by `key` (a hash of its issuer and jti, or of a DPoP
   * proof's key and jti, made by the caller), until `expiresAt`, in one atomic step: true the
   * first time, false while a record of it is kept (a replay), however many replicas are asked at
   * once. A record expired at `now` counts as none.
   */
  useAssertionId(key: string, expiresAt: number, now: number): Promise<boolean>;

  // Signing keys
  listSigningKeys(): Promise<SigningKeyRecord[]>;
  /** Saves `key` as current only if there is no current key yet; returns the current key either way. */
  ensureSigningKey(key: SigningKeyRecord): Promise<SigningKeyRecord>;
}

/** Upkeep: without it nothing expired is ever deleted, and `sweep()` does nothing. */
export interface StoreUpkeep {
  /** Records that the client was used now, unless that was already recorded less than a day ago (sweepExpired's `unusedClientsBefore`). */
  touchClient(clientId: string, now: number): Promise<void>;
  /**
   * Deletes what expired before `now` (codes, device authorizations, tokens, spent records, sessions, interactions, old
   * grants, upstream sessions nothing rests on, rate-limit buckets full again, revocations a minute
   * after their last token expired); returns how many rows.
   */
  sweepExpired(now: number, options?: SweepOptions): Promise<number>;
}

/** Rate limits shared by replicas: without it, each process keeps its own buckets in memory. */
export interface RateBucketStore {
  /** Takes tokens from a bucket in one atomic step (never more than it holds, however many replicas ask at once). */
  takeRateTokens(request: RateTokensRequest): Promise<RateTokensResult>;
}

/**
 * The revocations resource servers must refuse before tokens expire, readable by other processes
 * (the revocation list endpoint, and `Revocations.start()` following the store). Without it, a
 * process knows only the revocations it made itself.
 */
export interface RevocationFeedStore {
  /** Revocations recorded at or after `since` that still affect a token unexpired at `now`, oldest first. */
  listRevocations(since: number, now: number): Promise<RevocationRecord[]>;
  /**
   * Where the database can tell other processes at once (PostgreSQL LISTEN/NOTIFY): calls
   * `onChange` after a revocation is committed anywhere, and after each reconnection (when some
   * may have been missed). Absent where polling listRevocations is the only way (SQLite, memory).
   * Resolves with a function that stops listening.
   */
  watchRevocations?(onChange: () => void): Promise<() => Promise<void>>;
}

/** What an operator needs (the CLI), and requests never do. */
export interface StoreAdministration {
  listClients(): Promise<ClientRecord[]>;
  /** Deletes the client and everything issued to it (grants, codes, tokens, consents), recording its grants' revocations. */
  deleteClient(clientId: string, now?: number): Promise<boolean>;
  /** Throws StoreConflictError when the username is taken. */
  createUser(user: UserRecord): Promise<void>;
  listUsers(): Promise<UserRecord[]>;
  /** Deletes the user and their sessions, consents and grants, recording the grants' revocations. */
  deleteUser(username: string, now?: number): Promise<boolean>;
  /**
   * Sets the user's password hash and, in the same transaction, ends their browser sessions and
   * pending sign-ins (whoever knew the old password is signed out). Grants stay. Returns how many
   * sessions ended, or undefined when there is no such user.
   */
  setUserPassword(username: string, passwordHash: string): Promise<{ sessionsEnded: number } | undefined>;
  listConsents(filter: { userId?: string; clientId?: string }): Promise<ConsentRecord[]>;
  /** Removes the user's consents for the client and revokes the grants they produced (recording revocations); returns how many consents. */
  revokeConsents(userId: string, clientId: string, now: number): Promise<number>;
  /** Saves `key` as current; the current one becomes previous and the previous one retired. Atomic. */
  rotateSigningKey(key: SigningKeyRecord): Promise<void>;
}

/** One page of a listing: at most `limit` records after the key `after` (none: from the first), whose key or name contains `search`. */
export interface PageQuery {
  after?: string;
  limit: number;
  /** Case-insensitive; matched against the key and the name (a client's ID and name, a username). */
  search?: string;
}

/**
 * What the admin console needs beyond administration: listings a page at a time (a store may hold
 * 100,000 clients), administrators, and signing a person out everywhere.
 */
export interface StoreConsole {
  /** Clients in client_id order (binary), a page at a time. */
  listClientsPage(query: PageQuery): Promise<ClientRecord[]>;
  /** Users in username order (binary), a page at a time. */
  listUsersPage(query: PageQuery): Promise<UserRecord[]>;
  /** Marks the user an administrator, or not; false when there is no such user. */
  setUserAdmin(username: string, admin: boolean): Promise<boolean>;
  /** Ends every browser session of the user and their pending sign-ins; returns how many sessions. */
  endUserSessions(userId: string): Promise<number>;
}

/** An audit event as the store keeps it: the fields every event may have, and the rest as details. */
export interface AuditEventRecord {
  /** Its place in the log, given by the store (increasing); absent when recording. */
  seq?: number;
  /** When it occurred, epoch milliseconds. */
  occurredAt: number;
  event: string;
  outcome: 'success' | 'failure';
  reason: string | null;
  clientId: string | null;
  userId: string | null;
  grantId: string | null;
  /** The client address's bucket, as logged; never more of it. */
  address: string | null;
  provider: string | null;
  /** The event's other fields: plain values only. */
  details: Record<string, string | number | boolean | null> | null;
}

/** Which audit events to list: newest first, before `beforeSeq`, matching every filter given. */
export interface AuditEventQuery {
  beforeSeq?: number;
  limit: number;
  event?: string;
  outcome?: 'success' | 'failure';
  userId?: string;
  clientId?: string;
  address?: string;
  /** Only events at or after this time (epoch milliseconds). */
  since?: number;
}

/** Audit events kept for the console, swept after their retention (SweepOptions.auditEventsBefore). */
export interface AuditEventStore {
  /** Records the events, in order, in one transaction. */
  recordAuditEvents(events: AuditEventRecord[]): Promise<void>;
  listAuditEvents(query: AuditEventQuery): Promise<AuditEventRecord[]>;
}

/** A store with every capability, as the memory, SQLite and PostgreSQL stores are. */
export type FullStore = Store & StoreUpkeep & RateBucketStore & RevocationFeedStore & StoreAdministration & StoreConsole & AuditEventStore;
