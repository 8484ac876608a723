/**
 * Run as a child process by test/cli/stderr-lines.test.ts: its main thread starts a worker (this
 * file again), as `serve` runs on one, which writes `count` numbered lines of `size` bytes through
 * stderrLines and tells the main thread whether they all went straight to the descriptor; the
 * main thread prints that on stdout (or the worker's error, if it failed).
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { stderrLines } from '../../src/cli/stderr-lines.js';

if (isMainThread) {
  // Serve's main thread writes to stderr too (its warnings): made now, a pipe on stderr turns non-blocking.
  process.stderr.write('');
  const [count, size] = process.argv.slice(2).map(Number);
  // A worker does not take the parent's --import hooks: it registers tsx itself, then runs this file.
  const run = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(import.meta.url)}); })`;
  const worker = new Worker(run, { eval: true, workerData: { count, size } });
  worker.on('message', (message: unknown) => process.stdout.write(`${JSON.stringify(message)}\n`));
  // Reported on stdout too: the test reads stderr only after a report.
  worker.on('error', (error) => process.stdout.write(`${JSON.stringify({ error: String(error) })}\n`));
} else {
  const { count, size } = workerData as { count: number; size: number };
  const lines = stderrLines();
  for (let i = 0; i < count; i++) lines.write(`${String(i).padStart(6, '0')} ${'x'.repeat(size)}\n`);
  parentPort!.postMessage({ direct: lines.direct });
}
