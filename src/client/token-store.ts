/**
 * Where the client keeps registrations and tokens: in memory (tests, programs that keep nothing)
 * or in one JSON file only its owner can read. The file may be shared by several processes at once
 * (two terminals running the CLI), so every read goes to the file, every write replaces it
 * atomically under a lock file, and withLock excludes across processes too (file-lock.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ClientError } from './errors.js';
import { reason, Serialiser, withLockFile, type LockTiming } from './file-lock.js';
import { checkFolder, currentUid, openPrivateFile } from './private-file.js';
import { identityKey, PERSON, sameIdentity } from './grants.js';
import type { GrantIdentity, GrantSelector, StoredClient, StoredGrant, TokenStore } from './types.js';

// ---------------------------------------------------------------------------------------------
// What both stores hold, and the lookups they share

interface Credentials {
  /** Keyed by clientKey(application, issuer). */
  clients: Map<string, StoredClient>;
  /** Keyed by grantKey(grant). */
  grants: Map<string, StoredGrant>;
}

const emptyCredentials = (): Credentials => ({ clients: new Map(), grants: new Map() });
// As JSON arrays: names may hold any character, and no two different tuples give one key.
const clientKey = (application: string, issuer: string): string => JSON.stringify([application, issuer]);
const grantKey = (grant: Pick<StoredGrant, 'application' | 'identity' | 'serverUrl' | 'issuer'>): string =>
  JSON.stringify([grant.application, identityKey(grant.identity), grant.serverUrl, grant.issuer]);
// Callers get and give copies: a caller changing a returned grant must not change the store.
const copy = <T>(value: T): T => structuredClone(value);

function matchingGrants(data: Credentials, which: GrantSelector): StoredGrant[] {
  return [...data.grants.values()].filter(
    (grant) =>
      grant.application === which.application &&
      grant.serverUrl === which.serverUrl &&
      sameIdentity(grant.identity, which.identity) &&
      (which.issuer === undefined || grant.issuer === which.issuer),
  );
}

/** The grant from the selector's issuer, or without one the most recently updated grant selected. */
function findGrant(data: Credentials, which: GrantSelector): StoredGrant | undefined {
  let latest: StoredGrant | undefined;
  for (const grant of matchingGrants(data, which)) {
    if (!latest || grant.updatedAt > latest.updatedAt) latest = grant;
  }
  return latest;
}

function removeGrants(data: Credentials, which: GrantSelector): number {
  const doomed = matchingGrants(data, which);
  for (const grant of doomed) data.grants.delete(grantKey(grant));
  return doomed.length;
}

const putClient = (data: Credentials, client: StoredClient): void => void data.clients.set(clientKey(client.application, client.issuer), client);
const putGrant = (data: Credentials, grant: StoredGrant): void => void data.grants.set(grantKey(grant), grant);

// ---------------------------------------------------------------------------------------------
// Memory

/** Keeps everything in this process; withLock serialises per name within it. */
export class MemoryTokenStore implements TokenStore {
  private readonly data = emptyCredentials();
  private readonly locks = new Serialiser();

  async getClient(application: string, issuer: string): Promise<StoredClient | undefined> {
    const client = this.data.clients.get(clientKey(application, issuer));
    return client && copy(client);
  }

  async saveClient(client: StoredClient): Promise<void> {
    putClient(this.data, copy(client));
  }

  async deleteClient(application: string, issuer: string): Promise<void> {
    this.data.clients.delete(clientKey(application, issuer));
  }

  async getGrant(which: GrantSelector): Promise<StoredGrant | undefined> {
    const grant = findGrant(this.data, which);
    return grant && copy(grant);
  }

  async saveGrant(grant: StoredGrant): Promise<void> {
    putGrant(this.data, copy(grant));
  }

  async deleteGrant(which: GrantSelector): Promise<number> {
    return removeGrants(this.data, which);
  }

  async listGrants(): Promise<StoredGrant[]> {
    return [...this.data.grants.values()].map(copy);
  }

  withLock<T>(name: string, action: () => Promise<T>): Promise<T> {
    return this.locks.run(name, action);
  }
}

// ---------------------------------------------------------------------------------------------
// The file: format

/** `$CONTEXT_AUTH_CREDENTIALS`, else `$XDG_CONFIG_HOME/context-auth/credentials.json` (~/.config by default). */
export function defaultCredentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CONTEXT_AUTH_CREDENTIALS) return path.resolve(env.CONTEXT_AUTH_CREDENTIALS);
  // The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
  const xdg = env.XDG_CONFIG_HOME;
  const configHome = xdg && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), '.config');
  return path.join(configHome, 'context-auth', 'credentials.json');
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The name the context-auth CLI registers under. A version 1 file knew no applications: the CLI
 * wrote it, and its entries are read as the CLI's.
 */
export const CLI_CLIENT_NAME = 'context-auth CLI';

/**
 * 3: each grant names its identity. 2 and 1 (the layouts before identities were told apart) are
 * read, and upgraded by the first change written.
 */
const FORMAT_VERSION = 3;
const OLD_LAYOUTS: readonly unknown[] = [1, 2];

/** What the file keeps of a client or grant: the application is the key it is filed under. */
type Filed<T> = Omit<T, 'application'>;
/** A grant as the old layouts kept it: no identity. */
type OldFiled = Omit<Filed<StoredGrant>, 'identity'>;

const isFiledClient = (value: unknown): value is Filed<StoredClient> =>
  isRecord(value) && typeof value.issuer === 'string' && typeof value.clientId === 'string';

const isOldFiledGrant = (value: unknown): value is OldFiled =>
  isRecord(value) &&
  typeof value.serverUrl === 'string' &&
  typeof value.issuer === 'string' &&
  typeof value.accessToken === 'string' &&
  typeof value.updatedAt === 'number';

const isIdentity = (value: unknown): value is GrantIdentity =>
  isRecord(value) &&
  (value.kind === 'person' ||
    (value.kind === 'program' &&
      (value.grantType === 'client_credentials' || value.grantType === 'jwt-bearer') &&
      typeof value.clientId === 'string' &&
      value.clientId !== ''));

const isFiledGrant = (value: unknown): value is Filed<StoredGrant> => isOldFiledGrant(value) && isIdentity((value as Record<string, unknown>).identity);

/**
 * The identity of a grant the old layouts kept, which stored a person's and a program's tokens in
 * one place: the person's when it has a refresh token (which a browser or device sign-in gets, and
 * a program's grant does not) or was issued to the client the application registered there; else
 * a program's, whose grant type was not kept. Such a grant is not carried over: the program gets
 * a new token by its own grant on its next request, and a person's sign-in never uses it.
 */
function oldGrantIdentity(grant: OldFiled, registered: StoredClient | undefined): GrantIdentity | undefined {
  if (grant.refreshToken !== undefined || (registered !== undefined && registered.clientId === grant.clientId)) return PERSON;
  return undefined;
}

/** Parses the file; anything unexpected is an error, so a file we do not understand is never overwritten. */
function parseCredentials(text: string, file: string): Credentials {
  // An empty file holds nothing to lose (e.g. made by `touch`): treat it as missing.
  if (text.trim() === '') return emptyCredentials();
  const corrupt = (why: string): ClientError =>
    new ClientError('storage_failed', `the credentials file ${file} ${why}; it was left untouched — fix it, or delete it and sign in again`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw corrupt('is not valid JSON');
  }
  if (!isRecord(raw)) throw corrupt('is not a JSON object');
  const oldLayout = OLD_LAYOUTS.includes(raw.version);
  if (!oldLayout && raw.version !== FORMAT_VERSION) {
    throw corrupt(
      typeof raw.version === 'number' && raw.version > FORMAT_VERSION
        ? `has version ${raw.version}, newer than this program understands`
        : `has no supported "version" (expected ${FORMAT_VERSION}, or ${OLD_LAYOUTS.join(' or ')})`,
    );
  }
  let applications: [string, unknown][];
  if (raw.version === 1) {
    applications = [[CLI_CLIENT_NAME, raw]];
  } else {
    // Version 1's sections in a later file would be dropped by the next write: refuse them.
    if (raw.clients !== undefined || raw.grants !== undefined) throw corrupt('has "clients" or "grants" outside "applications"');
    const filed = raw.applications ?? {};
    if (!isRecord(filed)) throw corrupt('has an "applications" that is not an object');
    applications = Object.entries(filed);
  }
  const data = emptyCredentials();
  for (const [application, sections] of applications) {
    const where = raw.version === 1 ? '' : `applications[${JSON.stringify(application)}].`;
    // (Only a later version's entry can fail this: version 1's sections are the document itself.)
    if (!isRecord(sections)) throw corrupt(`has an entry applications[${JSON.stringify(application)}] that is not an object`);
    for (const [section, check] of [
      ['clients', isFiledClient],
      ['grants', oldLayout ? isOldFiledGrant : isFiledGrant],
    ] as const) {
      const entries = sections[section] ?? {};
      if (!isRecord(entries)) throw corrupt(`has a "${where}${section}" that is not an object`);
      for (const [key, value] of Object.entries(entries)) {
        if (!check(value)) throw corrupt(`has an invalid entry ${where}${section}[${JSON.stringify(key)}]`);
      }
    }
    // Keys are recomputed from the values, so a hand-edited key cannot make two entries for one grant.
    for (const client of Object.values(sections.clients ?? {}) as Filed<StoredClient>[]) putClient(data, { ...client, application });
    for (const grant of Object.values(sections.grants ?? {}) as OldFiled[]) {
      const identity = oldLayout ? oldGrantIdentity(grant, data.clients.get(clientKey(application, grant.issuer))) : (grant as Filed<StoredGrant>).identity;
      if (identity) putGrant(data, { ...grant, identity, application });
    }
  }
  return data;
}

/** The key a grant is filed under: for a person to read; the reader recomputes it from the values. */
function filedGrantKey(grant: Filed<StoredGrant>): string {
  const identity = grant.identity.kind === 'person' ? 'person' : `${grant.identity.grantType} ${grant.identity.clientId}`;
  return `${grant.serverUrl} ${grant.issuer} ${identity}`;
}

/** Always the current version: a file in an old layout is upgraded by the first change written to it. */
function formatCredentials(data: Credentials): string {
  const applications = new Map<string, { clients: [string, Filed<StoredClient>][]; grants: [string, Filed<StoredGrant>][] }>();
  const filedUnder = (application: string) => {
    let sections = applications.get(application);
    if (!sections) applications.set(application, (sections = { clients: [], grants: [] }));
    return sections;
  };
  for (const { application, ...client } of data.clients.values()) filedUnder(application).clients.push([client.issuer, client]);
  for (const { application, ...grant } of data.grants.values()) filedUnder(application).grants.push([filedGrantKey(grant), grant]);
  // Object.fromEntries defines own properties, so even an application or issuer named "__proto__" round-trips.
  const document = {
    version: FORMAT_VERSION,
    applications: Object.fromEntries(
      [...applications].map(([application, { clients, grants }]) => [
        application,
        { clients: Object.fromEntries(clients), grants: Object.fromEntries(grants) },
      ]),
    ),
  };
  return `${JSON.stringify(document, null, 2)}
`;
}

// ---------------------------------------------------------------------------------------------
// The file: the store

export interface FileTokenStoreOptions {
  /** How long to wait for a lock another process holds (default 30 s). */
  lockTimeoutMs?: number;
  /** How long an untouched lock is honoured before it counts as abandoned (default 60 s). */
  lockStaleMs?: number;
  /**
   * The user id that must own the file and its folder: default the current user's. Where the
   * system has no user ids (Windows), ownership and mode are not checked.
   */
  ownerUid?: number;
}

/**
 * One JSON file `{ version: 3, applications: { [application]: { clients: { [issuer]: … },
 * grants: { ["<serverUrl> <issuer> <identity>"]: { identity, … } } } } }` (the old layouts, version
 * 2 without identities and version 1 without applications either, are read and upgraded by the
 * first write; see oldGrantIdentity), mode 0600 in a 0700 folder, both the user's
 * own and written by nobody else: a link, another owner, or group or others' write access is
 * refused (private-file.ts), a mode that only lets others read is tightened. Every method re-reads the file; every change is a read-modify-write
 * under `<path>.lock` and lands with an atomic rename, so concurrent saves of different keys from
 * different processes are all kept. Named locks are `<path>.<sha256(name), 16 hex>.lock`.
 */
export class FileTokenStore implements TokenStore {
  readonly path: string;
  private readonly timing: LockTiming;
  private readonly uid: number | undefined;

  constructor(filePath: string = defaultCredentialsPath(), options: FileTokenStoreOptions = {}) {
    this.path = path.resolve(filePath);
    this.timing = { timeoutMs: options.lockTimeoutMs ?? 30_000, staleMs: options.lockStaleMs ?? 60_000 };
    this.uid = options.ownerUid ?? currentUid();
  }

  async getClient(application: string, issuer: string): Promise<StoredClient | undefined> {
    return (await this.read()).clients.get(clientKey(application, issuer));
  }

  async saveClient(client: StoredClient): Promise<void> {
    await this.update((data) => {
      putClient(data, copy(client));
      return true;
    });
  }

  async deleteClient(application: string, issuer: string): Promise<void> {
    await this.update((data) => data.clients.delete(clientKey(application, issuer)));
  }

  async getGrant(which: GrantSelector): Promise<StoredGrant | undefined> {
    return findGrant(await this.read(), which);
  }

  async saveGrant(grant: StoredGrant): Promise<void> {
    await this.update((data) => {
      putGrant(data, copy(grant));
      return true;
    });
  }

  async deleteGrant(which: GrantSelector): Promise<number> {
    let removed = 0;
    await this.update((data) => (removed = removeGrants(data, which)) > 0);
    return removed;
  }

  async listGrants(): Promise<StoredGrant[]> {
    return [...(await this.read()).grants.values()];
  }

  /** Not re-entrant: calling withLock(name) inside withLock(name) waits forever. The store's own methods may be called inside. */
  async withLock<T>(name: string, action: () => Promise<T>): Promise<T> {
    const digest = createHash('sha256').update(name, 'utf8').digest('hex').slice(0, 16);
    // The lock files live in the folder too: nothing is created in a folder that is not private.
    await this.checkFolder();
    return withLockFile(`${this.path}.${digest}.lock`, this.timing, action);
  }

  private checkFolder(): Promise<void> {
    return checkFolder(path.dirname(this.path), this.uid);
  }

  /** The read-modify-write of every change; `change` says whether anything changed (nothing to write otherwise). */
  private async update(change: (data: Credentials) => boolean): Promise<void> {
    await this.checkFolder();
    // `<path>.lock` cannot collide with a named lock, which always has a digest before ".lock".
    return withLockFile(`${this.path}.lock`, this.timing, async () => {
      const data = await this.read();
      if (change(data)) await this.write(data);
    });
  }

  private async read(): Promise<Credentials> {
    await this.checkFolder();
    const handle = await openPrivateFile(this.path, this.uid);
    if (!handle) return emptyCredentials();
    let text: string;
    try {
      text = await handle.readFile('utf8');
      // A file made or copied with a mode that lets others read it is tightened the first time it is read.
      if (process.platform !== 'win32' && ((await handle.stat()).mode & 0o077) !== 0) {
        await handle.chmod(0o600).catch(() => undefined);
      }
    } catch (error) {
      throw new ClientError('storage_failed', `cannot read the credentials file ${this.path}: ${reason(error)}`, { cause: error });
    } finally {
      await handle.close();
    }
    return parseCredentials(text, this.path);
  }

  /**
   * Writes a 0600 temp file next to the target and renames it over: readers see the old file or
   * the new, never half. Only ever after read() has checked the file and its folder.
   */
  private async write(data: Credentials): Promise<void> {
    const target = this.path;
    const temp = `${target}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      const handle = await fs.open(temp, 'wx', 0o600);
      try {
        await handle.writeFile(formatCredentials(data), 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fs.rename(temp, target);
    } catch (error) {
      await fs.rm(temp, { force: true }).catch(() => undefined);
      throw new ClientError('storage_failed', `cannot write the credentials file ${this.path}: ${reason(error)}`, { cause: error });
    }
  }
}
