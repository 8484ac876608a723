/**
 * npm run bench (second table): what the store costs, side by side in one run. For the embedded
 * SQLite store, for PostgreSQL, and for two replicas sharing PostgreSQL (requests alternate
 * between them, as a load balancer would), each served by the real `context-auth serve`:
 *   - refresh grants/s: concurrent clients each rotating their own refresh token in a loop;
 *   - cold flows/s: a new client registering (DCR), signing in (scrypt), consenting and
 *     redeeming its code, start to finish.
 * Beside refresh grants/s, the CPU each grant cost: of the serve processes (every thread, all
 * replicas, from /proc) and, when PostgreSQL runs on this machine, of its backends; and from the
 * first, the grants one core of serve answers in a second.
 */
import pg from 'pg';
import { Browser, pkcePair, signInAndConsent } from '../test/helpers/harness.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from '../test/e2e/serve-process.js';
import { backendsCpuSeconds, cpuSecondsBetween } from './postgres-backends-cpu.js';
import { processCpuSeconds } from './process-cpu.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const REFRESH_WORKERS = 16;
const FLOW_WORKERS = 4;
const USER = { username: 'bench', password: 'bench password 123' };
const CALLBACK = 'http://127.0.0.1:9/callback';

/**
 * Every request here comes from 127.0.0.1, far beyond the per-address defaults: the limits are
 * raised out of reach rather than turned off, so their cost is part of what is measured.
 */
const RAISED_LIMITS = ['register', 'token', 'sign-in'].flatMap((name) => ['--rate-limit', `${name}=1000000/second,burst=1000000`]);

interface Started {
  servers: RunningServer[];
  /** A connection to the database, to read its backends' CPU (PostgreSQL only). */
  monitor?: pg.Client;
  stop(): Promise<void>;
}

interface Backend {
  name: string;
  start(): Promise<Started>;
}

/** serve's processes and PostgreSQL's backends, read before and after the refresh loop. */
async function cpuReading({ servers, monitor }: Started): Promise<{ serve: number; database?: Map<number, number> }> {
  const serve = servers.reduce((sum, server) => sum + processCpuSeconds(server.process.pid!), 0);
  return { serve, database: monitor ? await backendsCpuSeconds(monitor) : undefined };
}

async function startOnPostgres(replicas: number): Promise<Started> {
  const db = await startPostgres();
  const { servers } = await serveReplicas(replicas, ['--store', db.connectionString]);
  const monitor = new pg.Client({ connectionString: db.connectionString });
  await monitor.connect();
  return {
    servers,
    monitor,
    stop: async () => {
      await monitor.end();
      await Promise.all(servers.map((s) => s.stop()));
      await db.stop();
    },
  };
}

async function serveReplicas(count: number, storeArgs: string[]): Promise<{ servers: RunningServer[] }> {
  const added = await cli(['users', 'add', USER.username, ...storeArgs], `${USER.password}\n`);
  if (added.code !== 0) throw new Error(added.stderr);
  const ports = await Promise.all(Array.from({ length: count }, () => freePort()));
  // Replicas share one issuer: it is the name tokens carry, whichever replica answered.
  const issuer = `http://127.0.0.1:${ports[0]}`;
  const servers = await Promise.all(ports.map((port) => startServe(['--port', String(port), '--issuer', issuer, '--quiet', ...RAISED_LIMITS, ...storeArgs])));
  return { servers };
}

const backends: Backend[] = [
  {
    name: 'SQLite',
    async start() {
      const { servers } = await serveReplicas(1, ['--data', tempDataFolder()]);
      return { servers, stop: async () => void (await Promise.all(servers.map((s) => s.stop()))) };
    },
  },
  { name: 'PostgreSQL', start: () => startOnPostgres(1) },
  { name: 'PostgreSQL, 2 replicas', start: () => startOnPostgres(2) },
];

/** Round-robin over the replicas' real addresses (the issuer names only the first). */
function balancer(servers: RunningServer[]): () => string {
  const origins = servers.map((s) => `http://127.0.0.1:${/Listening on http:\/\/[^:]+:(\d+)/.exec(s.output())![1]}`);
  let next = 0;
  return () => origins[next++ % origins.length]!;
}

async function post(origin: string, path: string, values: Record<string, string>): Promise<Response> {
  return fetch(`${origin}${path}`, { method: 'POST', body: new URLSearchParams(values), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
}

/** One whole first-time flow: register, sign in, consent, redeem. Returns the refresh token and client. */
async function coldFlow(origin: () => string, issuer: string): Promise<{ clientId: string; refreshToken: string }> {
  const at = origin();
  const registration = await fetch(`${at}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'bench',
      redirect_uris: [CALLBACK],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
    }),
  });
  const { client_id: clientId } = (await registration.json()) as { client_id: string };
  // The browser keeps to one replica (cookies are the session); a load balancer would not care.
  const browser = new Browser((path, init) => fetch(new URL(path, at), init));
  const { verifier, challenge } = pkcePair();
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: CALLBACK,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 's',
    resource: `${issuer}/mcp`,
  });
  const callback = await signInAndConsent(browser, await browser.fetch(`/authorize?${query}`), USER, 'approve', at);
  const code = callback.searchParams.get('code');
  if (!code) throw new Error(`no code: ${callback}`);
  const tokens = await post(origin(), '/token', {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    redirect_uri: CALLBACK,
    client_id: clientId,
    resource: `${issuer}/mcp`,
  });
  if (tokens.status !== 200) throw new Error(`token: ${tokens.status} ${await tokens.text()}`);
  return { clientId, refreshToken: ((await tokens.json()) as { refresh_token: string }).refresh_token };
}

async function forDuration(workers: number, work: (worker: number) => Promise<void>): Promise<number> {
  const deadline = Date.now() + SECONDS * 1000;
  const counts = await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      let done = 0;
      while (Date.now() < deadline) {
        await work(worker);
        done++;
      }
      return done;
    }),
  );
  return counts.reduce((a, b) => a + b, 0) / SECONDS;
}

const rows: { name: string; refresh: number; serveCpuMs: number; databaseCpuMs?: number; flows: number }[] = [];
for (const backend of backends) {
  const started = await backend.start();
  const { servers, stop } = started;
  try {
    const origin = balancer(servers);
    const issuer = servers[0]!.issuer;
    // Grants for the refresh loop, made before the clock starts, one sign-in after another: the
    // sign-in back-off holds sign-ins still being checked as possible failures, so that many at
    // once from one address for one account would be told to wait.
    const grants: Awaited<ReturnType<typeof coldFlow>>[] = [];
    for (let i = 0; i < REFRESH_WORKERS; i++) grants.push(await coldFlow(origin, issuer));
    const before = await cpuReading(started);
    const refresh = await forDuration(REFRESH_WORKERS, async (worker) => {
      const grant = grants[worker]!;
      const response = await post(origin(), '/token', { grant_type: 'refresh_token', refresh_token: grant.refreshToken, client_id: grant.clientId });
      if (response.status !== 200) throw new Error(`refresh: ${response.status} ${await response.text()}`);
      grant.refreshToken = ((await response.json()) as { refresh_token: string }).refresh_token;
    });
    const after = await cpuReading(started);
    const answered = refresh * SECONDS;
    const serveCpuMs = ((after.serve - before.serve) * 1000) / answered;
    const databaseCpuMs = before.database && after.database ? (cpuSecondsBetween(before.database, after.database) * 1000) / answered : undefined;
    const flows = await forDuration(FLOW_WORKERS, async () => void (await coldFlow(origin, issuer)));
    rows.push({ name: backend.name, refresh, serveCpuMs, databaseCpuMs, flows });
  } finally {
    await stop();
  }
}

const base = rows[0]!;
console.log(
  `\nStore throughput through \`context-auth serve\` (${SECONDS}s each; ${REFRESH_WORKERS} refreshing clients, ${FLOW_WORKERS} cold flows at a time)\n`,
);
console.log(
  '| store | refresh grants/s | vs SQLite | serve CPU per grant (ms) | grants/s per core of serve | PostgreSQL CPU per grant (ms) | cold flows/s | vs SQLite |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const row of rows) {
  const database = row.databaseCpuMs === undefined ? '' : row.databaseCpuMs.toFixed(3);
  console.log(
    `| ${row.name} | ${row.refresh.toFixed(0)} | ${(row.refresh / base.refresh).toFixed(2)} | ${row.serveCpuMs.toFixed(3)} | ${(1000 / row.serveCpuMs).toFixed(0)} | ${database} | ${row.flows.toFixed(1)} | ${(row.flows / base.flows).toFixed(2)} |`,
  );
}
process.exit(0);
