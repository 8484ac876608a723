/**
 * The CPU time PostgreSQL's backends serving one database have used, read from /proc (so only
 * when the server runs on this machine): what a bench charges the database for the work it was
 * given, beside the CPU of the process that gave it.
 */
import type pg from 'pg';
import { processCpuSeconds } from './process-cpu.js';

/** CPU seconds so far of each backend of `monitor`'s database (its own left out), by pid; undefined when one cannot be read here. */
export async function backendsCpuSeconds(monitor: pg.Client): Promise<Map<number, number> | undefined> {
  const { rows } = await monitor.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
  const seconds = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      seconds.set(pid, processCpuSeconds(pid));
    } catch {
      return undefined; // not on this machine (or gone): no figure rather than a wrong one
    }
  }
  return seconds;
}

/** CPU seconds the backends used between two readings; a backend that started in between counts from zero. */
export function cpuSecondsBetween(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}
