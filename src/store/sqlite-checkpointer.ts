/**
 * WAL checkpoints on a worker thread, while the store writes a lot: during a long write job (a
 * sweep), and while requests keep committing.
 *
 * A checkpoint copies the WAL back into the database file and syncs it, tens of milliseconds, and
 * SQLite runs it inside whichever commit crosses the WAL's size limit — on the event loop, since
 * better-sqlite3 is synchronous. A sweep of a million rows writes enough WAL for a hundred of
 * them, and a busy server one every few hundred commits, each one a stall for the requests in
 * flight. So meanwhile the store's own connection stops checkpointing and a second connection, on
 * its own thread, checkpoints the WAL passively (never waiting for, nor blocking, the store's
 * reads and writes) several times a second.
 *
 * Under writes that never pause, the worker never catches up with the last frame, and SQLite
 * starts the WAL afresh only when it has: so the store's connection still checkpoints, at a WAL
 * ten times the usual size (OFF_LOOP_WAL_PAGES, about 40 MB). By then the worker has copied nearly
 * every frame, so that checkpoint is short, a tenth as frequent, and keeps the WAL from growing
 * without bound (it did: 330 MB in 12 s of reconnect flows with the connection's own turned off).
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** How often the worker checkpoints while a job runs. */
const CHECKPOINT_INTERVAL_MS = 100;

// Plain CommonJS, evaluated in the worker: a file of its own would need a build step of its own.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
const checkpoint = () => { try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {} };
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.once('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.postMessage('stopped');
});
`;

const driverPath = createRequire(import.meta.url).resolve('better-sqlite3');

export interface Checkpointer {
  /** One last checkpoint, then the worker ends. */
  stop(): Promise<void>;
}

export async function startCheckpointer(file: string): Promise<Checkpointer> {
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver: driverPath, file, intervalMs: CHECKPOINT_INTERVAL_MS } });
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  // A worker that fails later (its connection cannot open, it runs out of memory) just ends: the
  // store's own connection checkpoints as before. Unheard, its error would end the whole process.
  worker.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    worker.once('online', resolve);
    worker.once('error', reject);
  });
  // Never what keeps a process alive (a program that does not close its store exits as before;
  // a checkpoint cut short is safe, the WAL is still there).
  worker.unref();
  return {
    stop: async () => {
      const stopped = new Promise<void>((resolve) => worker.once('message', () => resolve()));
      worker.postMessage('stop');
      await Promise.race([stopped, exited]);
      await worker.terminate();
    },
  };
}

/** The store connection's `wal_autocheckpoint` while the worker checkpoints: the WAL's bound. */
export const OFF_LOOP_WAL_PAGES = 10_000;
/** Writing statements in a row (no idle gap between them) after which checkpoints leave the event loop. */
export const WRITE_BURST = 100;
/** Without a write for this long, the worker ends and commits checkpoint as SQLite does by default. */
export const IDLE_MS = 10_000;

/** Milliseconds, and a repeating check; tests give one they advance themselves. */
export interface CheckpointClock {
  now(): number;
  /** Calls `tick` every `ms` until the returned function is called. */
  every(ms: number, tick: () => void): () => void;
}

const SYSTEM_CLOCK: CheckpointClock = {
  now: () => performance.now(),
  every: (ms, tick) => {
    // Unref'd: the check never keeps a process alive.
    const timer = setInterval(tick, ms).unref();
    return () => clearInterval(timer);
  },
};

/**
 * When the checkpointer runs: while anyone holds it (a long upkeep job), and from the
 * WRITE_BURST-th writing statement in a row until the writes stop for IDLE_MS. A store that writes now
 * and then (the CLI, a quiet server) never starts a thread. `autocheckpoint(pages)` sets the store
 * connection's `wal_autocheckpoint` (see apply()); `pages` again after.
 */
export class OffLoopCheckpoints {
  private worker: Promise<Checkpointer | undefined> | undefined;
  /** The worker is running (not only starting). */
  private started = false;
  private holds = 0;
  private writes = 0;
  private lastWrite = -Infinity;
  /** Stops the check for the writes' end; set while it runs. */
  private stopIdleCheck: (() => void) | undefined;
  private closed = false;

  private readonly idleMs: number;
  private readonly start: (file: string) => Promise<Checkpointer>;
  private readonly clock: CheckpointClock;

  constructor(
    private readonly file: string,
    private readonly autocheckpoint: (pages: number) => void,
    private readonly pages: number,
    options: { idleMs?: number; start?: (file: string) => Promise<Checkpointer>; clock?: CheckpointClock } = {},
  ) {
    this.idleMs = options.idleMs ?? IDLE_MS;
    this.start = options.start ?? startCheckpointer;
    this.clock = options.clock ?? SYSTEM_CLOCK;
  }

  /** A writing statement ran (cheap: called for every one). */
  wrote(): void {
    const now = this.clock.now();
    if (now - this.lastWrite >= this.idleMs) this.writes = 0;
    this.lastWrite = now;
    if (++this.writes < WRITE_BURST || this.worker || this.closed) return;
    this.begin();
    // Checks now and then whether the writes stopped.
    this.stopIdleCheck = this.clock.every(this.idleMs / 2, () => {
      if (this.clock.now() - this.lastWrite < this.idleMs) return;
      this.stopIdleCheck?.();
      this.stopIdleCheck = undefined;
      if (this.holds === 0) void this.end();
    });
  }

  /** Keeps the checkpointer running until the returned function is called. */
  hold(): () => Promise<void> {
    this.holds++;
    if (!this.worker && !this.closed) this.begin();
    else if (this.started) this.apply();
    return async () => {
      if (--this.holds > 0) return;
      if (!this.stopIdleCheck) await this.end();
      else if (this.started) this.apply();
    };
  }

  /** Ends the worker for good (before the store's connection closes). */
  async close(): Promise<void> {
    this.closed = true;
    this.stopIdleCheck?.();
    this.stopIdleCheck = undefined;
    await this.end();
  }

  private begin(): void {
    const worker: Promise<Checkpointer | undefined> = this.start(this.file).then(
      (started) => {
        if (this.worker === worker) {
          this.started = true;
          this.apply();
        }
        return started;
      },
      () => undefined, // no worker: commits go on checkpointing as they always did
    );
    this.worker = worker;
  }

  private async end(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.started = false;
    const started = await worker;
    if (!started) return;
    // Before the worker's last checkpoint: a commit from now on checkpoints as it would have
    // (unless another worker started meanwhile).
    if (!this.worker) this.apply();
    await started.stop();
  }

  /**
   * The store connection's own limit: the usual one without a worker; none while upkeep holds it
   * (a sweep's WAL is bounded by the sweep, and its commits must not stall); OFF_LOOP_WAL_PAGES
   * while requests alone keep writing.
   */
  private apply(): void {
    if (!this.closed) this.autocheckpoint(!this.started ? this.pages : this.holds > 0 ? 0 : OFF_LOOP_WAL_PAGES);
  }
}
