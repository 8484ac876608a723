/**
 * Tokens a platform leaves in a file for a program to present: a Kubernetes projected service
 * account token, a cloud workload identity token, an ID token another tool keeps fresh. The
 * platform rotates the file (Kubernetes swaps a symbolic link to a new file), so it is read again
 * whenever it changed. Whoever can write the file chooses the identity the program asserts, so a
 * file that another account owns (root aside: platforms write these as root) or that group or
 * others may write is refused.
 */
import type { Stats } from 'node:fs';
import fs from 'node:fs/promises';
import type { AssertionContext } from './jwt-bearer.js';
import { ClientError } from './errors.js';
import { errorCode, reason } from './file-lock.js';
import { currentUid } from './private-file.js';

const posix = process.platform !== 'win32';

function unavailable(message: string, cause?: unknown): ClientError {
  return new ClientError('assertion_unavailable', message, cause === undefined ? undefined : { cause });
}

/** Refuses a file someone other than this account (or root) could have written. */
function checkWriters(file: string, what: string, stat: Stats, uid: number | undefined): void {
  if (!stat.isFile()) throw unavailable(`the ${what} ${file} is not a regular file`);
  if (!posix || uid === undefined) return;
  if (stat.uid !== uid && stat.uid !== 0) {
    throw unavailable(`the ${what} ${file} belongs to another account (uid ${stat.uid}; you are uid ${uid}), so someone else chooses what it says`);
  }
  if ((stat.mode & 0o022) !== 0) {
    throw unavailable(`the ${what} ${file} may be written by group or others (mode 0${(stat.mode & 0o777).toString(8)}); run \`chmod go-w\` on it`);
  }
}

/** The file's text, trimmed, after the checks above (made on the opened file, so nothing is swapped in between). */
export async function readProtectedText(file: string, what: string, uid = currentUid()): Promise<{ text: string; stat: Stats }> {
  let handle: fs.FileHandle;
  try {
    // stat first, so that a FIFO is never opened (that would block); links are followed on purpose.
    if (!(await fs.stat(file)).isFile()) throw unavailable(`the ${what} ${file} is not a regular file`);
    handle = await fs.open(file, 'r');
  } catch (error) {
    if (error instanceof ClientError) throw error;
    if (errorCode(error) === 'ENOENT') throw unavailable(`the ${what} ${file} does not exist`, error);
    throw unavailable(`cannot read the ${what} ${file}: ${reason(error)}`, error);
  }
  try {
    const stat = await handle.stat();
    checkWriters(file, what, stat, uid);
    const text = (await handle.readFile('utf8')).trim();
    if (!text) throw unavailable(`the ${what} ${file} is empty`);
    return { text, stat };
  } catch (error) {
    if (error instanceof ClientError) throw error;
    throw unavailable(`cannot read the ${what} ${file}: ${reason(error)}`, error);
  } finally {
    await handle.close();
  }
}

/**
 * The token in `file`, read again only when it changed (another file behind the path, or the same
 * one rewritten), refused when someone else could have written it. `what` names it in errors.
 */
export function tokenFile(file: string, what = 'token file'): () => Promise<string> {
  let last: { key: string; text: string } | undefined;
  return async () => {
    // The checks run on every call: a file that became writable by others is refused even unchanged.
    let stat: Stats;
    try {
      stat = await fs.stat(file);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') throw unavailable(`the ${what} ${file} does not exist`, error);
      throw unavailable(`cannot read the ${what} ${file}: ${reason(error)}`, error);
    }
    checkWriters(file, what, stat, currentUid());
    const key = `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}`;
    if (last?.key === key) return last.text;
    const read = await readProtectedText(file, what);
    last = { key: `${read.stat.dev}:${read.stat.ino}:${read.stat.size}:${read.stat.mtimeMs}`, text: read.text };
    return read.text;
  };
}

/**
 * An `assertion` for ContextClient's jwt-bearer grant: the workload identity token in `file`
 * (for example /var/run/secrets/tokens/mcp-token, a Kubernetes projected service account token
 * whose audience is the authorization server), read again whenever the platform rotates it.
 */
export function workloadTokenFile(file: string): (context: AssertionContext) => Promise<string> {
  const read = tokenFile(file, 'workload token file');
  return () => read();
}
