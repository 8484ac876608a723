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

/** Who a user lookup names: their id, their username, or an upstream identity linked to them. */
export type UserKey = { id: string } | { username: string } | { identity: IdentityKey };

export interface ConsentRecord {
  userId: string;
  clientId: string;
  resource: string;
  scope: string[];
  createdAt: number;
  updatedAt: number;
}

/** People: users, the upstream identities linked to them, and what each approved for a client (consents). */
export interface PeopleStore {
  getUser(key: UserKey): Promise<UserRecord | undefined>;
  /** Creates the user and their upstream identity together; a conflict StoreError when either is taken. */
  createUserWithIdentity(user: UserRecord, identity: UserIdentityRecord): Promise<void>;
  listUserIdentities(filter?: { userId?: string }): Promise<UserIdentityRecord[]>;
  getConsent(userId: string, clientId: string, resource: string): Promise<ConsentRecord | undefined>;
  /** Creates or widens the consent (union of scopes). */
  saveConsent(consent: ConsentRecord): Promise<void>;
}
