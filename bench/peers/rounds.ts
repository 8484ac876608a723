/**
 * How the peers benches time an operation, shared by bench/refresh-peers.ts and
 * bench/flows-peers.ts: every chain in a closed loop for a fixed time, the server's own CPU asked
 * over IPC before and after; one warm-up per server, then rounds over all servers with the order
 * rotated each round, each measurement after a short settling run, reported as medians so machine
 * noise falls on all alike.
 */
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { chains } from './child.js';
import type { Running } from './process.js';

/** Pinning needs taskset and two cores: the servers on core 0, this load generator on core 1. */
export function pinLoadGenerator(): boolean {
  if (availableParallelism() < 2) return false;
  try {
    execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export interface Sample {
  opsPerSecond: number;
  /** Server CPU per operation, ms. */
  cpuMs: number;
  /** CPU of the database server's backends per operation, ms (PostgreSQL on this machine only). */
  dbCpuMs?: number;
  /** This load generator's CPU over the wall time: near 1, it, not the server, was the limit. */
  loadBusy: number;
}

/** A server's medians over the rounds, and each round's sample in order (for ratios within a round). */
export interface Summary extends Sample {
  rounds: Sample[];
}

/** One operation of one chain; it must throw on any answer but the expected one. */
export type Operation = (server: Running, chain: number) => Promise<void>;

/** All chains in closed loops for `seconds`. */
export async function measure(server: Running, seconds: number, operation: Operation, concurrency = chains()): Promise<Sample> {
  const before = await server.usage();
  const loadBefore = process.cpuUsage();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, chain) => {
      while (performance.now() < deadline) {
        await operation(server, chain);
        done++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const load = process.cpuUsage(loadBefore);
  const after = await server.usage();
  const dbCpuMs = after.dbCpu !== undefined && before.dbCpu !== undefined ? (after.dbCpu - before.dbCpu) / 1000 / done : undefined;
  return { opsPerSecond: done / elapsed, cpuMs: (after.cpu - before.cpu) / 1000 / done, dbCpuMs, loadBusy: (load.user + load.system) / 1e6 / elapsed };
}

export const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * The median over the rounds of `a`'s CPU per operation over `b`'s in the same round: steadier
 * than the ratio of the two medians when the machine's speed drifts from round to round, most of
 * all for two servers measured one after the other. Also the lowest and highest.
 */
export function cpuRatio(a: Summary, b: Summary): { median: number; low: number; high: number } {
  const ratios = a.rounds.map((sample, i) => sample.cpuMs / b.rounds[i]!.cpuMs);
  return { median: median(ratios), low: Math.min(...ratios), high: Math.max(...ratios) };
}

export interface Rounds {
  rounds: number;
  seconds: number;
  warmupSeconds: number;
  /**
   * Each measurement preceded by this much of the same load, unmeasured: a server that sat idle
   * while the others were measured has shrunk its young generation, cooled its caches and ended
   * its store's checkpointer thread, and would pay for them again inside a short round.
   */
  settleSeconds?: number;
  /** Operations in flight at once; BENCH_CHAINS by default. */
  concurrency?: number;
  /**
   * Called before each window of `server`, outside it: what the load generator can make ahead
   * (signatures) is made here, so that its work does not run beside the server's in the window.
   */
  prepare?: (server: Running, seconds: number) => void;
}

/** Warm every server, then `rounds` rounds over all of them, the order rotated each round; medians per server. */
export async function interleaved(
  servers: Running[],
  operation: Operation,
  { rounds, seconds, warmupSeconds, settleSeconds = 0, concurrency, prepare }: Rounds,
): Promise<Map<string, Summary>> {
  for (const server of servers) {
    prepare?.(server, warmupSeconds);
    await measure(server, warmupSeconds, operation, concurrency);
  }
  const samples = new Map(servers.map((s) => [s.name, [] as Sample[]]));
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < servers.length; i++) {
      const server = servers[(i + round) % servers.length]!;
      if (settleSeconds > 0) {
        prepare?.(server, settleSeconds);
        await measure(server, settleSeconds, operation, concurrency);
      }
      prepare?.(server, seconds);
      samples.get(server.name)!.push(await measure(server, seconds, operation, concurrency));
    }
  }
  return new Map(
    [...samples].map(([name, list]) => {
      const db = list.map((s) => s.dbCpuMs).filter((v) => v !== undefined);
      const loadBusy = median(list.map((s) => s.loadBusy));
      if (loadBusy > 0.85)
        console.warn(`warning: ${name}: the load generator was ${(loadBusy * 100).toFixed(0)}% busy; its figures may be the generator's limit`);
      return [
        name,
        {
          opsPerSecond: median(list.map((s) => s.opsPerSecond)),
          cpuMs: median(list.map((s) => s.cpuMs)),
          dbCpuMs: db.length > 0 ? median(db) : undefined,
          loadBusy,
          rounds: list,
        },
      ];
    }),
  );
}

export const mb = (bytes: number): string => (bytes / 1024 / 1024).toFixed(0);
