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
  /** The authorization request's OpenID Connect nonce, for the ID token; null without one. */
  nonce: string | null;
  createdAt: number;
  expiresAt: number;
  consumedAt: number | null;
}

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

/** What a refresh (refreshGrant) asks for: the presented token spent and a new one in its place, in one step. */
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
 * What the retry of a refresh (repeatRefresh) asks for: the successor that the refresh of the
 * presented token issued, answered again while it is unused.
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
  { status: 'ok'; grant: GrantRecord; scope: string[]; successorHash: string } | Exclude<RefreshResult, { status: 'ok' }>;

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

/**
 * Grants and what they issue: created with their authorization code, the code redeemed, refresh
 * tokens rotated, the grant or one access token revoked. Access tokens themselves are not
 * stored: a JWT names its grant (grant_id), whose row says whether it stands.
 */
export interface GrantStore {
  /**
   * Creates the grant and, given one, its authorization code, in one transaction (both or
   * neither): what approving an authorization request writes, committed once. A conflict StoreError
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
  /** A token not yet used (a rotated one is found by findSpentRefreshToken). */
  getRefreshToken(tokenHash: string): Promise<RefreshTokenRecord | undefined>;
  /** The spent record of a rotated token, while it is kept and its grant exists. */
  findSpentRefreshToken(tokenHash: string): Promise<SpentRefreshTokenRecord | undefined>;
  /**
   * A whole refresh in one transaction: if the presented token is the client's, unused and
   * unexpired, and its grant stands (and rests on no upstream sign-in left unchecked), removes
   * it, keeps its spent record (naming the new token as its successor), saves the new token in
   * its place and raises the grant's accessExpiresAt. One conditional write decides, so of two
   * concurrent refreshes with the same token only one gets it, and the other, naming the same new
   * token, is told the token was spent (never a conflict). Otherwise changes nothing and says why.
   */
  refreshGrant(request: RefreshRequest): Promise<RefreshResult>;
  /** Records the revocation of one access token (listRevocations) while it is unexpired. */
  revokeAccessToken(jti: string, expiresAt: number, now: number): Promise<void>;
  /** Whether revokeAccessToken recorded this token (and the record is still kept). */
  isAccessTokenRevoked(jti: string): Promise<boolean>;
}

/**
 * Retries of a refresh answered with the token the refresh issued (capability `refreshRetry`).
 * Without it, a refresh presented again is refused (and, after the grace window, a reuse), so of
 * two sessions of one client refreshing at once, one is signed out.
 */
export interface RefreshRetryStore {
  /**
   * The retry of a refresh, with the token it spent (its answer lost, or two sessions of one
   * client refreshing at once), in one transaction: if that token was spent after `spentAfter`
   * and the successor its spent record names is one of `successorHashes`, live and unexpired, and
   * its grant is the client's and stands (and rests on no upstream sign-in left unchecked),
   * raises the grant's accessExpiresAt and returns the successor's hash, grant and scope. The
   * successor stays as it is, so every retry is answered with it until it is used. Otherwise
   * changes nothing and says why, as refreshGrant does.
   */
  repeatRefresh(request: RepeatRefreshRequest): Promise<RepeatRefreshResult>;
}

/** A record of single use kept with a refresh (RefreshWithAssertionStore), as useAssertionId keeps one. */
export interface AssertionUse {
  /** As useAssertionId's `key`: a hash made by the caller (of a DPoP proof's key and `jti`). */
  key: string;
  expiresAt: number;
}

/**
 * A refresh and the record of the assertion that came with it (a DPoP proof) in one transaction,
 * one commit (capability `refreshWithAssertion`). Without it, the server records the assertion
 * (useAssertionId) and then refreshes: two commits.
 */
export interface RefreshWithAssertionStore {
  /**
   * In one transaction: first useAssertionId's step for `assertion`, at `request.now`; when a
   * record of it is kept already, nothing else happens and the answer is 'assertion-used'
   * (the token is left as it was). Otherwise the record is kept whatever the refresh's outcome,
   * and the refresh goes and answers as refreshGrant. When the transaction fails as a whole
   * (an error thrown), neither is kept.
   */
  refreshGrantWithAssertion(request: RefreshRequest, assertion: AssertionUse): Promise<RefreshResult | { status: 'assertion-used' }>;
}

/**
 * The retry of a store written before repeatRefresh, used only when a store lacks the
 * refreshRetry capability: replaces the unused successor with `next`, once, so that of two
 * answers only the last one's token stays usable. The stores of this package do not have it.
 */
export interface LegacyRefreshRetryStore {
  retryRefresh(request: RefreshRequest, spentAfter: number): Promise<RefreshResult>;
}
