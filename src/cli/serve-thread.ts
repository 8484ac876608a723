/**
 * `serve` runs on a worker thread whose V8 heap is sized for a server (resourceLimits, a
 * supported Node API), so every way of starting it (`npx context-auth serve`, `node
 * dist/cli/main.js serve`, the Docker image, systemd) gets the same memory.
 *
 * Why: with V8's defaults, a process that may grow its heap to gigabytes lets the old generation
 * grow to about 4 × what is live between two full collections (and the young generation to 2 × 16
 * MB). `serve` keeps little alive (20–30 MB: its data is in the database, every map is capped) but
 * allocates fast, so most of its RSS under load was garbage waiting for the next collection. V8
 * scales that factor down with the heap's limit (about 1.6 × for a 1 GB old generation), and the
 * young generation's size is a limit of its own. Flags could only be given before the process
 * starts (a shebang's `env -S` is not understood by BusyBox nor by `node main.js`); a thread
 * takes its limits when it is created.
 *
 * An operator who sizes the heap with node's own flags (`--max-old-space-size`,
 * `--max-semi-space-size`, on the command line or in NODE_OPTIONS) keeps them: `serve` then runs
 * on the main thread as before.
 */
import { Worker } from 'node:worker_threads';

/** The old generation's limit: far above what serve keeps alive, low enough for V8 to collect often. */
export const SERVE_OLD_GENERATION_MB = 1024;
/** The young generation (V8 splits it into two semi-spaces of a third each, plus large objects). */
export const SERVE_YOUNG_GENERATION_MB = 6;

const HEAP_FLAGS = /(^|\s)--max[-_](old|semi)[-_]space[-_]size\b/;

/** True when the operator gave node a heap size of their own. */
export function heapSizedByOperator(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return execArgv.some((arg) => HEAP_FLAGS.test(arg)) || HEAP_FLAGS.test(nodeOptions ?? '');
}

/** The message the main thread sends the server's thread when the process is told to stop. */
export interface StopMessage {
  stop: NodeJS.Signals;
}

/** The message the main thread sends the server's thread on SIGHUP, to reopen the audit log. */
export interface ReopenMessage {
  reopen: true;
}

/** True when `argv` asks for an audit log file, which SIGHUP reopens; otherwise SIGHUP keeps its default (the process ends). */
export function wantsAuditLog(argv: readonly string[]): boolean {
  return argv.some((arg) => arg === '--audit-log' || arg.startsWith('--audit-log='));
}

/**
 * Runs `entry` (the CLI) with `argv` on a thread with serve's heap limits. The process's stop
 * signals are handed to the thread (signals reach only the main thread), and the process exits
 * with the thread's exit code.
 */
export function runOnServeThread(entry: URL, argv: string[]): void {
  const worker = new Worker(entry, {
    workerData: { argv },
    resourceLimits: { maxOldGenerationSizeMb: SERVE_OLD_GENERATION_MB, maxYoungGenerationSizeMb: SERVE_YOUNG_GENERATION_MB },
  });
  const forward = (signal: NodeJS.Signals) => worker.postMessage({ stop: signal } satisfies StopMessage);
  // Once: a second Ctrl-C while the server drains ends the process at once, as it did before.
  process.once('SIGINT', forward);
  process.once('SIGTERM', forward);
  const reopen = () => worker.postMessage({ reopen: true } satisfies ReopenMessage);
  if (wantsAuditLog(argv)) process.on('SIGHUP', reopen);
  // What escaped the thread: a bug, shown with its stack as node shows an uncaught error, or the heap's limit.
  worker.on('error', (error: Error & { code?: string }) => {
    if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') {
      process.stderr.write(
        `context-auth: serve ran out of memory (its JavaScript heap is limited to ${SERVE_OLD_GENERATION_MB} MB; start node with --max-old-space-size=N to set it)\n`,
      );
    } else console.error(error);
    process.exitCode = 1;
  });
  worker.on('exit', (code) => {
    process.exitCode ||= code;
    process.removeListener('SIGINT', forward);
    process.removeListener('SIGTERM', forward);
    process.removeListener('SIGHUP', reopen);
  });
}
