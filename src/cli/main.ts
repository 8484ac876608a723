#!/usr/bin/env node
/**
 * The `context-auth` bin. Small on purpose: `serve` runs the CLI on a thread of its own with a heap
 * sized for a server (serve-thread.ts), and this thread then only waits for it.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMainThread, workerData } from 'node:worker_threads';
import { heapSizedByOperator, runOnServeThread } from './serve-thread.js';

const argv = isMainThread ? process.argv.slice(2) : (workerData as { argv: string[] }).argv;
if (isMainThread && argv[0] === 'serve' && !heapSizedByOperator(process.execArgv, process.env.NODE_OPTIONS)) {
  runOnServeThread(new URL(import.meta.url), argv);
} else {
  // commands.js beside this file (commands.ts when run from source).
  const { runCli } = (await import(`./commands${extname(fileURLToPath(import.meta.url))}`)) as typeof import('./commands.js');
  runCli(argv);
}
