/**
 * The stderr of a path's stdio processes, as lines for the operator's log: never the protocol's
 * stream (that is stdout), and bounded, so a process that writes without end cannot flood the log
 * nor grow a buffer. Each line is cut at MAX_LINE_CHARS; control characters are shown as U+FFFD,
 * so a line cannot move the terminal's cursor or forge the start of another line; the path's
 * processes together get at most LINES_PER_WINDOW lines per WINDOW_MS, and the lines dropped past
 * it are counted and told with the next line that passes, or when the process ends.
 */
import type { Stream } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

export const MAX_LINE_CHARS = 1000;
export const LINES_PER_WINDOW = 100;
export const WINDOW_MS = 60_000;

// Tab is kept; every other C0 and C1 control, and DEL, is replaced.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;

export class StderrLines {
  private windowStart = -Infinity;
  private inWindow = 0;
  private dropped = 0;

  /** `write` gets each line that passes, without its newline; `pid` names the process it came from (null: the path's). */
  constructor(
    private readonly write: (line: string, pid: number | null) => void,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Reads one process's stream to its end, line by line. */
  read(stream: Stream, pid: () => number | null): void {
    const decoder = new StringDecoder('utf8');
    let pending = '';
    // Past the cap, the rest of a line is skipped up to its newline rather than kept.
    let skipping = false;
    stream.on('data', (chunk: Buffer | string) => {
      pending += typeof chunk === 'string' ? chunk : decoder.write(chunk);
      let newline: number;
      while ((newline = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (!skipping) this.line(line, pid());
        skipping = false;
      }
      if (pending.length > MAX_LINE_CHARS) {
        if (!skipping) this.line(pending, pid());
        skipping = true;
        pending = '';
      }
    });
    stream.on('end', () => {
      pending += decoder.end();
      if (pending !== '' && !skipping) this.line(pending, pid());
      this.tellDropped();
    });
  }

  private line(text: string, pid: number | null): void {
    const now = this.nowMs();
    if (now - this.windowStart >= WINDOW_MS) {
      this.windowStart = now;
      this.inWindow = 0;
    }
    if (this.inWindow >= LINES_PER_WINDOW) {
      this.dropped++;
      return;
    }
    this.tellDropped();
    this.inWindow++;
    const cut = text.endsWith('\r') ? text.slice(0, -1) : text;
    this.write(cut.length > MAX_LINE_CHARS ? `${clean(cut.slice(0, MAX_LINE_CHARS))}…` : clean(cut), pid);
  }

  /** The count covers the path's processes together: it names none. */
  private tellDropped(): void {
    if (this.dropped === 0) return;
    this.write(`(${this.dropped} more line${this.dropped === 1 ? '' : 's'} of stderr dropped: more than ${LINES_PER_WINDOW} a minute)`, null);
    this.dropped = 0;
  }
}

function clean(text: string): string {
  return text.replace(CONTROL, '\uFFFD');
}
