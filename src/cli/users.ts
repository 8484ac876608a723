import { randomUUID } from 'node:crypto';
import { noSuchUser, removeUser, setAdministrator } from '../authorization-server/index.js';
import { hashPassword } from '../core/index.js';
import { StoreConflictError } from '../store/index.js';
import { parseArgs } from 'node:util';
import { COMMON_OPTIONS, STORE_OPTIONS, isoTime, parsed, print, table } from './args.js';
import { nowSeconds, openStore, withStore, type StoreFlags } from './data.js';
import { CliError, didYouMean, usageError } from './errors.js';
import { readPassword } from './prompt.js';

export const USERS_HELP = `context-auth users add NAME [--admin]   add a user (password from stdin, or asked for);
                                        --admin lets them use the admin console at /admin
context-auth users admin NAME on|off    make the user an administrator, or no longer one
context-auth users list                 list users, and who is an administrator
context-auth users passwd NAME          set a new password (from stdin, or asked for); signs the user out of the browser
context-auth users remove NAME          remove a user with their sessions, consents and grants`;

const USERNAME = /^[A-Za-z0-9._@+-]{1,64}$/;
const MIN_PASSWORD = 8;

/** Reads a password (stdin, or a hidden prompt asked twice) for `command`, checks its length and hashes it. */
async function newPasswordHash(command: string): Promise<string> {
  const password = await readPassword(command);
  if (password.length < MIN_PASSWORD) throw new CliError(`The password must have at least ${MIN_PASSWORD} characters.`);
  return hashPassword(password);
}

export const USERS_OPTIONS = { ...COMMON_OPTIONS, ...STORE_OPTIONS, admin: { type: 'boolean' } } as const;

export async function usersCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() =>
    parseArgs({ args, options: USERS_OPTIONS, allowPositionals: true, strict: true }),
  );
  const [action, name, ...rest] = positionals;
  if (values.help || !action) return print(USERS_HELP);
  if (action === 'admin') return adminCommand(values, name, rest);
  if (rest.length > 0) throw usageError(`unexpected argument ${rest[0]}`);
  if (values.admin && action !== 'add') throw usageError('--admin goes with users add');

  if (action === 'add') {
    if (!name) throw usageError('users add needs a NAME');
    if (!USERNAME.test(name)) throw new CliError('A username is 1 to 64 letters, digits or . _ @ + -');
    const passwordHash = await newPasswordHash(`context-auth users add ${name}`);
    const { store, location, created } = await openStore(values, { create: true });
    try {
      await store.createUser({ id: randomUUID(), username: name, passwordHash, createdAt: nowSeconds(), ...(values.admin ? { admin: true } : {}) });
    } catch (error) {
      if (error instanceof StoreConflictError) throw new CliError(`A user named ${name} exists already.`);
      throw error;
    } finally {
      await store.close();
    }
    // A new database is worth a word: a mistyped --data is the usual reason for one.
    if (values.json) return print({ username: name, added: true, admin: Boolean(values.admin), ...(created ? { created_database: location } : {}) });
    const who = values.admin ? `administrator ${name}` : `user ${name}`;
    return print(created ? `Added ${who} to a new database in ${location}.` : `Added ${who}.`);
  }
  if (action === 'list') {
    const [users, identities] = await withStore(values, (store) => Promise.all([store.listUsers(), store.listUserIdentities()]));
    // Where each user signs in: a local password, or an upstream provider (and who they are there).
    const sourceOf = (userId: string, hasPassword: boolean) => {
      const identity = identities.find((i) => i.userId === userId);
      if (identity) return { provider: identity.provider, issuer: identity.issuer, subject: identity.subject, email: identity.email, name: identity.name };
      return hasPassword ? 'password' : null;
    };
    if (values.json) {
      return print(
        users.map((user) => ({ id: user.id, username: user.username, admin: user.admin === true, created_at: user.createdAt, source: sourceOf(user.id, user.passwordHash !== null) })),
      );
    }
    const describe = (user: (typeof users)[number]): string => {
      const source = sourceOf(user.id, user.passwordHash !== null);
      if (typeof source === 'object' && source !== null) return `${source.provider}: ${source.email ?? source.subject}`;
      return source ?? 'none';
    };
    const rows = users.map((user) => ({ username: user.username, id: user.id, 'signs in with': describe(user), admin: user.admin === true ? 'yes' : '', created: isoTime(user.createdAt) }));
    return print(table(rows, ['username', 'id', 'signs in with', 'admin', 'created']));
  }
  if (action === 'passwd') {
    if (!name) throw usageError('users passwd needs a NAME');
    // Said before the password is asked for, not after it was typed twice.
    if (!(await withStore(values, (store) => store.getUser({ username: name })))) throw new CliError(noSuchUser(name));
    const passwordHash = await newPasswordHash(`context-auth users passwd ${name}`);
    const changed = await withStore(values, (store) => store.setUserPassword(name, passwordHash));
    if (!changed) throw new CliError(noSuchUser(name));
    // Tokens already issued to clients are not the password's: they stay until revoked.
    if (values.json) return print({ username: name, password_changed: true, sessions_ended: changed.sessionsEnded });
    return print(`Changed the password of ${name}; ${changed.sessionsEnded} browser session${changed.sessionsEnded === 1 ? '' : 's'} ended. Clients they authorized keep their tokens (see 'consents revoke').`);
  }
  if (action === 'remove') {
    if (!name) throw usageError('users remove needs a NAME');
    const { removed } = await withStore(values, (store) => removeUser(store, name, nowSeconds()));
    if (!removed) throw new CliError(noSuchUser(name));
    return print(values.json ? { username: name, removed: true } : `Removed user ${name}.`);
  }
  throw usageError(`unknown users action ${action}${didYouMean(action, ['add', 'admin', 'list', 'passwd', 'remove'])}`);
}

/** `users admin NAME on|off`: the same change as the console's Make / Revoke administrator. */
async function adminCommand(values: StoreFlags & { json?: boolean; admin?: boolean }, name: string | undefined, rest: string[]): Promise<void> {
  const [setting, ...extra] = rest;
  if (!name || (setting !== 'on' && setting !== 'off')) throw usageError('users admin needs a NAME and on or off');
  if (extra.length > 0) throw usageError(`unexpected argument ${extra[0]}`);
  if (values.admin) throw usageError('--admin goes with users add');
  const { found, admin } = await withStore(values, (store) => setAdministrator(store, name, setting === 'on'));
  if (!found) throw new CliError(noSuchUser(name));
  if (values.json) return print({ username: name, admin });
  return print(admin ? `${name} is an administrator: they can use the admin console.` : `${name} is no longer an administrator.`);
}
