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

/** The signing keys, kept in the store so that every replica signs with the same ones. */
export interface KeyStore {
  listSigningKeys(): Promise<SigningKeyRecord[]>;
  /** Saves `key` as current only if there is no current key yet; returns the current key either way. */
  ensureSigningKey(key: SigningKeyRecord): Promise<SigningKeyRecord>;
}
