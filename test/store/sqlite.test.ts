import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { isStoreUnavailable } from '../../src/store/index.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { SCHEMA_VERSION } from '../../src/store/sql/schema.js';
import { runStoreSuite } from '../../src/store/testing/index.js';
import { addGrant, issueFirstToken, makeClient, makeCode, makeGrant, makeRefreshToken, makeUser, NOW } from '../../src/store/testing/records.js';
import { insertRefreshTokensSqlite } from '../helpers/store-rows.js';
import { sqliteProbes } from '../helpers/store-probes.js';

const suiteDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ca-store-'));
let databases = 0;
// A fresh database per test, in a folder that does not exist yet (the store creates it).
runStoreSuite({
  name: 'sqlite store',
  capabilities: 'all',
  batchedSweep: true,
  open: async () => {
    const file = path.join(suiteDir, `db-${++databases}`, 'store.db');
    const store = openSqliteStore({ path: file });
    const probes = sqliteProbes(file);
    return {
      store,
      probes,
      close: () => {
        probes.close();
        return store.close();
      },
    };
  },
});
after(() => fs.rmSync(suiteDir, { recursive: true, force: true }));

const root = fileURLToPath(new URL('../../', import.meta.url));
const storeModule = pathToFileURL(path.join(root, 'src/store/sqlite.ts')).href;

/** Runs `body` in a child `node --import tsx` process, with `openSqliteStore` imported. */
function startChild(dir: string, body: string, args: string[]): ChildProcess {
  const script = path.join(dir, `child-${Math.random().toString(36).slice(2)}.mjs`);
  fs.writeFileSync(script, `import { openSqliteStore } from ${JSON.stringify(storeModule)};\n${body}\n`);
  return spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
}

/** Resolves with everything the child printed once a line equal to `line` appears. */
function waitForLine(child: ChildProcess, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      if (output.split('\n').includes(line)) {
        child.stdout?.off('data', onData);
        child.off('exit', onExit);
        resolve(output);
      }
    };
    const onExit = (code: number | null): void => reject(new Error(`child exited (${code}) before printing ${line}: ${output}`));
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
  });
}

describe('sqlite store, SQLite only', () => {
  let dir: string;
  let files = 0;
  const newPath = (): string => path.join(dir, `case-${++files}`, 'store.db');

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ca-store-'));
  });
  after(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('keeps its state across close and reopen', async () => {
    const file = newPath();
    const client = makeClient();
    const user = makeUser();
    const grant = makeGrant(client.clientId, user.id);
    const code = makeCode(grant);
    let store = openSqliteStore({ path: file });
    await store.createClient(client);
    await store.createUser(user);
    await store.createGrant(grant, code);
    assert.equal((await store.redeemAuthorizationCode(code.codeHash, NOW, () => undefined)).status, 'ok');
    await store.close();

    store = openSqliteStore({ path: file });
    try {
      assert.deepEqual(await store.getClient(client.clientId), client);
      assert.deepEqual(await store.getUser({ username: user.username }), user);
      assert.deepEqual(await store.getGrant(grant.id), grant);
      assert.equal((await store.redeemAuthorizationCode(code.codeHash, NOW, () => undefined)).status, 'replayed');
    } finally {
      await store.close();
    }
  });

  it('applies migrations once: opening again changes nothing', async () => {
    const file = newPath();
    const user = makeUser();
    const first = openSqliteStore({ path: file });
    await first.createUser(user);
    await first.close();
    const second = openSqliteStore({ path: file });
    assert.deepEqual(await second.listUsers(), [user]);
    await second.close();

    const db = new Database(file, { readonly: true });
    try {
      assert.equal(db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
      assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    } finally {
      db.close();
    }
  });

  it('refuses a database from a newer version of the code', async () => {
    const file = newPath();
    await openSqliteStore({ path: file }).close();
    const db = new Database(file);
    db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    assert.throws(() => openSqliteStore({ path: file }), isStoreUnavailable);
  });

  it('creates the folder 0700 and the database files 0600', async () => {
    const file = newPath();
    const store = openSqliteStore({ path: file });
    try {
      await store.createUser(makeUser());
      assert.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o700);
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      assert.equal(fs.statSync(`${file}-wal`).mode & 0o777, 0o600);
    } finally {
      await store.close();
    }
  });

  it('tightens the mode of an existing database file', async () => {
    const file = newPath();
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, '');
    fs.chmodSync(file, 0o644);
    await openSqliteStore({ path: file }).close();
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  });

  it('reports an unusable path and use after close as an unavailable StoreError', async () => {
    const blocker = path.join(dir, 'a-file');
    fs.writeFileSync(blocker, '');
    assert.throws(() => openSqliteStore({ path: path.join(blocker, 'store.db') }), isStoreUnavailable);

    const store = openSqliteStore({ path: newPath() });
    await store.close();
    await assert.rejects(store.getClient('x'), isStoreUnavailable);
  });

  it('keeps a committed write when the process is killed', async () => {
    const file = newPath();
    const child = startChild(
      dir,
      `const store = openSqliteStore({ path: process.argv[2] });
       await store.createUser({ id: 'crash-user', username: 'crash', passwordHash: 'h', createdAt: 1 });
       console.log('committed');
       setInterval(() => {}, 1000);`,
      [file],
    );
    try {
      await waitForLine(child, 'committed');
    } finally {
      child.kill('SIGKILL');
    }
    const [, signal] = (await once(child, 'exit')) as [number | null, string | null];
    assert.equal(signal, 'SIGKILL');
    // The write is still only in the WAL (never checkpointed): reopening must recover it.
    assert.ok(fs.statSync(`${file}-wal`).size > 0);

    const store = openSqliteStore({ path: file });
    try {
      assert.equal((await store.getUser({ username: 'crash' }))?.id, 'crash-user');
    } finally {
      await store.close();
    }
  });

  it('single use holds across processes sharing the file', async () => {
    const file = newPath();
    const client = makeClient();
    const user = makeUser();
    const grant = makeGrant(client.clientId, user.id);
    const old = makeRefreshToken(grant);
    const coded = makeGrant(client.clientId, user.id);
    const code = makeCode(coded);
    const store = openSqliteStore({ path: file });
    try {
      await store.createClient(client);
      await store.createUser(user);
      await issueFirstToken(store, grant, old);
      await store.createGrant(coded, code);

      const job = { file, now: NOW, codeHash: code.codeHash, old: old.tokenHash, next: makeRefreshToken(grant) };
      const children = Array.from({ length: 6 }, (_, index) =>
        startChild(
          dir,
          `const job = JSON.parse(process.argv[2]);
           const store = openSqliteStore({ path: job.file });
           console.log('ready');
           await new Promise((resolve) => process.stdin.once('data', resolve));
           const code = await store.redeemAuthorizationCode(job.codeHash, job.now, () => undefined);
           const rotation = await store.refreshGrant({ tokenHash: job.old, clientId: job.next.clientId, next: job.next, accessExpiresAt: job.now + 600, now: job.now, upstreamChecked: true });
           console.log(JSON.stringify({ code: code.status, rotation: rotation.status }));
           console.log('done');
           await store.close();
           process.exit(0);`,
          [JSON.stringify({ ...job, next: { ...job.next, tokenHash: `next-${index}` } })],
        ),
      );
      await Promise.all(children.map((child) => waitForLine(child, 'ready')));
      const outputs = children.map((child) => waitForLine(child, 'done'));
      for (const child of children) child.stdin?.end('go\n');
      const results = (await Promise.all(outputs)).map((output) => {
        const line = output.split('\n').find((l) => l.startsWith('{'));
        assert.ok(line, output);
        return JSON.parse(line) as { code: string; rotation: string };
      });

      assert.deepEqual(results.map((r) => r.code).sort(), ['ok', 'replayed', 'replayed', 'replayed', 'replayed', 'replayed']);
      assert.deepEqual(results.map((r) => r.rotation).sort(), ['ok', 'replayed', 'replayed', 'replayed', 'replayed', 'replayed']);
      const stored = await Promise.all(children.map((_, index) => store.getRefreshToken(`next-${index}`)));
      assert.equal(stored.filter((t) => t !== undefined).length, 1);
    } finally {
      await store.close();
    }
  });
});

describe('sqlite store: upkeep that does not stop the server', () => {
  it('a sweep of many rows runs in batches that yield, and gives the space back', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ca-sweep-')), 'sweep.db');
    const store = openSqliteStore({ path: file });
    try {
      const { grant } = await addGrant(store);
      insertRefreshTokensSqlite(
        file,
        Array.from({ length: 5000 }, (_, i) => makeRefreshToken(grant, { tokenHash: `old-${i}-${'x'.repeat(200)}`, expiresAt: NOW - 1 })),
      );
      // Work queued before the sweep runs before the sweep ends: the sweep yields between batches.
      let ranDuring = false;
      const sweeping = store.sweepExpired(NOW);
      setImmediate(() => (ranDuring = true));
      assert.ok((await sweeping) >= 5000);
      assert.ok(ranDuring, 'other work ran while the sweep was under way');
      const db = new Database(file, { readonly: true });
      try {
        assert.equal(db.pragma('auto_vacuum', { simple: true }), 2, 'a new file reclaims space incrementally');
        assert.equal(db.pragma('freelist_count', { simple: true }), 0, 'the freed pages were given back');
      } finally {
        db.close();
      }
    } finally {
      await store.close();
    }
  });
});
