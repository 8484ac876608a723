/**
 * npm run bench (peers table): the refresh_token grant on our server and on three peers, in one
 * run, under the same load: the MCP TypeScript SDK's auth router with its demo in-memory provider,
 * oidc-provider with JWT access tokens, and Better Auth with its MCP plugin on SQLite
 * (bench/README.md says how each is configured). Each
 * server is its own process pinned to core 0, the load generator is pinned to core 1; every
 * request rotates its chain's refresh token and the next request uses the new one, with
 * BENCH_CHAINS chains at once. Rounds interleave the servers (order rotated each round) so machine
 * noise falls on all alike; the tables report medians. Server CPU per grant is the server
 * process's own CPU time (process.cpuUsage, asked over IPC) over the grants it answered.
 *
 * Our server is measured twice in the same rounds: plain refreshes, and refreshes of chains bound
 * to a DPoP key, each with a proof the load generator signs (RFC 9449). And as people run it: the
 * built `context-auth serve` with its defaults, its output to a file (bench/peers/serve.ts), in the
 * same rounds, beside the library served by the bench's own process.
 *
 * Then the bearer guard's CPU per verification (first check of many distinct tokens, and a cache
 * hit). The table by store size is bench/refresh-scaling.ts.
 *
 * For development, `BENCH_ONLY=<regex>` measures only the rows whose name matches, prints their
 * grants/s and CPU (and PostgreSQL / SQLite when both are there) and skips the guard;
 * `BENCH_BASELINE=<another checkout of the repository>` adds that checkout's context-auth rows, on
 * SQLite and PostgreSQL, to the same rounds: a change measured beside the code before it.
 *
 *   node --import tsx bench/refresh-peers.ts [--quick]   (--quick: 3 rounds of 2 s, one guard run)
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { dpopProofSigner, generateDpopKeyPair } from '../src/core/index.js';
import { chains, READY } from './peers/child.js';
import { closeConnections, refresh, startPeer, stopPeer, type Peer, type Running } from './peers/process.js';
import { cpuRatio, interleaved as interleavedOps, mb, median, pinLoadGenerator, type Operation, type Sample, type Summary } from './peers/rounds.js';
import { startServePeer, type RunningServe } from './peers/serve.js';

const QUICK = process.argv.includes('--quick');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 3 : 5));
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 2 : 5));
const WARMUP_SECONDS = QUICK ? 1 : 2;
/** Before each measurement, of the same load (bench/peers/rounds.ts says why). */
const SETTLE_SECONDS = Number(process.env.BENCH_SETTLE_SECONDS ?? 1);
const CHAINS = chains();
const POSTGRES = Boolean(process.env.CONTEXT_AUTH_BENCH_POSTGRES_URL || process.env.CONTEXT_AUTH_TEST_POSTGRES_URL);
const PIN = pinLoadGenerator();
const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
const BASELINE = process.env.BENCH_BASELINE ? resolve(process.env.BENCH_BASELINE) : undefined;
const wanted = (name: string): boolean => !ONLY || ONLY.test(name);

/** Our server on SQLite again, its DPoP-bound chains: each refresh carries a proof the load generator makes for it. */
const DPOP_ROW = 'context-auth (SQLite), refresh with DPoP';
const dpopKey = generateDpopKeyPair();
const dpopSigner = dpopProofSigner(dpopKey);

/**
 * The DPoP row's proofs, made before each of its windows (as many as it can use at the most
 * grants/s any row reaches here), not in it: a P-256 signature in this process, on the other
 * core, slows the server's own signature checks on this machine (its two cores share their
 * arithmetic), which would charge the load generator's work to the server.
 */
const proofs: string[] = [];
const MOST_GRANTS_PER_SECOND = 8_000;
const proofFor = (server: Running): string => proofs.pop() ?? dpopSigner.sign({ method: 'POST', url: server.dpop!.tokenUrl });
const prepare = (server: Running, seconds: number): void => {
  if (server.name !== DPOP_ROW) return;
  // Made now, each with a jti of its own: fresh for the window that follows.
  proofs.length = 0;
  for (let i = 0; i < seconds * MOST_GRANTS_PER_SECOND; i++) proofs.push(dpopSigner.sign({ method: 'POST', url: server.dpop!.tokenUrl }));
};

/** Each request presents its chain's current refresh token and keeps the one it gets back. */
const rotate: Operation = async (server, chain) => {
  const headers: Record<string, string> = server.name === DPOP_ROW ? { dpop: proofFor(server) } : {};
  server.refreshTokens[chain] = await refresh(server, server.refreshTokens[chain]!, headers);
};
const interleaved = (servers: Running[]): Promise<Map<string, Summary>> =>
  interleavedOps(servers, rotate, { rounds: ROUNDS, seconds: SECONDS, warmupSeconds: WARMUP_SECONDS, settleSeconds: SETTLE_SECONDS, prepare });

const begun = Date.now();
console.log(
  `\nRefresh grants side by side: ${ROUNDS} rounds × ${SECONDS}s (each after ${SETTLE_SECONDS}s of the same load, unmeasured), ${CHAINS} chains, medians; ${PIN ? 'servers on core 0, load on core 1' : 'not pinned (no taskset or one core)'}`,
);

// --- Peers ---------------------------------------------------------------------------------
/** Not a peer: node:http answering a fixed body (bench/peers/floor.ts), what every Node server pays per request. */
const FLOOR = 'node:http alone (fixed answer: the floor)';
const BETTER_AUTH = 'Better Auth (MCP plugin, SQLite)';
const peers: Peer[] = [
  { name: 'context-auth (SQLite)', script: 'ours.ts', args: ['sqlite'], env: { BENCH_DPOP_KEY: JSON.stringify(dpopKey) } },
  { name: 'MCP SDK auth router', script: 'sdk.ts' },
  { name: 'oidc-provider', script: 'oidc.ts' },
  { name: BETTER_AUTH, script: 'better-auth.ts' },
  { name: FLOOR, script: 'floor.ts' },
  ...(POSTGRES ? [{ name: 'context-auth (PostgreSQL)', script: 'ours.ts', args: ['postgres'] }] : []),
  ...(BASELINE
    ? [
        { name: 'context-auth (SQLite), baseline', script: resolve(BASELINE, 'bench/peers/ours.ts'), args: ['sqlite'] },
        ...(POSTGRES ? [{ name: 'context-auth (PostgreSQL), baseline', script: resolve(BASELINE, 'bench/peers/ours.ts'), args: ['postgres'] }] : []),
      ]
    : []),
].filter((peer) => wanted(peer.name));
/** The product: `context-auth serve` on SQLite with its defaults. */
const SERVE_ROW = 'context-auth serve (SQLite, as shipped)';
const running: Running[] = [];
let shipped: RunningServe | undefined;
if (ONLY) {
  try {
    for (const peer of peers) running.push(await startPeer(peer, PIN));
    const measured = running.flatMap((server) =>
      server.name === 'context-auth (SQLite)' && wanted(DPOP_ROW)
        ? [server, { ...server, name: DPOP_ROW, refreshTokens: server.dpop!.refreshTokens }]
        : [server],
    );
    const results = await interleaved(measured);
    console.log('\n| server | grants/s | server CPU/grant (ms) |');
    console.log('|---|---:|---:|');
    for (const [name, r] of results)
      console.log(
        `| ${name} | ${r.opsPerSecond.toFixed(0)} | ${r.cpuMs.toFixed(3)}${r.dbCpuMs !== undefined ? ` + ${r.dbCpuMs.toFixed(3)} in PostgreSQL` : ''} |`,
      );
    for (const suffix of ['', ', baseline']) {
      const sqlite = results.get(`context-auth (SQLite)${suffix}`);
      const postgres = results.get(`context-auth (PostgreSQL)${suffix}`);
      if (sqlite && postgres)
        console.log(`\ncontext-auth PostgreSQL / SQLite${suffix}: ${(postgres.opsPerSecond / sqlite.opsPerSecond).toFixed(2)} × the grants/s.`);
    }
  } finally {
    await Promise.all(running.splice(0).map(stopPeer));
    closeConnections();
  }
  console.log(`\n(${((Date.now() - begun) / 1000).toFixed(0)} s)`);
  process.exit(0);
}
try {
  for (const peer of peers) running.push(await startPeer(peer, PIN));
  shipped = await startServePeer(SERVE_ROW, [], CHAINS, PIN);
  // The same server process, measured on its DPoP-bound chains in rounds of their own.
  const ourServer = running.find((server) => server.name === 'context-auth (SQLite)')!;
  const measured = [shipped, ...running, { ...ourServer, name: DPOP_ROW, refreshTokens: ourServer.dpop!.refreshTokens }];
  const results = await interleaved(measured);
  const rss = new Map(await Promise.all(measured.map(async (s) => [s.name, (await s.usage()).rss] as const)));
  const sdk = results.get('MCP SDK auth router')!;
  const oidc = results.get('oidc-provider')!;
  const betterAuth = results.get(BETTER_AUTH)!;
  console.log(
    '\n| server | grants/s | server CPU/grant (ms) | vs SDK (grants/s) | vs oidc-provider (grants/s) | vs Better Auth (grants/s) | CPU vs SDK | CPU vs oidc-provider | CPU vs Better Auth | RSS after (MB) |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const server of measured) {
    const r = results.get(server.name)!;
    const cpu = `${r.cpuMs.toFixed(3)}${r.dbCpuMs !== undefined ? ` + ${r.dbCpuMs.toFixed(3)} in PostgreSQL` : ''}`;
    const row = [
      server.name,
      r.opsPerSecond.toFixed(0),
      cpu,
      (r.opsPerSecond / sdk.opsPerSecond).toFixed(2),
      (r.opsPerSecond / oidc.opsPerSecond).toFixed(2),
      (r.opsPerSecond / betterAuth.opsPerSecond).toFixed(2),
      (r.cpuMs / sdk.cpuMs).toFixed(2),
      (r.cpuMs / oidc.cpuMs).toFixed(2),
      (r.cpuMs / betterAuth.cpuMs).toFixed(2),
      mb(rss.get(server.name)!),
    ];
    console.log(`| ${row.join(' | ')} |`);
  }
  const ours = results.get('context-auth (SQLite)')!;
  const serve = results.get(SERVE_ROW)!;
  const overLibrary = cpuRatio(serve, ours);
  console.log(
    `\ncontext-auth serve as shipped: ${overLibrary.median.toFixed(2)} × the library's CPU per grant (median of the rounds' ratios, ${overLibrary.low.toFixed(2)}–${overLibrary.high.toFixed(2)}; target ≤ 1.10 ×); against the SDK router, ${(serve.opsPerSecond / sdk.opsPerSecond).toFixed(2)} × its grants/s (target ≥ 1.20 ×) at ${(serve.cpuMs / sdk.cpuMs).toFixed(2)} × its CPU per grant (target ≤ 0.85 ×), ${(rss.get(SERVE_ROW)! / rss.get('MCP SDK auth router')!).toFixed(2)} × its RSS (target ≤ 0.60 ×).`,
  );
  const withDpop = results.get(DPOP_ROW)!;
  const ourPostgres = results.get('context-auth (PostgreSQL)');
  const floor = results.get(FLOOR)!;
  const above = (r: Sample) => (r.cpuMs - floor.cpuMs) * 1000;
  console.log(
    `\nServer CPU per grant above the floor (${(floor.cpuMs * 1000).toFixed(0)} µs): context-auth (SQLite) ${above(ours).toFixed(0)} µs, MCP SDK auth router ${above(sdk).toFixed(0)} µs, oidc-provider ${above(oidc).toFixed(0)} µs, Better Auth ${above(betterAuth).toFixed(0)} µs.`,
  );
  console.log(
    `\ncontext-auth (SQLite) refresh with DPoP / without: ${(withDpop.opsPerSecond / ours.opsPerSecond).toFixed(2)} × the grants/s, ${((withDpop.cpuMs - ours.cpuMs) * 1000).toFixed(0)} µs more server CPU per grant (target ≥ 0.70 ×).`,
  );
  if (ourPostgres) console.log(`\ncontext-auth PostgreSQL / SQLite: ${(ourPostgres.opsPerSecond / ours.opsPerSecond).toFixed(2)} × the grants/s.`);
  console.log(
    '\nRatios of grants/s above 1 are faster than the peer; CPU ratios below 1 are cheaper. Targets: SQLite ≥ 1.00 × SDK in grants/s and ≤ 1.00 × its CPU per grant; PostgreSQL ≥ 0.80 × SQLite.',
  );
} finally {
  await Promise.all([...running.splice(0).map(stopPeer), shipped?.stop()]);
}

// --- Bearer guard --------------------------------------------------------------------------
interface GuardResult {
  tokens: number;
  firstMicros: number;
  cachedMicros: number;
  signatureMicros: number;
  rss: number;
}

async function guardRun(tokens: number): Promise<GuardResult> {
  const command = [process.execPath, '--import', 'tsx', resolve(import.meta.dirname, 'peers', 'guard.ts'), String(tokens)];
  const [file, ...args] = PIN ? ['taskset', '-c', '0', ...command] : command;
  const child = spawn(file!, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let line: string | undefined;
  createInterface({ input: child.stdout! }).on('line', (l) => l.startsWith(READY) && (line = l.slice(READY.length)));
  const [code] = (await once(child, 'exit')) as [number];
  if (code !== 0 || !line) throw new Error(`guard bench exited (${code})`);
  return JSON.parse(line) as GuardResult;
}

const runs: GuardResult[] = [];
for (let i = 0; i < (QUICK ? 1 : 3); i++) runs.push(await guardRun(QUICK ? 1000 : 5000));
const first = median(runs.map((r) => r.firstMicros));
const cached = median(runs.map((r) => r.cachedMicros));
const signature = median(runs.map((r) => r.signatureMicros));
console.log(`
Bearer guard (protectedResource + jwtVerifier, in process; ${runs[0]!.tokens} distinct tokens, ${runs.length} run(s), medians)
`);
console.log('| check | CPU µs per verification |');
console.log('|---|---:|');
console.log(`| first verification of a token | ${first.toFixed(0)} |`);
console.log(`| the same token again (cache hit) | ${cached.toFixed(0)} |`);
console.log(`| of a first verification: crypto.verify alone (ES256, OpenSSL) | ${signature.toFixed(0)} |`);
console.log('\nTarget: first verification ≤ 100 µs CPU.');

closeConnections();
console.log(`\n(${((Date.now() - begun) / 1000).toFixed(0)} s)`);
