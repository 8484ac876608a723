/**
 * What a store's author may give the suite to look behind the contract: how many records of a kind
 * the store holds. Where given, the suite checks what a step wrote (a refusal writes nothing, a
 * rotation leaves one live token, a deletion takes what depends on the record and nothing else,
 * a sweep's count is what went); where not, those checks are left out and the rest runs as it is.
 */
export type RecordKind =
  | 'clients'
  | 'users'
  | 'userIdentities'
  | 'consents'
  | 'interactions'
  | 'sessions'
  | 'upstreamSessions'
  | 'grants'
  | 'authorizationCodes'
  | 'refreshTokens'
  | 'spentRefreshTokens'
  | 'deviceAuthorizations'
  | 'usedAssertions'
  | 'revocations'
  | 'signingKeys';

export const RECORD_KINDS: readonly RecordKind[] = [
  'clients',
  'users',
  'userIdentities',
  'consents',
  'interactions',
  'sessions',
  'upstreamSessions',
  'grants',
  'authorizationCodes',
  'refreshTokens',
  'spentRefreshTokens',
  'deviceAuthorizations',
  'usedAssertions',
  'revocations',
  'signingKeys',
];

export interface StoreProbes {
  /**
   * How many records of `kind` the store holds now, expired ones not yet swept included (in a SQL
   * store, the rows of its table). A rotated refresh token is a spent record, not a refresh token.
   */
  countRecords(kind: RecordKind): Promise<number>;
}
