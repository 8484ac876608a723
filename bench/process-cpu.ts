/**
 * The CPU time a process has used, read from the outside: user + system of all its threads (a
 * `serve` runs its server in a worker thread), from /proc/<pid>/stat, so a bench can measure a
 * process it did not write, such as the built CLI. Linux only; the clock's ticks are
 * `getconf CLK_TCK` (100 where it cannot be asked), so a window of seconds is read to 1 %.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const TICKS_PER_SECOND = ticksPerSecond();

/** CPU seconds (user + system, every thread) process `pid` has used so far. */
export function processCpuSeconds(pid: number): number {
  // The fields after the command name, which is in parentheses and may hold spaces.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

function ticksPerSecond(): number {
  try {
    const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isInteger(ticks) && ticks > 0 ? ticks : 100;
  } catch {
    return 100;
  }
}
