import { addUser, listUsers, passwordProblem, removeUser, setAdministrator, setPassword, usernameProblem } from '../admin/index.js';
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

const noSuchUser = (username: string): string => `There is no user named ${username}.`;

/** Reads a password (stdin, or a hidden prompt asked twice) for `command`, and checks it before any store is opened. */
async function newPassword(command: string): Promise<string> {
  const password = await readPassword(command);
  const problem = passwordProblem(password);
  if (problem) throw new CliError(problem);
  return password;
}

export const USERS_OPTIONS = { ...COMMON_OPTIONS, ...STORE_OPTIONS, admin: { type: 'boolean' } } as const;

export async function usersCommand(args: string[]): Promise<void> {
  const { values, positionals } = parsed(() => parseArgs({ args, options: USERS_OPTIONS, allowPositionals: true, strict: true }));
  const [action, name, ...rest] = positionals;
  if (values.help || !action) return print(USERS_HELP);
  if (action === 'admin') return adminCommand(values, name, rest);
  if (rest.length > 0) throw usageError(`unexpected argument ${rest[0]}`);
  if (values.admin && action !== 'add') throw usageError('--admin goes with users add');

  if (action === 'add') {
    if (!name) throw usageError('users add needs a NAME');
    const problem = usernameProblem(name);
    if (problem) throw new CliError(problem);
    const password = await newPassword(`context-auth users add ${name}`);
    const { store, location, created } = await openStore(values, { create: true });
    try {
      const added = await addUser(store, { username: name, password, ...(values.admin ? { admin: true } : {}) }, nowSeconds());
      if ('refused' in added) throw new CliError(added.refused);
    } finally {
      await store.close();
    }
    // A new database is worth a word: a mistyped --data is the usual reason for one.
    if (values.json) return print({ username: name, added: true, admin: Boolean(values.admin), ...(created ? { created_database: location } : {}) });
    const who = values.admin ? `administrator ${name}` : `user ${name}`;
    return print(created ? `Added ${who} to a new database in ${location}.` : `Added ${who}.`);
  }
  if (action === 'list') {
    const users = await withStore(values, (store) => listUsers(store));
    if (values.json) {
      return print(users.map((user) => ({ id: user.id, username: user.username, admin: user.admin, created_at: user.createdAt, source: user.signsInWith })));
    }
    const describe = ({ signsInWith: source }: (typeof users)[number]): string => {
      if (typeof source === 'object' && source !== null) return `${source.provider}: ${source.email ?? source.subject}`;
      return source ?? 'none';
    };
    const rows = users.map((user) => ({
      username: user.username,
      id: user.id,
      'signs in with': describe(user),
      admin: user.admin ? 'yes' : '',
      created: isoTime(user.createdAt),
    }));
    return print(table(rows, ['username', 'id', 'signs in with', 'admin', 'created']));
  }
  if (action === 'passwd') {
    if (!name) throw usageError('users passwd needs a NAME');
    // Said before the password is asked for, not after it was typed twice.
    if (!(await withStore(values, (store) => store.getUser({ username: name })))) throw new CliError(noSuchUser(name));
    const password = await newPassword(`context-auth users passwd ${name}`);
    const changed = await withStore(values, (store) => setPassword(store, name, password));
    if ('refused' in changed) throw new CliError(changed.refused);
    // Tokens already issued to clients are not the password's: they stay until revoked.
    if (values.json) return print({ username: name, password_changed: true, sessions_ended: changed.sessionsEnded });
    return print(
      `Changed the password of ${name}; ${changed.sessionsEnded} browser session${changed.sessionsEnded === 1 ? '' : 's'} ended. Clients they authorized keep their tokens (see 'consents revoke').`,
    );
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
