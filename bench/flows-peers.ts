/**
 * npm run bench (flows table): whole authorization code flows of a client reconnecting for a
 * person who is signed in and whose consent is remembered, on our server and on the peers, in one
 * run, under the same load. One flow = GET /authorize with the person's session cookie (PKCE S256,
 * `resource`), answered by a redirect to the client with a code and no page, then POST /token
 * (authorization_code + code_verifier) answered with an access token and a refresh token. Each
 * server is its own process pinned to core 0 (bench/peers/*.ts with BENCH_FLOWS=1), the load
 * generator on core 1; rounds interleaved, medians, server CPU per flow asked over IPC, as in
 * bench/refresh-peers.ts (bench/README.md says how each peer is set up).
 *
 * Then a first sign-in on our server: no session, so the login page, the password checked with
 * scrypt, the consent already remembered, the code redeemed — bound by password hashing by design.
 *
 *   node --import tsx bench/flows-peers.ts [--quick]   (--quick: 3 rounds of 2 s)
 */
import { hashPassword } from '../src/core/index.js';
import { chains } from './peers/child.js';
import { closeConnections, firstSignIn as signIn, flow, startPeer, stopPeer, type Peer, type Running } from './peers/process.js';
import { interleaved, mb, pinLoadGenerator, type Operation } from './peers/rounds.js';

const QUICK = process.argv.includes('--quick');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 3 : 5));
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 2 : 4));
const WARMUP_SECONDS = QUICK ? 1 : 2;
/** First sign-ins at once: scrypt runs on libuv's 4 worker threads, so more would only queue. */
const SIGN_INS = 4;
const POSTGRES = Boolean(process.env.CONTEXT_AUTH_BENCH_POSTGRES_URL || process.env.CONTEXT_AUTH_TEST_POSTGRES_URL);
const PIN = pinLoadGenerator();
const FLOWS = { BENCH_FLOWS: '1' };
/** scrypt's parameters as every new password hash carries them (`scrypt$N$r$p$salt$key`). */
const [SCRYPT_N, SCRYPT_R, SCRYPT_P] = (await hashPassword('parameters')).split('$').slice(1, 4).map(Number) as [number, number, number];

const reconnect: Operation = async (server, chain) => void (await flow(server, chain));

const firstSignIn: Operation = async (server) => void (await signIn(server));

const begun = Date.now();
console.log(
  `\nFlows of a signed-in person with remembered consent, side by side: ${ROUNDS} rounds × ${SECONDS}s, ${chains()} browsers at once, medians; ${PIN ? 'servers on core 0, load on core 1' : 'not pinned (no taskset or one core)'}`,
);

const BETTER_AUTH = 'Better Auth (MCP plugin, SQLite)';
const peers: Peer[] = [
  { name: 'context-auth (SQLite)', script: 'ours.ts', args: ['sqlite'], env: FLOWS },
  { name: 'MCP SDK auth router (no person: demo approves)', script: 'sdk.ts', env: FLOWS },
  { name: 'oidc-provider', script: 'oidc.ts', env: FLOWS },
  { name: BETTER_AUTH, script: 'better-auth.ts', env: FLOWS },
  ...(POSTGRES ? [{ name: 'context-auth (PostgreSQL)', script: 'ours.ts', args: ['postgres'], env: FLOWS }] : []),
];
const running: Running[] = [];
try {
  for (const peer of peers) running.push(await startPeer(peer, PIN));
  const results = await interleaved(running, reconnect, { rounds: ROUNDS, seconds: SECONDS, warmupSeconds: WARMUP_SECONDS });
  const rss = new Map(await Promise.all(running.map(async (s) => [s.name, (await s.usage()).rss] as const)));
  const oidc = results.get('oidc-provider')!;
  const sdk = results.get(peers[1]!.name)!;
  const betterAuth = results.get(BETTER_AUTH)!;
  console.log(
    '\n| server | flows/s | server CPU/flow (ms) | vs oidc-provider (flows/s) | CPU vs oidc-provider | vs SDK (flows/s) | vs Better Auth (flows/s) | CPU vs Better Auth | RSS after (MB) |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const server of running) {
    const r = results.get(server.name)!;
    const cpu = `${r.cpuMs.toFixed(3)}${r.dbCpuMs !== undefined ? ` + ${r.dbCpuMs.toFixed(3)} in PostgreSQL` : ''}`;
    const row = [
      server.name,
      r.opsPerSecond.toFixed(0),
      cpu,
      (r.opsPerSecond / oidc.opsPerSecond).toFixed(2),
      (r.cpuMs / oidc.cpuMs).toFixed(2),
      (r.opsPerSecond / sdk.opsPerSecond).toFixed(2),
      (r.opsPerSecond / betterAuth.opsPerSecond).toFixed(2),
      (r.cpuMs / betterAuth.cpuMs).toFixed(2),
      mb(rss.get(server.name)!),
    ];
    console.log(`| ${row.join(' | ')} |`);
  }
  console.log("\nTarget: context-auth flows/s ≥ 2.00 × oidc-provider's. The SDK row has no person: its demo authorize approves at once.");

  // --- First sign-in (ours) ------------------------------------------------------------------
  const ours = running[0]!;
  const signIns = await interleaved([ours], firstSignIn, { rounds: QUICK ? 1 : 3, seconds: SECONDS, warmupSeconds: 1, concurrency: SIGN_INS });
  const s = signIns.get(ours.name)!;
  console.log(
    `\nFirst sign-in on our server (SQLite; fresh browser: /authorize → login page → password → remembered consent → code → tokens; ${SIGN_INS} at once)\n`,
  );
  console.log('| flow | flows/s | server CPU/flow (ms) |');
  console.log('|---|---:|---:|');
  console.log(
    `| first sign-in (scrypt N=2^${Math.log2(SCRYPT_N)}, r=${SCRYPT_R}, p=${SCRYPT_P}, ${(128 * SCRYPT_N * SCRYPT_R) / 1024 / 1024} MiB) | ${s.opsPerSecond.toFixed(1)} | ${s.cpuMs.toFixed(1)} |`,
  );
  console.log("\nBound by password hashing by design: the scrypt cost is kept (RFC 7914's interactive-login parameters).");
} finally {
  await Promise.all(running.splice(0).map(stopPeer));
}
closeConnections();
console.log(`\n(${((Date.now() - begun) / 1000).toFixed(0)} s)`);
