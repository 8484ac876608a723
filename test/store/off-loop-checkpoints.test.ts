/**
 * When SQLite's checkpoints leave the event loop: from a burst of writes until the writes stop,
 * and while an upkeep job holds them; a store that writes now and then never starts a thread.
 * The worker is the real one (startCheckpointer) on a real WAL file, counted as it starts and stops.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { OFF_LOOP_WAL_PAGES, OffLoopCheckpoints, startCheckpointer, WRITE_BURST, type CheckpointClock } from '../../src/store/sqlite-checkpointer.js';
import { openSqliteStore } from '../../src/store/sqlite.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ca-off-loop-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls for what a worker thread does on its own; the deadline only reports a hang. */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await sleep(10);
  }
}

/** A clock the test moves: `advance` runs the checks that fall due, as the timers would. */
class TestClock implements CheckpointClock {
  ms = 1_000_000;
  private checks = new Set<{ every: number; next: number; tick: () => void }>();

  now(): number {
    return this.ms;
  }

  every(ms: number, tick: () => void): () => void {
    const check = { every: ms, next: this.ms + ms, tick };
    this.checks.add(check);
    return () => void this.checks.delete(check);
  }

  advance(ms: number): void {
    const until = this.ms + ms;
    for (;;) {
      const due = [...this.checks].filter((check) => check.next <= until).sort((a, b) => a.next - b.next)[0];
      if (!due) break;
      this.ms = due.next;
      due.next += due.every;
      due.tick();
    }
    this.ms = until;
  }

  get pending(): number {
    return this.checks.size;
  }
}

/** A WAL database file, the settings given to the store's connection, and the workers' lives. */
function setup(name: string, idleMs = 300) {
  const file = path.join(dir, `${name}.db`);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  const settings: number[] = [];
  const workers = { started: 0, stopped: 0 };
  const clock = new TestClock();
  const checkpoints = new OffLoopCheckpoints(file, (pages) => void settings.push(pages), 1000, {
    idleMs,
    clock,
    start: async (f) => {
      const worker = await startCheckpointer(f);
      workers.started++;
      return { stop: async () => void (await worker.stop(), workers.stopped++) };
    },
  });
  return { db, settings, workers, checkpoints, clock };
}

describe('checkpoints off the event loop', () => {
  it('start from a burst of writes, turn the connection’s own off, and hand back after the writes stop', async () => {
    const { db, settings, workers, checkpoints, clock } = setup('burst');
    try {
      for (let i = 0; i < WRITE_BURST - 1; i++) checkpoints.wrote();
      clock.advance(100);
      assert.equal(clock.pending, 0, 'a few writes start nothing');
      checkpoints.wrote();
      await until(() => settings.length === 1, 'the worker started');
      assert.deepEqual(settings, [OFF_LOOP_WAL_PAGES], 'the store’s connection checkpoints only at a WAL ten times larger once the worker runs');
      // Writes going on keep it, however long they go on.
      for (let i = 0; i < 20; i++) {
        clock.advance(100);
        checkpoints.wrote();
      }
      // An end begun by a check would have set the connection's limit back by the next turn.
      await new Promise(setImmediate);
      assert.deepEqual(settings, [OFF_LOOP_WAL_PAGES]);
      assert.equal(workers.stopped, 0);
      // The check runs every half idle time: the writes are seen to have stopped within 1.5 × of it.
      clock.advance(450);
      await until(() => workers.stopped === 1, 'the worker stopped after the writes did');
      assert.deepEqual(settings, [OFF_LOOP_WAL_PAGES, 1000], 'the connection checkpoints again');
      assert.equal(workers.started, 1);
    } finally {
      await checkpoints.close();
      db.close();
    }
  });

  it('count writes separated by an idle gap afresh', async () => {
    const { db, settings, workers, checkpoints, clock } = setup('sparse', 100);
    try {
      for (let i = 0; i < WRITE_BURST - 1; i++) checkpoints.wrote();
      clock.advance(100);
      for (let i = 0; i < WRITE_BURST - 1; i++) checkpoints.wrote();
      assert.equal(clock.pending, 0, 'no burst: no worker');
      assert.deepEqual(settings, []);
      assert.equal(workers.started, 0);
      checkpoints.wrote();
      assert.equal(clock.pending, 1, 'one more write in the same run of writes is a burst');
    } finally {
      await checkpoints.close();
      db.close();
    }
  });

  it('run while held, however few the writes, until released', async () => {
    const { db, settings, workers, checkpoints, clock } = setup('held');
    try {
      const release = checkpoints.hold();
      await until(() => settings.length === 1, 'the worker started');
      assert.deepEqual(settings, [0], 'a sweep’s commits never checkpoint on the event loop');
      clock.advance(10_000);
      assert.equal(workers.stopped, 0, 'held past the idle time');
      await release();
      assert.deepEqual(settings, [0, 1000]);
      assert.equal(workers.stopped, 1);
    } finally {
      await checkpoints.close();
      db.close();
    }
  });

  it('held by upkeep while requests write: back to the bounded WAL once released', async () => {
    const { db, settings, workers, checkpoints, clock } = setup('both');
    try {
      for (let i = 0; i < WRITE_BURST; i++) checkpoints.wrote();
      await until(() => settings.length === 1, 'the worker started');
      const release = checkpoints.hold();
      assert.deepEqual(settings, [OFF_LOOP_WAL_PAGES, 0]);
      checkpoints.wrote();
      await release();
      assert.deepEqual(settings, [OFF_LOOP_WAL_PAGES, 0, OFF_LOOP_WAL_PAGES], 'the writes go on: the worker stays, the WAL bounded again');
      assert.equal(workers.stopped, 0);
      // The check runs every half idle time: the writes are seen to have stopped within 1.5 × of it.
      clock.advance(450);
      await until(() => workers.stopped === 1, 'the worker stopped after the writes did');
      assert.deepEqual(settings, [OFF_LOOP_WAL_PAGES, 0, OFF_LOOP_WAL_PAGES, 1000]);
    } finally {
      await checkpoints.close();
      db.close();
    }
  });

  it('end for good on close, leaving the setting to the closing connection', async () => {
    const { db, settings, workers, checkpoints, clock } = setup('closed');
    for (let i = 0; i < WRITE_BURST; i++) checkpoints.wrote();
    await until(() => settings.length === 1, 'the worker started');
    await checkpoints.close();
    assert.equal(workers.stopped, 1);
    assert.equal(clock.pending, 0, 'no check left running');
    for (let i = 0; i < WRITE_BURST; i++) checkpoints.wrote();
    assert.equal(clock.pending, 0, 'nothing starts after close');
    assert.equal(workers.started, 1);
    db.close();
  });

  it('a SQLite store under steady writes closes cleanly with the worker running, its rows all in the file', async () => {
    const file = path.join(dir, 'store.db');
    const store = openSqliteStore({ path: file });
    const now = Math.floor(Date.now() / 1000);
    for (let i = 0; i < 3 * WRITE_BURST; i++) {
      await store.createUser({ id: `u${i}`, username: `user${i}`, passwordHash: null, createdAt: now });
    }
    await sleep(200);
    await store.close();
    const db = new Database(file, { readonly: true });
    try {
      assert.equal((db.prepare('SELECT count(*) AS n FROM users').get() as { n: number }).n, 3 * WRITE_BURST);
    } finally {
      db.close();
    }
  });
});

describe('the checkpointer worker', () => {
  it('that fails after it started ends alone, without taking the process down, and stops at once', async () => {
    const file = path.join(dir, 'gone.db');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.close();
    // The worker opens its connection after it is online; a file gone by then fails it there.
    const starting = startCheckpointer(file);
    fs.rmSync(file);
    fs.rmSync(`${file}-wal`, { force: true });
    fs.rmSync(`${file}-shm`, { force: true });
    const checkpointer = await starting;
    await sleep(300);
    await checkpointer.stop();
  });
});
