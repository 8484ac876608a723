/**
 * A stdio child's stderr as log lines: split at newlines whatever the chunks, cut at 1000
 * characters, control characters shown as U+FFFD, and at most 100 lines a minute for a path's
 * children together, the rest counted and told. The clock is the test's.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { LINES_PER_WINDOW, MAX_LINE_CHARS, StderrLines, WINDOW_MS } from '../../src/gateway/stderr-lines.js';

function reading(clock = { ms: 0 }) {
  const lines: [string, number | null][] = [];
  const lineLog = new StderrLines(
    (line, pid) => lines.push([line, pid]),
    () => clock.ms,
  );
  const stream = new PassThrough();
  lineLog.read(stream, () => 42);
  return { lines, lineLog, stream, clock };
}

describe('stdio stderr lines', () => {
  it('splits at newlines across chunks, drops a trailing \\r, replaces control characters, and says the last line at the end', async () => {
    const { lines, stream } = reading();
    stream.write('first li');
    stream.write('ne\r\nsecond\x1b[31m red\x07 \tand a tab\n');
    stream.write(Buffer.from('caf\xc3', 'latin1'));
    stream.write(Buffer.from('\xa9\nno newline', 'latin1'));
    stream.end();
    await once(stream, 'end');
    assert.deepEqual(lines, [
      ['first line', 42],
      ['second\uFFFD[31m red\uFFFD \tand a tab', 42],
      ['café', 42],
      ['no newline', 42],
    ]);
  });

  it('cuts a line at its cap and skips the rest of it, keeping nothing of it in memory', () => {
    const { lines, stream } = reading();
    stream.write('x'.repeat(MAX_LINE_CHARS + 10));
    stream.write('y'.repeat(5 * MAX_LINE_CHARS));
    stream.write('z\nafter\n');
    stream.end();
    assert.deepEqual(lines, [
      [`${'x'.repeat(MAX_LINE_CHARS)}…`, 42],
      ['after', 42],
    ]);
  });

  it('passes 100 lines a minute for all the children of a path; the rest are counted, and told with the next line or at the end', async () => {
    const clock = { ms: 0 };
    const { lines, lineLog, stream } = reading(clock);
    const other = new PassThrough();
    lineLog.read(other, () => 43);
    for (let i = 0; i < LINES_PER_WINDOW; i++) (i % 2 === 0 ? stream : other).write(`line ${i}\n`);
    stream.write('one too many\n');
    other.write('two too many\n');
    assert.equal(lines.length, LINES_PER_WINDOW);
    clock.ms += WINDOW_MS;
    stream.write('a new minute\n');
    assert.deepEqual(lines.slice(LINES_PER_WINDOW), [
      ['(2 more lines of stderr dropped: more than 100 a minute)', null],
      ['a new minute', 42],
    ]);
    // This minute has had one line: 99 more pass, and the last is dropped.
    for (let i = 0; i < LINES_PER_WINDOW; i++) stream.write('flood\n');
    assert.equal(lines.filter(([line]) => line === 'flood').length, LINES_PER_WINDOW - 1);
    other.end();
    await once(other, 'end');
    assert.deepEqual(lines.at(-1), ['(1 more line of stderr dropped: more than 100 a minute)', null]);
  });
});
