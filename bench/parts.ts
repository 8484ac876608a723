/**
 * The parts of `npm run bench` (bench/run.ts), in order: each a script under bench/ run in a
 * process of its own, with its arguments and environment. The whole run is meant to take under ten
 * minutes on a two-core machine, so the side-by-side tables run their short rounds (`--quick`:
 * every peer and every ratio, fewer and shorter rounds) and what takes minutes by design has a
 * script of its own: the 1M-row sweeps (`npm run bench:sweep`), the refresh table by store size up
 * to 1M grants (`npm run bench:scaling`) and 300,000 registrations (`npm run bench:memory`).
 */
export interface Part {
  /** A file in bench/. */
  script: string;
  args: string[];
  env: Record<string, string>;
}

/**
 * `smoke`: one round of each table, to check that every part runs (the figures mean little).
 * A knob already set in `env` (e.g. BENCH_ROUNDS) is left as it is.
 */
export function benchParts({ smoke = false, env = {} }: { smoke?: boolean; env?: NodeJS.ProcessEnv } = {}): Part[] {
  const knobs = (defaults: Record<string, string>): Record<string, string> =>
    Object.fromEntries(Object.entries(defaults).filter(([name]) => env[name] === undefined));
  const rounds: Record<string, string> = smoke ? { BENCH_ROUNDS: '1' } : {};
  return [
    // Three rounds of 2 s of its nine rows instead of the script's five of 3 s.
    { script: 'protected-route.ts', args: [], env: knobs({ BENCH_ROUNDS: smoke ? '1' : '3', BENCH_SECONDS: '2' }) },
    { script: 'dpop-check.ts', args: [], env: knobs(rounds) },
    { script: 'gateway.ts', args: [], env: knobs(rounds) },
    { script: 'storage.ts', args: [], env: knobs({ BENCH_SECONDS: smoke ? '1' : '3' }) },
    { script: 'observability-cost.ts', args: ['--quick'], env: knobs(rounds) },
    { script: 'refresh-peers.ts', args: ['--quick'], env: knobs(rounds) },
    { script: 'flows-peers.ts', args: ['--quick'], env: knobs(rounds) },
    { script: 'machine-grants.ts', args: ['--quick'], env: knobs(rounds) },
    { script: 'memory.ts', args: ['--quick'], env: {} },
  ];
}
