/**
 * The credentials file holds refresh tokens, and what it says decides where they are sent: it must
 * be the user's own, and so must its folder. Anyone else able to write either could plant a
 * registration or a grant, or swap the file for a link to one of theirs, so the store refuses a
 * link, a file or folder that belongs to another account, and one that group or others may write.
 * Where the system has no user ids (Windows), only links are refused.
 */
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import { ClientError } from './errors.js';
import { errorCode, reason } from './file-lock.js';

/** The account that must own the credentials: the current user, or undefined where there are no user ids. */
export const currentUid = (): number | undefined => process.getuid?.();

// Only POSIX systems have O_NOFOLLOW (and mode bits that mean anything).
const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;
const posix = process.platform !== 'win32';

const quote = (file: string): string => `'${file.replace(/'/g, `'\\''`)}'`;
const octal = (mode: number): string => `0${(mode & 0o777).toString(8)}`;

type Kind = 'file' | 'folder';

const refused = (kind: Kind, where: string, why: string): ClientError => new ClientError('storage_failed', `the credentials ${kind} ${where} ${why}`);

function linkRefused(kind: Kind, where: string): ClientError {
  return refused(
    kind,
    where,
    'is a symbolic link, which context-auth does not follow for its credentials; replace the link with the real ' +
      `${kind}, or point CONTEXT_AUTH_CREDENTIALS (or --credentials) at a file in a folder of your own`,
  );
}

/** Refuses what another account owns or may write; `stat` is of the thing itself, never of a link to it. */
function checkOwnerAndMode(kind: Kind, where: string, stat: { uid: number; mode: number }, uid: number | undefined): void {
  if (!posix || uid === undefined) return;
  if (stat.uid !== uid) {
    throw refused(
      kind,
      where,
      `belongs to another account (uid ${stat.uid}; you are uid ${uid}), so someone else could have written it; ` +
        (kind === 'file' ? 'delete it and sign in again' : `use a folder of your own, or take this one over with \`sudo chown ${uid} ${quote(where)}\``),
    );
  }
  if ((stat.mode & 0o022) !== 0) {
    const fix = kind === 'file' ? `chmod 600 ${quote(where)}` : `chmod 700 ${quote(where)}`;
    const risk = kind === 'file' ? 'changed it' : 'replaced the file in it';
    throw refused(
      kind,
      where,
      `may be written by group or others (mode ${octal(stat.mode)}), so someone else could have ${risk}; check it, then run \`${fix}\``,
    );
  }
}

/** Checks the folder the credentials live in; a folder that does not exist yet is fine (it is made 0700). */
export async function checkFolder(folder: string, uid: number | undefined): Promise<void> {
  let stat;
  try {
    stat = await fs.lstat(folder);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return;
    throw new ClientError('storage_failed', `cannot check the credentials folder ${folder}: ${reason(error)}`, { cause: error });
  }
  if (stat.isSymbolicLink()) throw linkRefused('folder', folder);
  if (!stat.isDirectory()) throw refused('folder', folder, 'is not a folder');
  checkOwnerAndMode('folder', folder, stat, uid);
}

/**
 * Opens the credentials file for reading, after the same checks on the file itself (made on the
 * opened file, so nothing can be swapped in between); undefined when there is no file yet.
 */
export async function openPrivateFile(file: string, uid: number | undefined): Promise<fs.FileHandle | undefined> {
  let handle: fs.FileHandle;
  try {
    // lstat first for the clearer message, and so that a FIFO is never opened (that would block):
    // O_NOFOLLOW and the checks on the opened file are what make sure.
    const first = await fs.lstat(file);
    if (first.isSymbolicLink()) throw linkRefused('file', file);
    if (!first.isFile()) throw refused('file', file, 'is not a regular file');
    handle = await fs.open(file, constants.O_RDONLY | NO_FOLLOW);
  } catch (error) {
    if (error instanceof ClientError) throw error;
    const code = errorCode(error);
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw linkRefused('file', file);
    throw new ClientError('storage_failed', `cannot read the credentials file ${file}: ${reason(error)}`, { cause: error });
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw refused('file', file, 'is not a regular file');
    checkOwnerAndMode('file', file, stat, uid);
    return handle;
  } catch (error) {
    await handle.close();
    if (error instanceof ClientError) throw error;
    throw new ClientError('storage_failed', `cannot read the credentials file ${file}: ${reason(error)}`, { cause: error });
  }
}
