/**
 * PostgreSQL for tests.
 *
 * `startPostgres()` gives a test file its own, new, empty database:
 * - with CONTEXT_AUTH_TEST_POSTGRES_URL set (CI starts one server for the whole run), on that
 *   server: the URL names a role allowed to CREATE DATABASE;
 * - otherwise on a throwaway server this process starts (initdb into a temporary folder, trust
 *   authentication, 127.0.0.1 on a free port), shared by the calls of one process and stopped,
 *   folder removed, when the last database is released.
 * `stop()` drops the database (and stops the throwaway server after the last one).
 *
 * `startPostgresServer()` always starts a throwaway server of its own, for tests that stop and
 * restart the server under a store.
 *
 * Without PostgreSQL binaries, both throw: a PostgreSQL test never passes by skipping itself.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

export interface TestDatabase {
  connectionString: string;
  stop(): Promise<void>;
}

export interface PostgresServer {
  /** The URL of a database on this server (the `postgres` maintenance database by default). */
  url(database?: string): string;
  port: number;
  /** Creates a new, empty database and returns its connection string. */
  createDatabase(): Promise<string>;
  dropDatabase(connectionString: string): Promise<void>;
  /** `pg_ctl stop -m fast`: the server goes away, connections are terminated. */
  pause(): Promise<void>;
  /** `pg_ctl start` again, on the same port and data. */
  resume(): Promise<void>;
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Finding the binaries

const REQUIRED = ['initdb', 'pg_ctl'];

function hasBinaries(dir: string): boolean {
  return REQUIRED.every((name) => fs.existsSync(path.join(dir, name)));
}

/** `pg_config --bindir`, else the newest /usr/lib/postgresql/<version>/bin, else PATH. */
function findBinDir(): string {
  const candidates: string[] = [];
  try {
    candidates.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    // No pg_config (or it belongs to client libraries only): look elsewhere.
  }
  const debian = '/usr/lib/postgresql';
  if (fs.existsSync(debian)) {
    const versions = fs.readdirSync(debian).sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
    candidates.push(...versions.map((version) => path.join(debian, version, 'bin')));
  }
  candidates.push(...(process.env['PATH'] ?? '').split(path.delimiter).filter(Boolean));
  const found = candidates.find((dir) => dir !== '' && hasBinaries(dir));
  if (!found) {
    throw new Error(
      'PostgreSQL server binaries (initdb, pg_ctl) not found via pg_config, /usr/lib/postgresql/*/bin or PATH. ' +
        'Install PostgreSQL (e.g. apt-get install -y postgresql) or set CONTEXT_AUTH_TEST_POSTGRES_URL to a server for the tests.',
    );
  }
  return found;
}

// ---------------------------------------------------------------------------------------------
// Running as the right OS user: PostgreSQL refuses to run as root.

const isRoot = process.getuid?.() === 0;

function postgresUser(): { uid: number; gid: number } {
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    throw new Error('running as root, and PostgreSQL refuses to: create a "postgres" OS user to run the throwaway test server as');
  }
}

/** argv for a PostgreSQL binary, through `runuser -u postgres --` when we are root. */
function command(binDir: string, name: string, args: string[]): [string, string[]] {
  const binary = path.join(binDir, name);
  return isRoot ? ['runuser', ['-u', 'postgres', '--', binary, ...args]] : [binary, args];
}

async function pgBinary(binDir: string, cwd: string, name: string, args: string[]): Promise<void> {
  const [file, argv] = command(binDir, name, args);
  try {
    await run(file, argv, { cwd });
  } catch (err) {
    const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
    throw new Error(`${name} ${args.join(' ')} failed: ${String(err)}\n${stdout}${stderr}`, { cause: err });
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

// Servers still running when the process exits (a test crashed, or forgot stop()) are stopped,
// so no postgres process outlives the test run.
const running = new Set<{ binDir: string; dir: string; dataDir: string }>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A killed test run (Ctrl-C, a runner timeout) goes through 'exit' too.
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.once(signal, () => process.exit(code));
  }
  process.once('exit', () => {
    for (const server of running) {
      try {
        const [file, argv] = command(server.binDir, 'pg_ctl', ['-D', server.dataDir, '-m', 'immediate', '-w', 'stop']);
        execFileSync(file, argv, { cwd: server.dir, stdio: 'ignore' });
      } catch {
        // Already stopped.
      }
      fs.rmSync(server.dir, { recursive: true, force: true });
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Databases

async function adminQuery(adminUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** The same URL, on another database. */
function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function createDatabase(adminUrl: string): Promise<string> {
  const name = `test_${randomBytes(6).toString('hex')}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  return withDatabase(adminUrl, name);
}

async function dropDatabase(adminUrl: string, connectionString: string): Promise<void> {
  const name = decodeURIComponent(new URL(connectionString).pathname.slice(1));
  if (!/^test_[0-9a-f]+$/.test(name)) throw new Error(`refusing to drop a database the tests did not create: ${name}`);
  await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

// ---------------------------------------------------------------------------------------------
// A throwaway server

export async function startPostgresServer(): Promise<PostgresServer> {
  const binDir = findBinDir();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ca-pg-'));
  const dataDir = path.join(dir, 'data');
  const logFile = path.join(dir, 'server.log');
  const entry = { binDir, dir, dataDir };
  try {
    if (isRoot) {
      const { uid, gid } = postgresUser();
      fs.chownSync(dir, uid, gid);
    }
    await pgBinary(binDir, dir, 'initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-sync']);
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  const port = await freePort();
  const serverOptions = [
    `-p ${port}`,
    `-k ${dir}`,
    '-c listen_addresses=127.0.0.1',
    // A test server: durability does not matter, speed does.
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
  ].join(' ');
  // -l: the server's output goes to a file, not to pg_ctl's stdout (which we would wait on forever).
  const start = (): Promise<void> => pgBinary(binDir, dir, 'pg_ctl', ['-D', dataDir, '-l', logFile, '-w', '-t', '60', '-o', serverOptions, 'start']);
  const stopServer = (): Promise<void> => pgBinary(binDir, dir, 'pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', '-t', '60', 'stop']);

  installExitHook();
  running.add(entry);
  try {
    await start();
  } catch (err) {
    running.delete(entry);
    const log = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '';
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`${(err as Error).message}\nserver log:\n${log}`, { cause: err });
  }

  const url = (database = 'postgres'): string => `postgresql://postgres@127.0.0.1:${port}/${database}`;
  let paused = false;
  let stopped = false;
  return {
    url,
    port,
    createDatabase: () => createDatabase(url()),
    dropDatabase: (connectionString) => dropDatabase(url(), connectionString),
    pause: async () => {
      await stopServer();
      paused = true;
    },
    resume: async () => {
      await start();
      paused = false;
    },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      try {
        if (!paused) await stopServer();
      } finally {
        running.delete(entry);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// A database per call

let shared: { server: Promise<PostgresServer>; users: number } | undefined;

export async function startPostgres(): Promise<TestDatabase> {
  const external = process.env['CONTEXT_AUTH_TEST_POSTGRES_URL'];
  if (external) {
    const connectionString = await createDatabase(external);
    return { connectionString, stop: () => dropDatabase(external, connectionString) };
  }

  if (!shared) {
    const server = startPostgresServer();
    shared = { server, users: 0 };
    // A failed start is not cached: the next call tries again (and throws again, clearly).
    server.catch(() => {
      if (shared?.server === server) shared = undefined;
    });
  }
  const current = shared;
  current.users++;
  let server: PostgresServer;
  let connectionString: string;
  try {
    server = await current.server;
    connectionString = await server.createDatabase();
  } catch (err) {
    await release(current);
    throw err;
  }
  let stopped = false;
  return {
    connectionString,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      try {
        await server.dropDatabase(connectionString);
      } finally {
        await release(current);
      }
    },
  };
}

async function release(current: { server: Promise<PostgresServer>; users: number }): Promise<void> {
  current.users--;
  if (current.users > 0) return;
  if (shared === current) shared = undefined;
  const server = await current.server.catch(() => undefined);
  await server?.stop();
}
