/**
 * Locks on the credentials file: within this process a queue per lock, across processes a lock
 * file created exclusively, refreshed while held and taken over once its holder is gone or hangs.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ClientError } from './errors.js';

/**
 * Runs actions one after another per key: each waits for the promise of the one before. The
 * chain's links only ever resolve, so one failed action does not fail those queued behind it.
 */
export class Serialiser {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, action: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const done = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => done);
    this.tails.set(key, tail);
    await previous;
    try {
      return await action();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}

export interface LockTiming {
  timeoutMs: number;
  staleMs: number;
}

/** The errno code of a failed file operation (shared with the store, which reads and writes the file). */
export const errorCode = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | undefined)?.code;
export const reason = (error: unknown): string => (error instanceof Error ? error.message : String(error));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function makeFolder(folder: string): Promise<void> {
  try {
    await fs.mkdir(folder, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new ClientError('storage_failed', `cannot create the credentials folder ${folder}: ${reason(error)}`, { cause: error });
  }
}

/** True unless the process is known to be gone (EPERM means it exists but belongs to someone else). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errorCode(error) !== 'ESRCH';
  }
}

/** Creates the lock file if nobody holds it; false when it already exists. */
async function tryCreateLock(lockPath: string, content: string, folderMade = false): Promise<boolean> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(lockPath, 'wx', 0o600);
  } catch (error) {
    const code = errorCode(error);
    // Windows answers EPERM for a file that is being deleted: as good as "held" for a moment.
    if (code === 'EEXIST' || (code === 'EPERM' && process.platform === 'win32')) return false;
    if (code === 'ENOENT' && !folderMade) {
      await makeFolder(path.dirname(lockPath));
      return tryCreateLock(lockPath, content, true);
    }
    throw new ClientError('storage_failed', `cannot create the lock file ${lockPath}: ${reason(error)}`, { cause: error });
  }
  try {
    await handle.writeFile(content, 'utf8');
  } catch (error) {
    await handle.close().catch(() => undefined);
    await fs.rm(lockPath, { force: true }).catch(() => undefined);
    throw new ClientError('storage_failed', `cannot write the lock file ${lockPath}: ${reason(error)}`, { cause: error });
  }
  await handle.close();
  return true;
}

/**
 * A lock is stale when its holder is gone (same host, pid not alive) or when it has not been
 * touched for `staleMs`: holders refresh the file's mtime while they work, so only a holder that
 * hangs or died on another host ages out. An unreadable content (a holder caught between creating
 * and writing the file) is judged by age only.
 */
function isStale(text: string, mtimeMs: number, staleMs: number): boolean {
  if (Date.now() - mtimeMs > staleMs) return true;
  let owner: { pid?: unknown; host?: unknown };
  try {
    // Anything but an object (null, a number) simply has no pid.
    owner = JSON.parse(text) ?? {};
  } catch {
    return false;
  }
  const { pid, host } = owner;
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return false;
  const sameHost = host === undefined || host === os.hostname();
  return sameHost && !isAlive(pid);
}

/**
 * The lock file's content and age, never through a link (O_NOFOLLOW where the system has it):
 * a lock is only ever a file we or another context-auth process created. Undefined when absent.
 */
async function readLock(lockPath: string): Promise<{ text: string; mtimeMs: number } | undefined> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(lockPath, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    if (errorCode(error) === 'ELOOP') {
      throw new ClientError('storage_failed', `the lock file ${lockPath} is a symbolic link, which context-auth never creates; delete it`, { cause: error });
    }
    throw error;
  }
  try {
    const [text, { mtimeMs }] = await Promise.all([handle.readFile('utf8'), handle.stat()]);
    return { text, mtimeMs };
  } finally {
    await handle.close();
  }
}

/** Removes the lock if stale; true when the caller should try to create it again at once. */
async function removeIfStale(lockPath: string, staleMs: number): Promise<boolean> {
  let lock: { text: string; mtimeMs: number } | undefined;
  try {
    lock = await readLock(lockPath);
  } catch (error) {
    if (error instanceof ClientError) throw error;
    return false;
  }
  if (!lock) return true;
  const { text, mtimeMs } = lock;
  if (!isStale(text, mtimeMs, staleMs)) return false;
  // Another waiter may have removed the stale lock and taken a fresh one meanwhile: remove only
  // the file that was judged (a small window remains; lock files cannot close it entirely).
  const again = (await readLock(lockPath).catch(() => undefined))?.text;
  if (again !== text) return again === undefined;
  await fs.rm(lockPath, { force: true }).catch(() => undefined);
  return true;
}

async function acquireLock(lockPath: string, timing: LockTiming): Promise<string> {
  const deadline = Date.now() + timing.timeoutMs;
  for (;;) {
    const content = JSON.stringify({ pid: process.pid, host: os.hostname(), at: Date.now(), id: randomBytes(8).toString('hex') });
    if (await tryCreateLock(lockPath, content)) return content;
    if (await removeIfStale(lockPath, timing.staleMs)) continue;
    if (Date.now() >= deadline) {
      throw new ClientError(
        'storage_failed',
        `timed out waiting for the credentials lock ${lockPath} after ${Math.round(timing.timeoutMs / 1000)} s; ` +
          'another context-auth process holds it — if none is running, delete that file',
      );
    }
    await sleep(25 + Math.random() * 25);
  }
}

/** Removes the lock only if it is still ours (a stale-lock takeover may have replaced it). */
async function releaseLock(lockPath: string, content: string): Promise<void> {
  const current = (await readLock(lockPath).catch(() => undefined))?.text;
  if (current === content) await fs.rm(lockPath, { force: true }).catch(() => undefined);
}

// Module-wide, keyed by lock path: two FileTokenStore objects on one file share one queue.
const inProcess = new Serialiser();

/** Holds `lockPath` (in this process through the queue, across processes through the file) while `action` runs. */
export function withLockFile<T>(lockPath: string, timing: LockTiming, action: () => Promise<T>): Promise<T> {
  return inProcess.run(lockPath, async () => {
    const content = await acquireLock(lockPath, timing);
    const heartbeat = setInterval(
      () => {
        const now = new Date();
        fs.lutimes(lockPath, now, now).catch(() => undefined);
      },
      Math.max(10, timing.staleMs / 3),
    );
    heartbeat.unref();
    try {
      return await action();
    } finally {
      clearInterval(heartbeat);
      await releaseLock(lockPath, content);
    }
  });
}
