import type { ClientRecord } from './clients.js';
import type { ConsentRecord, UserRecord } from './people.js';
import type { SigningKeyRecord } from './keys.js';

/** What an operator needs (the CLI), and requests never do. */
export interface StoreAdministration {
  listClients(): Promise<ClientRecord[]>;
  /** Deletes the client and everything issued to it (grants, codes, tokens, consents), recording its grants' revocations. */
  deleteClient(clientId: string, now?: number): Promise<boolean>;
  /** Throws a conflict StoreError when the username is taken. */
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
