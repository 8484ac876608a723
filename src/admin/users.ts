import { randomUUID } from 'node:crypto';
import { hashPassword } from '../core/passwords.js';
import { isStoreConflict, type FullStore, type UserRecord } from '../store/store.js';

const USERNAME = /^[A-Za-z0-9._@+-]{1,64}$/;
export const MIN_PASSWORD_LENGTH = 8;

/** Why `username` cannot name a user, or undefined when it can: 1 to 64 letters, digits or . _ @ + - */
export function usernameProblem(username: string): string | undefined {
  return USERNAME.test(username) ? undefined : 'A username is 1 to 64 letters, digits or . _ @ + -';
}

/** Why `password` cannot be a user's password, or undefined when it can. */
export function passwordProblem(password: string): string | undefined {
  return password.length < MIN_PASSWORD_LENGTH ? `The password must have at least ${MIN_PASSWORD_LENGTH} characters.` : undefined;
}

/** What adding a user did: the user, or why not (a sentence for the operator). */
export type UserAddition = { user: UserRecord } | { refused: string };

/** Adds a user who signs in with a password (kept as its scrypt hash only); `admin` lets them use the admin console. */
export async function addUser(
  store: Pick<FullStore, 'createUser'>,
  user: { username: string; password: string; admin?: boolean },
  now: number,
): Promise<UserAddition> {
  const refused = usernameProblem(user.username) ?? passwordProblem(user.password);
  if (refused) return { refused };
  const record: UserRecord = {
    id: randomUUID(),
    username: user.username,
    passwordHash: await hashPassword(user.password),
    createdAt: now,
    ...(user.admin ? { admin: true } : {}),
  };
  try {
    await store.createUser(record);
  } catch (error) {
    if (isStoreConflict(error)) return { refused: `A user named ${user.username} exists already.` };
    throw error;
  }
  return { user: record };
}

/** What setting a password did: how many browser sessions it ended, or why nothing changed. */
export type PasswordChange = { sessionsEnded: number } | { refused: string };

/**
 * Sets a user's password and ends their browser sessions. Tokens already issued to the clients
 * they approved are not the password's: they stay until revoked (revokeConsent).
 */
export async function setPassword(store: Pick<FullStore, 'setUserPassword'>, username: string, password: string): Promise<PasswordChange> {
  const refused = passwordProblem(password);
  if (refused) return { refused };
  const changed = await store.setUserPassword(username, await hashPassword(password));
  return changed ? { sessionsEnded: changed.sessionsEnded } : { refused: `There is no user named ${username}.` };
}

/** How a user signs in: an upstream provider (and who they are there), a local password, or neither. */
export type SignInSource = { provider: string; issuer: string; subject: string; email: string | null; name: string | null } | 'password' | null;

export interface UserListing {
  id: string;
  username: string;
  admin: boolean;
  createdAt: number;
  signsInWith: SignInSource;
}

/** Every user, with whether they are an administrator and how they sign in; never a password hash. */
export async function listUsers(store: Pick<FullStore, 'listUsers' | 'listUserIdentities'>): Promise<UserListing[]> {
  const [users, identities] = await Promise.all([store.listUsers(), store.listUserIdentities()]);
  return users.map((user) => {
    const identity = identities.find((i) => i.userId === user.id);
    const signsInWith: SignInSource = identity
      ? { provider: identity.provider, issuer: identity.issuer, subject: identity.subject, email: identity.email, name: identity.name }
      : user.passwordHash !== null
        ? 'password'
        : null;
    return { id: user.id, username: user.username, admin: user.admin === true, createdAt: user.createdAt, signsInWith };
  });
}
