/**
 * npm run bench (machine grants table): the client_credentials grant as machines ask for it, on
 * our server and on oidc-provider, in one run, under the same load: with a client secret
 * (client_secret_basic) and with a client assertion (private_key_jwt, ES256, a fresh jti per
 * request); on ours also the jwt-bearer grant, with a workload token and with an ID-JAG (this
 * process is their issuer); and the floor (node:http answering a fixed body). Each server is its own process
 * pinned to core 0, the load generator on core 1; rounds interleave the rows (order rotated each
 * round), medians, server CPU per grant asked over IPC, as in bench/refresh-peers.ts
 * (bench/README.md says how each peer is set up).
 *
 * The load generator signs every assertion inside the measured window, with a fresh jti: what a
 * real client does. Signing costs it far less than verifying costs a server; the table's last
 * column shows how busy the load generator was, and the signing cost is measured and printed.
 *
 *   node --import tsx bench/machine-grants.ts [--quick]   (--quick: 3 rounds of 2 s)
 */
import { closeConnections, startPeer, stopPeer, type Peer, type Running } from './peers/process.js';
import { chains } from './peers/child.js';
import {
  clientCredentialsWithAssertion,
  clientCredentialsWithSecret,
  jwtBearerWithIdJag,
  jwtBearerWithWorkloadToken,
  machineGrant,
  machineKey,
  startAssertionIssuer,
  type RequestBuilder,
} from './peers/machine.js';
import { interleaved, pinLoadGenerator, type Operation, type Sample } from './peers/rounds.js';

const QUICK = process.argv.includes('--quick');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 3 : 5));
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 2 : 5));
const WARMUP_SECONDS = QUICK ? 1 : 2;
const POSTGRES = Boolean(process.env.CONTEXT_AUTH_BENCH_POSTGRES_URL || process.env.CONTEXT_AUTH_TEST_POSTGRES_URL);
const PIN = pinLoadGenerator();
const key = machineKey();
const withSecret = clientCredentialsWithSecret;
const withAssertion = clientCredentialsWithAssertion(key);
// The issuer of the jwt-bearer rows' assertions, in this process: fetched by our servers once, before the measurement.
const assertionIssuer = await startAssertionIssuer(key);
const ourEnv = { ...key.env, BENCH_ASSERTION_ISSUER: assertionIssuer.issuer };
const withWorkloadToken = jwtBearerWithWorkloadToken(key, assertionIssuer.issuer);
const withIdJag = jwtBearerWithIdJag(key, assertionIssuer.issuer);

// --- Servers (one process each) --------------------------------------------------------------
const OURS_SQLITE = 'context-auth (SQLite)';
const OURS_POSTGRES = 'context-auth (PostgreSQL)';
const OIDC = 'oidc-provider';
/** Not a peer: node:http answering a fixed body (bench/peers/floor.ts), what every Node server pays per request. */
const FLOOR = 'node:http alone (fixed answer: the floor)';
const peers: Peer[] = [
  { name: OURS_SQLITE, script: 'ours.ts', args: ['sqlite'], env: ourEnv },
  ...(POSTGRES ? [{ name: OURS_POSTGRES, script: 'ours.ts', args: ['postgres'], env: ourEnv }] : []),
  { name: OIDC, script: 'oidc.ts', env: key.env },
  { name: FLOOR, script: 'floor.ts', env: key.env },
];

// --- Rows (a server and how each request to it is built) -------------------------------------
interface Row {
  name: string;
  server: string;
  request: RequestBuilder;
}
const row = (server: string, how: string, request: RequestBuilder): Row => ({ name: `${server}, ${how}`, server, request });
const BASELINE = row(OURS_SQLITE, 'client_secret_basic', withSecret);
const rows: Row[] = [
  BASELINE,
  row(OURS_SQLITE, 'private_key_jwt', withAssertion),
  // The jwt-bearer grant (RFC 7523 §2.1); oidc-provider has no such grant, so ours only.
  row(OURS_SQLITE, 'jwt-bearer, workload token', withWorkloadToken),
  row(OURS_SQLITE, 'jwt-bearer, ID-JAG + secret', withIdJag),
  ...(POSTGRES
    ? [
        row(OURS_POSTGRES, 'client_secret_basic', withSecret),
        row(OURS_POSTGRES, 'private_key_jwt', withAssertion),
        row(OURS_POSTGRES, 'jwt-bearer, workload token', withWorkloadToken),
        row(OURS_POSTGRES, 'jwt-bearer, ID-JAG + secret', withIdJag),
      ]
    : []),
  row(OIDC, 'client_secret_basic', withSecret),
  row(OIDC, 'private_key_jwt', withAssertion),
  { name: FLOOR, server: FLOOR, request: withSecret },
];

const begun = Date.now();
console.log(
  `\nMachine grants (client_credentials, jwt-bearer) side by side: ${ROUNDS} rounds × ${SECONDS}s, ${chains()} clients at once, medians; ${PIN ? 'servers on core 0, load on core 1' : 'not pinned (no taskset or one core)'}`,
);

const running: Running[] = [];
try {
  for (const peer of peers) running.push(await startPeer(peer, PIN));
  const byName = new Map(running.map((server) => [server.name, server]));
  // A row is its server under the row's name, so the rounds time and report each row apart.
  const views: Running[] = rows.map((r) => ({ ...byName.get(r.server)!, name: r.name }));
  const builders = new Map(rows.map((r) => [r.name, r.request]));
  const grant: Operation = async (view) => void (await machineGrant(view, builders.get(view.name)!));

  // What signing an assertion costs the load generator (it signs one per private_key_jwt request).
  const signings = 2000;
  const signStarted = process.cpuUsage();
  for (let i = 0; i < signings; i++) withAssertion(views[0]!);
  const signMicros = (({ user, system }) => (user + system) / signings)(process.cpuUsage(signStarted));

  const results = await interleaved(views, grant, { rounds: ROUNDS, seconds: SECONDS, warmupSeconds: WARMUP_SECONDS });
  const base = results.get(BASELINE.name)!;
  const µs = (r: Sample) => `${(r.cpuMs * 1000).toFixed(0)}${r.dbCpuMs !== undefined ? ` + ${(r.dbCpuMs * 1000).toFixed(0)} in PostgreSQL` : ''}`;
  console.log(`\n| row | grants/s | server CPU/grant (µs) | vs ${BASELINE.name} (grants/s) | CPU vs ${BASELINE.name} | load generator busy |`);
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const { name } of rows) {
    const r = results.get(name)!;
    console.log(
      `| ${[name, r.opsPerSecond.toFixed(0), µs(r), (r.opsPerSecond / base.opsPerSecond).toFixed(2), (r.cpuMs / base.cpuMs).toFixed(2), `${(r.loadBusy * 100).toFixed(0)}%`].join(' | ')} |`,
    );
  }

  const get = (server: string, how: string) => results.get(`${server}, ${how}`);
  const oidcAssertion = get(OIDC, 'private_key_jwt')!;
  console.log('\nprivate_key_jwt against the same server with a secret (server CPU per grant added by the assertion):');
  for (const server of [OURS_SQLITE, OURS_POSTGRES, OIDC]) {
    const secret = get(server, 'client_secret_basic');
    const assertion = get(server, 'private_key_jwt');
    if (secret && assertion)
      console.log(
        `- ${server}: +${((assertion.cpuMs - secret.cpuMs) * 1000).toFixed(0)} µs, ${(assertion.opsPerSecond / secret.opsPerSecond).toFixed(2)} × the grants/s`,
      );
  }
  console.log("\nOur private_key_jwt against oidc-provider's:");
  for (const server of [OURS_SQLITE, OURS_POSTGRES]) {
    const ours = get(server, 'private_key_jwt');
    if (ours)
      console.log(
        `- ${server}: ${(ours.opsPerSecond / oidcAssertion.opsPerSecond).toFixed(2)} × the grants/s, ${(ours.cpuMs / oidcAssertion.cpuMs).toFixed(2)} × the server CPU per grant`,
      );
  }
  const floor = results.get(FLOOR)!;
  console.log(
    `\nThe floor costs ${(floor.cpuMs * 1000).toFixed(0)} µs per request. The load generator signs each assertion during the measurement: ${signMicros.toFixed(0)} µs of its CPU per assertion.`,
  );
  console.log('Ratios of grants/s above 1 are faster than the baseline; CPU ratios below 1 are cheaper.');
} finally {
  await Promise.all(running.splice(0).map(stopPeer));
  await assertionIssuer.close();
}
closeConnections();
console.log(`\n(${((Date.now() - begun) / 1000).toFixed(0)} s)`);
