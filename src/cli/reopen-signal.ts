/**
 * Calls `reopen` on SIGHUP, the signal logrotate's `postrotate` sends to have a log file opened
 * anew. On serve's thread (serve-thread.ts) signals reach only the main thread, which hands
 * SIGHUP on as a message. Returns what stops listening.
 */
import { isMainThread, parentPort } from 'node:worker_threads';
import type { ReopenMessage } from './serve-thread.js';

export function onReopenSignal(reopen: () => void): () => void {
  if (isMainThread || !parentPort) {
    process.on('SIGHUP', reopen);
    return () => process.off('SIGHUP', reopen);
  }
  const port = parentPort;
  const listener = (message: Partial<ReopenMessage>) => {
    if (message.reopen) reopen();
  };
  port.on('message', listener);
  // Listening must not keep the thread alive once the server has stopped.
  port.unref();
  return () => port.off('message', listener);
}
