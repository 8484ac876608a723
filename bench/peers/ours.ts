/**
 * Our authorization server under test: `createAuthorizationServer` on a store named by argv
 * (`sqlite` in a temp file, or `postgres` on a fresh database of the server in
 * CONTEXT_AUTH_BENCH_POSTGRES_URL / CONTEXT_AUTH_TEST_POSTGRES_URL), run by
 * `startAuthorizationServer` on its own Node listener, as `context-auth serve` runs it. First it
 * registers one public client and one grant
 * with a live refresh token per chain, and — for the scaling table — bulk-loads BENCH_GRANTS more
 * live grants (each with a refresh token and an access-token row), untimed. With
 * BENCH_MACHINE_JWK it also registers the machine-grants bench's two client_credentials clients,
 * as an operator would (`context-auth clients add`). With BENCH_DPOP_KEY, more chains whose
 * refresh tokens are bound to that DPoP key.
 *
 *   node --import tsx bench/peers/ours.ts sqlite|postgres
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { registerClient } from '../../src/authorization-server/clients.js';
import { startAuthorizationServer } from '../../src/authorization-server/index.js';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { SESSION_COOKIE } from '../../src/authorization-server/http/cookies.js';
import { hashPassword, hashSecret, JWT_BEARER_GRANT_TYPE, randomToken } from '../../src/core/index.js';
import type { FullStore } from '../../src/store/index.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { startPostgres } from '../../test/helpers/postgres.js';
import { grantWithRefreshToken } from '../seed-grant.js';
import { dpopProofSigner } from '../../src/core/index.js';
import { announce, assertionIssuer, chains, dpopKeyPair, flowsWanted, machineJwk, type FlowSetup, type MachineSetup } from './child.js';

const kind = process.argv[2];
const EXTRA_GRANTS = Number(process.env.BENCH_GRANTS ?? 0);
const DAY = 24 * 3600;
const CLIENT = 'bench-client';
const USER = 'bench-user';
const RESOURCE = 'http://127.0.0.1/mcp';
const REDIRECT_URI = 'http://127.0.0.1:9/cb';
const PASSWORD = 'bench password 123';

interface Opened {
  store: FullStore;
  exec(sql: string): Promise<void>;
  series(n: number): string;
  json(text: string): string;
  close(): Promise<void>;
  /** CPU time (µs) of the database server's backends for this database, when they run on this machine. */
  dbCpu?(): Promise<number | undefined>;
}

async function openSqlite(): Promise<Opened> {
  const folder = mkdtempSync(join(tmpdir(), 'ca-bench-peers-'));
  const file = join(folder, 'context-auth.db');
  const store = openSqliteStore({ path: file });
  return {
    store,
    async exec(sql) {
      const db = new Database(file);
      db.pragma('busy_timeout = 5000');
      db.exec(sql);
      db.close();
    },
    series: (n) => `(WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < ${n}) SELECT i FROM s) AS s`,
    json: (text) => `'${text}'`,
    async close() {
      await store.close();
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

async function openPostgres(): Promise<Opened> {
  process.env.CONTEXT_AUTH_TEST_POSTGRES_URL ??= process.env.CONTEXT_AUTH_BENCH_POSTGRES_URL;
  const database = await startPostgres();
  const store = await openPostgresStore({ connectionString: database.connectionString, statementTimeoutMs: 600_000 });
  // A connection of its own to find the store's backends; its own pid is left out.
  const monitor = new pg.Client({ connectionString: database.connectionString });
  await monitor.connect();
  return {
    store,
    dbCpu: () => backendsCpu(monitor),
    async exec(sql) {
      const client = new pg.Client({ connectionString: database.connectionString });
      await client.connect();
      await client.query(sql);
      await client.query('ANALYZE');
      await client.end();
    },
    series: (n) => `generate_series(0, ${n - 1}) AS s(i)`,
    json: (text) => `CAST('${text}' AS jsonb)`,
    async close() {
      await monitor.end();
      await store.close();
      await database.stop();
    },
  };
}

/** PostgreSQL counts CPU in clock ticks of /proc/<pid>/stat; 100 per second on Linux. */
const TICK_MICROS = 10_000;

async function backendsCpu(monitor: pg.Client): Promise<number | undefined> {
  const { rows } = await monitor.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
  let ticks = 0;
  for (const { pid } of rows) {
    try {
      // Fields 14 and 15 (utime, stime), counted after the command name in parentheses.
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      return undefined; // not on this machine (or gone): no figure rather than a wrong one
    }
  }
  return ticks * TICK_MICROS;
}

const opened = kind === 'postgres' ? await openPostgres() : kind === 'sqlite' ? await openSqlite() : null;
if (!opened) throw new Error('usage: ours.ts sqlite|postgres');
const { store } = opened;
const now = Math.floor(Date.now() / 1000);
await store.createClient({
  clientId: CLIENT,
  clientSecretHash: null,
  tokenEndpointAuthMethod: 'none',
  redirectUris: [REDIRECT_URI],
  grantTypes: ['authorization_code', 'refresh_token'],
  responseTypes: ['code'],
  clientName: 'bench',
  scope: null,
  metadata: {},
  canIntrospect: false,
  registeredBy: 'admin',
  createdAt: now,
  lastUsedAt: null,
});
// A password only for the flows bench's first sign-in: hashing it costs a startup the refresh bench need not pay.
await store.createUser({ id: USER, username: 'bench', passwordHash: flowsWanted() ? await hashPassword(PASSWORD) : null, createdAt: now });

if (EXTRA_GRANTS > 0) {
  // Live rows, as a busy server holds them: grants with an unexpired refresh token and access token each.
  const scope = opened.json('["mcp:tools"]');
  const rows = opened.series(EXTRA_GRANTS);
  await opened.exec(`
    INSERT INTO grants (id, client_id, user_id, scope, resource, auth_time, created_at, access_expires_at)
      SELECT 'stored-' || i, '${CLIENT}', '${USER}', ${scope}, '${RESOURCE}', ${now}, ${now}, ${now + 3600} FROM ${rows};
    INSERT INTO refresh_tokens (token_hash, grant_id, client_id, scope, created_at, expires_at)
      SELECT 'stored-rt-' || i, 'stored-' || i, '${CLIENT}', ${scope}, ${now}, ${now + 30 * DAY} FROM ${rows};
  `);
}

const refreshTokens: string[] = [];
for (let chain = 0; chain < chains(); chain++) {
  const grantId = `live-${chain}`;
  const grant = {
    id: grantId,
    clientId: CLIENT,
    userId: USER,
    scope: ['mcp:tools'],
    resource: RESOURCE,
    authTime: now,
    createdAt: now,
    revokedAt: null,
    upstreamSessionId: null,
    accessExpiresAt: null,
  };
  const token = randomToken(32);
  await grantWithRefreshToken(store, grant, { tokenHash: hashSecret(token), createdAt: now, expiresAt: now + 30 * DAY }, now);
  refreshTokens.push(token);
}

/**
 * With the load generator's DPoP key: as many more chains whose refresh tokens are bound to it, as
 * a public client's are when it refreshes with a proof (`<random>.<thumbprint>`).
 */
const dpopPair = dpopKeyPair();
const dpopRefreshTokens: string[] = [];
if (dpopPair) {
  const { jkt } = dpopProofSigner(dpopPair);
  for (let chain = 0; chain < chains(); chain++) {
    const grant = {
      id: `live-dpop-${chain}`,
      clientId: CLIENT,
      userId: USER,
      scope: ['mcp:tools'],
      resource: RESOURCE,
      authTime: now,
      createdAt: now,
      revokedAt: null,
      upstreamSessionId: null,
      accessExpiresAt: null,
    };
    const token = `${randomToken(32)}.${jkt}`;
    await grantWithRefreshToken(store, grant, { tokenHash: hashSecret(token), createdAt: now, expiresAt: now + 30 * DAY }, now);
    dpopRefreshTokens.push(token);
  }
}

/**
 * Flows bench: one signed-in browser per chain (a session, made through the store as a sign-in
 * would make it) and the person's consent for the client and resource remembered.
 */
let flow: FlowSetup | undefined;
if (flowsWanted()) {
  await store.saveConsent({ userId: USER, clientId: CLIENT, resource: RESOURCE, scope: ['mcp:tools'], createdAt: now, updatedAt: now });
  const cookies: string[] = [];
  for (let chain = 0; chain < chains(); chain++) {
    const id = randomToken(32);
    await store.createSession({ idHash: hashSecret(id), userId: USER, authTime: now, createdAt: now, expiresAt: now + DAY, upstreamSessionId: null });
    cookies.push(`${SESSION_COOKIE}=${id}`);
  }
  flow = {
    authorizePath: '/authorize',
    redirectUri: REDIRECT_URI,
    scope: 'mcp:tools',
    resource: RESOURCE,
    cookies,
    user: { username: 'bench', password: PASSWORD },
  };
}

const ISSUER = 'http://127.0.0.1';
const WORKLOAD_CLIENT = 'bench-workload';
/** The jwt-bearer rows: the load generator as a trusted IdP (ID-JAGs) and as a workload issuer. */
const trusted = assertionIssuer();
// Run as `serve` runs it: on the server's own Node listener, no periodic sweep during the rounds,
// and no per-address rate limits (the load comes from one address).
const server = await startAuthorizationServer({
  issuer: ISSUER,
  store,
  resources: [RESOURCE],
  registrationTtl: 0,
  listen: { host: '127.0.0.1', port: 0 },
  sweepIntervalMs: 0,
  rateLimits: { token: false, signIn: false, register: false },
  ...(trusted
    ? {
        trustedIdps: [trusted],
        workloads: [{ issuer: trusted, subject: 'bench-workload', client: WORKLOAD_CLIENT, scopes: ['mcp:tools'] }],
        allowInsecureIssuers: true,
      }
    : {}),
});
if (trusted) await server.workloadClientsReady();

let machine: MachineSetup | undefined;
const jwk = machineJwk();
if (jwk) {
  const scopes = server.metadata.scopes_supported;
  const add = (metadata: Record<string, unknown>) =>
    registerClient(store, validateClientMetadata({ grant_types: ['client_credentials'], ...metadata }, scopes), now, { registeredBy: 'admin' });
  const secret = await add({
    token_endpoint_auth_method: 'client_secret_basic',
    ...(trusted ? { grant_types: ['client_credentials', JWT_BEARER_GRANT_TYPE] } : {}),
  });
  const key = await add({ token_endpoint_auth_method: 'private_key_jwt', token_endpoint_auth_signing_alg: 'ES256', jwks: { keys: [jwk] } });
  machine = {
    audience: ISSUER,
    resource: RESOURCE,
    scope: 'mcp:tools',
    secretClient: { clientId: secret.client.clientId, secret: secret.clientSecret! },
    keyClientId: key.client.clientId,
    ...(trusted ? { workloadClientId: WORKLOAD_CLIENT } : {}),
  };
}
const dpop = dpopPair ? { tokenUrl: server.metadata.token_endpoint, refreshTokens: dpopRefreshTokens } : undefined;
announce(
  { port: Number(new URL(server.url).port), clientId: CLIENT, refreshTokens, flow, machine, dpop },
  async () => {
    // The server closes the store it was given; what else was opened for it goes after.
    await server.close();
    await opened.close().catch(() => {});
  },
  opened.dbCpu,
);
