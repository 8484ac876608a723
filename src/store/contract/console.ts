import type { ClientRecord } from './clients.js';
import type { UserRecord } from './people.js';

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
