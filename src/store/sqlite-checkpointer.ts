/**
 * WAL checkpoints on a worker thread, for the length of a long write job (a sweep).
 *
 * A checkpoint copies the WAL back into the database file and syncs it: 10–35 ms here, and
 * SQLite runs it inside whichever commit crosses the WAL's size limit — on the event loop, since
 * better-sqlite3 is synchronous. A sweep of a million rows writes enough WAL for a hundred of
 * them, each one a stall for the requests in flight. So while the job runs, the store's own
 * connection stops checkpointing and a second connection, on its own thread, checkpoints the WAL
 * passively (never waiting for, nor blocking, the store's reads and writes) several times a second.
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
  await new Promise<void>((resolve, reject) => {
    worker.once('online', resolve);
    worker.once('error', reject);
  });
  return {
    stop: async () => {
      const stopped = new Promise<void>((resolve) => {
        worker.once('message', () => resolve());
        worker.once('exit', () => resolve());
        worker.once('error', () => resolve());
      });
      worker.postMessage('stop');
      await stopped;
      await worker.terminate();
    },
  };
}
