/**
 * The store's part of a refresh alone: Store.refreshGrant on rotating chains, no HTTP, no
 * signing. Prints node's CPU per refresh, PostgreSQL's backends' CPU per refresh (when they run
 * on this machine), on SQLite the WAL frames (pages) each refresh writes, and the latency
 * percentiles. `concurrency` refreshes are in flight at once (distinct chains), as that many
 * clients would send them: above 1, they share group commits. With --own-turns each refresh starts
 * in a turn of the event loop of its own, as requests arriving from sockets do; without, each
 * starts in the turn that answered the one before.
 *
 *   node --import tsx bench/store-refresh.ts sqlite|postgres [refreshes=20000] [grants=64] [concurrency=1] [--own-turns]
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { hashSecret, randomToken } from '../src/core/index.js';
import type { Store } from '../src/store/index.js';
import { openPostgresStore } from '../src/store/postgres.js';
import { openSqliteStore } from '../src/store/sqlite.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { processCpuSeconds } from './process-cpu.js';
import { grantWithRefreshToken } from './seed-grant.js';

const OWN_TURNS = process.argv.includes('--own-turns');
const [kind, refreshCount, grantCount, concurrency] = process.argv.slice(2).filter((arg) => arg !== '--own-turns');
const REFRESHES = Number(refreshCount ?? 20_000);
const GRANTS = Number(grantCount ?? 64);
const CONCURRENCY = Number(concurrency ?? 1);
if (GRANTS % CONCURRENCY !== 0) throw new Error('grants must be a multiple of concurrency (each chain has one refresh in flight)');
const CLIENT = 'bench-client';
const DAY = 24 * 3600;

let store: Store;
let close: () => Promise<void>;
let dbCpu: () => Promise<number | undefined> = async () => undefined;
let walFrames: (() => number) | undefined;
let truncateWal = (): void => undefined;
if (kind === 'sqlite') {
  const folder = mkdtempSync(join(tmpdir(), 'ca-bench-store-'));
  const file = join(folder, 'context-auth.db');
  store = openSqliteStore({ path: file });
  const other = new Database(file);
  const pageSize = other.pragma('page_size', { simple: true }) as number;
  // Frames written to the WAL since it was last truncated (a 32-byte header, then 24 bytes and a page per frame).
  walFrames = () => (statSync(`${file}-wal`).size - 32) / (pageSize + 24);
  truncateWal = () => void other.pragma('wal_checkpoint(TRUNCATE)');
  close = async () => {
    other.close();
    await store.close();
    rmSync(folder, { recursive: true, force: true });
  };
} else if (kind === 'postgres') {
  const database = await startPostgres();
  store = await openPostgresStore({ connectionString: database.connectionString });
  const monitor = new pg.Client({ connectionString: database.connectionString });
  await monitor.connect();
  dbCpu = async () => {
    const { rows } = await monitor.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
    let seconds = 0;
    for (const { pid } of rows) seconds += processCpuSeconds(pid);
    return seconds * 1e6;
  };
  close = async () => {
    await monitor.end();
    await store.close();
    await database.stop();
  };
} else {
  throw new Error('usage: store-refresh.ts sqlite|postgres [refreshes] [grants]');
}

const now = Math.floor(Date.now() / 1000);
await store.createClient({
  clientId: CLIENT,
  clientSecretHash: null,
  tokenEndpointAuthMethod: 'none',
  redirectUris: ['http://127.0.0.1:9/cb'],
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
const hashes: string[] = [];
for (let i = 0; i < GRANTS; i++) {
  const grantId = `grant-${i}`;
  const grant = {
    id: grantId,
    clientId: CLIENT,
    userId: null,
    scope: ['mcp:tools'],
    resource: 'http://127.0.0.1/mcp',
    authTime: now,
    createdAt: now,
    revokedAt: null,
    upstreamSessionId: null,
    accessExpiresAt: null,
  };
  const tokenHash = hashSecret(randomToken(32));
  await grantWithRefreshToken(store, grant, { tokenHash, createdAt: now, expiresAt: now + 30 * DAY }, now + 3600);
  hashes.push(tokenHash);
}
// Made up front: the bench measures the store, not hashing.
const nextHashes = Array.from({ length: REFRESHES }, () => hashSecret(randomToken(32)));

let latencies: number[] = [];

/** Refreshes `from` to `to`, `CONCURRENCY` in flight: each worker takes every CONCURRENCY-th, so its chains are its own. */
async function refreshes(from: number, to: number): Promise<void> {
  const worker = async (first: number): Promise<void> => {
    for (let n = first; n < to; n += CONCURRENCY) {
      const chain = n % GRANTS;
      const next = nextHashes[n]!;
      if (OWN_TURNS) await new Promise((resolve) => setImmediate(resolve));
      const started = performance.now();
      const result = await store.refreshGrant({
        tokenHash: hashes[chain]!,
        clientId: CLIENT,
        now,
        accessExpiresAt: now + 3600,
        upstreamChecked: false,
        next: { tokenHash: next, createdAt: now, expiresAt: now + 30 * DAY },
      });
      latencies.push(performance.now() - started);
      if (result.status !== 'ok') throw new Error(`refresh ${n}: ${result.status}`);
      hashes[chain] = next;
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, to - from) }, (_, w) => worker(from + w)));
}

const warm = Math.min(2000, Math.floor(REFRESHES / 4));
await refreshes(0, warm);
let frames: number | undefined;
if (walFrames) {
  // Fewer commits than fill the WAL to its autocheckpoint, counted from a fresh start.
  truncateWal();
  await refreshes(warm, warm + 1);
  const before = walFrames();
  await refreshes(warm + 1, warm + 101);
  frames = (walFrames() - before) / 100;
}
const start = warm + (walFrames ? 101 : 0);
latencies = [];
const cpu0 = process.cpuUsage();
const db0 = await dbCpu();
const t0 = performance.now();
await refreshes(start, REFRESHES);
const wall = performance.now() - t0;
const cpu1 = process.cpuUsage(cpu0);
const db1 = await dbCpu();
const n = REFRESHES - start;
const micros = (cpu1.user + cpu1.system) / n;
latencies.sort((a, b) => a - b);
const percentile = (p: number): string => `${(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]! * 1000).toFixed(0)} µs`;
console.log(
  `${kind}, ${CONCURRENCY} in flight: ${n} refreshes, ${((wall * 1000) / n).toFixed(1)} µs wall, ${micros.toFixed(1)} µs node CPU` +
    (db0 !== undefined && db1 !== undefined ? `, ${((db1 - db0) / n).toFixed(1)} µs PostgreSQL CPU` : '') +
    (frames !== undefined ? `, ${frames.toFixed(2)} WAL frames` : '') +
    ` per refresh; latency p50 ${percentile(0.5)}, p99 ${percentile(0.99)}`,
);
await close();
