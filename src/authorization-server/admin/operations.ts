import type { Store, StoreAdministration, StoreConsole } from '../../store/store.js';

/*
 * The changes an administrator makes, whether at the CLI (`clients remove`, `users remove`,
 * `users admin`) or with the admin console's buttons: one piece of code each, so both do exactly
 * the same. Each says what happened, and "not found" is an answer, not an exception: the CLI and
 * the console each say it their own way, with the sentences below.
 */

/** The store as these operations use it. */
export type OperationsStore = Pick<Store, 'getUser'> &
  Pick<StoreAdministration, 'deleteClient' | 'deleteUser'> &
  Pick<StoreConsole, 'setUserAdmin' | 'endUserSessions'>;

export const noSuchClient = (clientId: string): string => `There is no client ${clientId}.`;
export const noSuchUser = (username: string): string => `There is no user named ${username}.`;

/**
 * Removes a client and everything issued to it. Its grants' revocations are recorded; a server
 * refuses their access tokens once it has read them (at once in the console's own process).
 */
export async function removeClient(store: OperationsStore, clientId: string, now: number): Promise<{ clientId: string; removed: boolean }> {
  return { clientId, removed: await store.deleteClient(clientId, now) };
}

/** Removes a user with their sessions, consents and grants (their revocations recorded, as removeClient's). */
export async function removeUser(store: OperationsStore, username: string, now: number): Promise<{ username: string; removed: boolean }> {
  return { username, removed: await store.deleteUser(username, now) };
}

/** Makes the user an administrator of the console, or no longer one; `found` is false when there is no such user. */
export async function setAdministrator(
  store: OperationsStore,
  username: string,
  admin: boolean,
): Promise<{ username: string; admin: boolean; found: boolean }> {
  return { username, admin, found: await store.setUserAdmin(username, admin) };
}

/**
 * Ends every browser session of the user (and their sign-ins under way). The applications they
 * approved keep their tokens: revoking those is another change.
 */
export async function signOutEverywhere(store: OperationsStore, username: string): Promise<{ username: string; found: boolean; sessionsEnded: number }> {
  const user = await store.getUser({ username });
  if (!user) return { username, found: false, sessionsEnded: 0 };
  return { username, found: true, sessionsEnded: await store.endUserSessions(user.id) };
}
