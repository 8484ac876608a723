import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, constants, createReadStream, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';

const CHILD = resolve(import.meta.dirname, '../helpers/stderr-lines-child.ts');

/** The child's report; rejects if it exits without one. Its stderr is left unread: that is what is tested. */
async function reportOf(child: ChildProcess): Promise<unknown> {
  const exited = once(child, 'exit').then(([code]) => {
    throw new Error(`the child exited (${code}) without a report`);
  });
  const [line] = (await Promise.race([once(createInterface({ input: child.stdout! }), 'line'), exited])) as [string];
  return JSON.parse(line);
}

/** Every line the child wrote, in order, each whole. */
function assertLines(text: string, count: number, size: number): void {
  const lines = text.split('\n').slice(0, -1);
  assert.equal(lines.length, count);
  lines.forEach((line, i) => assert.equal(line, `${String(i).padStart(6, '0')} ${'x'.repeat(size)}`, `line ${i}`));
}

describe("serve's audit lines on stderr, written by its own thread", { timeout: 300_000 }, () => {
  it('go straight to a file on stderr, whole and in order', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'ca-stderr-')), 'stderr');
    const fd = openSync(path, 'w');
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, '500', '1000'], { stdio: ['ignore', 'pipe', fd] });
    closeSync(fd);
    assert.deepEqual(await reportOf(child), { direct: true });
    assert.equal((await once(child, 'exit'))[0], 0);
    assertLines(readFileSync(path, 'utf8'), 500, 1000);
  });

  // What refuses: a shell's pipe (a FIFO here), and the socket a service manager's journal reads.
  for (const kind of ['pipe', 'socket'] as const) {
    it(`go through process.stderr once a full non-blocking ${kind} refuses one, none lost, cut or out of order`, async () => {
      // 300 kB that nobody reads yet: a pipe holds 64 kB. Lines longer than a pipe takes in one write
      // (4 kB), so the refused one may be partly written: the rest must follow, not the line again.
      let fifo = '';
      let writeEnd: number | undefined;
      if (kind === 'pipe') {
        fifo = join(mkdtempSync(join(tmpdir(), 'ca-stderr-')), 'fifo');
        execFileSync('mkfifo', [fifo]);
        // Read and write: opening a FIFO for writing alone would wait for a reader.
        writeEnd = openSync(fifo, constants.O_RDWR);
      }
      const child = spawn(process.execPath, ['--import', 'tsx', CHILD, '30', '10000'], { stdio: ['ignore', 'pipe', writeEnd ?? 'pipe'] });
      try {
        assert.deepEqual(await reportOf(child), { direct: false }, 'the full pipe refused a direct write');
        const reader = kind === 'pipe' ? createReadStream(fifo) : child.stderr!;
        if (writeEnd !== undefined) {
          await once(reader, 'open');
          closeSync(writeEnd);
          writeEnd = undefined;
        }
        const chunks: Buffer[] = [];
        reader.on('data', (chunk: Buffer) => chunks.push(chunk));
        await once(reader, 'end');
        assertLines(Buffer.concat(chunks).toString(), 30, 10_000);
      } finally {
        // A child stuck on a full pipe after a failed assertion would otherwise outlive the test.
        child.kill();
        if (writeEnd !== undefined) closeSync(writeEnd);
      }
    });
  }
});
