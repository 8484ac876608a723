/** Records of use: what may be presented once (client assertions, authorization grants from trusted issuers, DPoP proofs). */
export interface ReplayStore {
  /**
   * Records that a JWT assertion was used, by `key` (a hash of its issuer and jti, or of a DPoP
   * proof's key and jti, made by the caller), until `expiresAt`, in one atomic step: true the
   * first time, false while a record of it is kept (a replay), however many replicas are asked at
   * once. A record expired at `now` counts as none.
   */
  useAssertionId(key: string, expiresAt: number, now: number): Promise<boolean>;
}
