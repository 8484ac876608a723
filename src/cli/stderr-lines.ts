/**
 * The audit lines `serve` prints on stderr. On serve's own thread (serve-thread.ts), a worker's
 * `process.stderr` hands every write to the main thread as a message, which wakes that thread to
 * write it: with a line per token request, much of serve's time went there. The thread writes
 * each line to file descriptor 2 itself instead, whole. Should a write fail (a pipe left
 * non-blocking by the main thread and full, a closed descriptor), the rest of that line and every
 * later one go through `process.stderr`, which waits for the pipe and reports its errors as
 * before: no line is lost, none comes out of order.
 */
import { writeSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

export interface StderrLines {
  write(line: string): void;
  /** False once a direct write failed and the lines go through process.stderr. */
  readonly direct: boolean;
}

export function stderrLines(onMainThread = isMainThread): StderrLines {
  let direct = !onMainThread;
  return {
    get direct() {
      return direct;
    },
    write(line) {
      if (!direct) {
        process.stderr.write(line);
        return;
      }
      const bytes = Buffer.from(line);
      let written = 0;
      try {
        while (written < bytes.length) {
          const count = writeSync(2, bytes, written);
          if (count === 0) throw new Error('nothing written');
          written += count;
        }
      } catch {
        direct = false;
        process.stderr.write(bytes.subarray(written));
      }
    },
  };
}
