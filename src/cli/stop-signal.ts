/**
 * Calls `stop` when the process is told to stop (SIGINT, SIGTERM). On serve's thread
 * (serve-thread.ts) signals reach only the main thread, which hands them on as a message.
 */
import { isMainThread, parentPort } from 'node:worker_threads';
import type { StopMessage } from './serve-thread.js';

export function onStopSignal(stop: (signal: NodeJS.Signals) => void): void {
  if (isMainThread || !parentPort) {
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    return;
  }
  const port = parentPort;
  const listener = (message: Partial<StopMessage>) => {
    if (!message.stop) return;
    port.off('message', listener);
    stop(message.stop);
  };
  port.on('message', listener);
  // The listening server keeps the thread alive; the port must not once it has stopped.
  port.unref();
}
