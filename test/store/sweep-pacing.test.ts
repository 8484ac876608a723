/**
 * Upkeep that leaves room for requests: on SQLite a sweep's batches shrink when slow and grow when
 * quick, each followed by a rest several times as long; and the SQLite checkpointer really copies the
 * WAL into the database file from its own thread while the store's connection does not.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { drainInSlices, SWEEP_BATCH, SWEEP_MOST_PAGES, SWEEP_WALK_BATCH, walkInSlices, walkPages, type SweepPace } from '../../src/store/sql/sql-store.js';
import { startCheckpointer } from '../../src/store/sqlite-checkpointer.js';

/** Busy-waits, standing in for a batch that takes this long. */
function work(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/**
 * A table of `keys` for walkInSlices: each slice takes the next `size` keys after `after` and
 * deletes those in `expired` (all of them when `expired` is 'all'), noting each slice's size.
 */
function walkedTable(keys: string[], expired: Set<string> | 'all', sizes: number[]) {
  return async (after: string, size: number) => {
    sizes.push(size);
    const slice = keys.filter((k) => k > after).slice(0, size);
    const deleted = expired === 'all' ? slice.length : slice.filter((k) => expired.delete(k)).length;
    return { deleted, last: slice.at(-1) ?? null, keys: slice.length };
  };
}

/** A pace sized by time, as SQLite's is (with its own numbers). */
const PACE: SweepPace = { sliceMs: 2, restFactor: 4 };

describe('sweep pacing', () => {
  it('rests after every batch four times as long as it took, and sizes batches to about 2 ms', async () => {
    const sizes: number[] = [];
    const rests: { took: number; rest: number }[] = [];
    let remaining = 3000;
    let took = 0;
    const total = await drainInSlices(
      async (size) => {
        sizes.push(size);
        // Slow while big (0.02 ms a row), so batches shrink towards 2 ms, about 100 rows.
        took = size * 0.02;
        work(took);
        const deleted = Math.min(size, remaining);
        remaining -= deleted;
        return deleted;
      },
      async (ms) => void rests.push({ took, rest: ms }),
      PACE,
    );
    assert.equal(total, 3000);
    assert.equal(sizes[0], SWEEP_BATCH);
    assert.ok(Math.min(...sizes) < SWEEP_BATCH / 2, `batches shrank: ${sizes.join(' ')}`);
    assert.ok(
      sizes.slice(3).every((size) => size * 0.02 <= 2 * 2),
      `then stayed near 2 ms: ${sizes.join(' ')}`,
    );
    assert.equal(rests.length, sizes.length - 1, 'a rest after every full batch');
    for (const { took: ms, rest } of rests) assert.ok(rest >= ms * 4 * 0.9, `rest ${rest} after ${ms} ms`);
  });

  it('grows quick batches back to the largest size', async () => {
    const sizes: number[] = [];
    let calls = 0;
    await drainInSlices(
      async (size) => {
        sizes.push(size);
        // The first two are slow, the rest instant.
        if (calls++ < 2) work(10);
        return calls < 12 ? size : 0;
      },
      async () => undefined,
      PACE,
    );
    assert.ok(sizes[2]! < SWEEP_BATCH);
    assert.equal(sizes.at(-1), SWEEP_BATCH);
  });

  it('by default (no slice length) keeps full batches, however long the round trip, and rests four times as long as each took', async () => {
    const sizes: number[] = [];
    const rests: number[] = [];
    let calls = 0;
    await drainInSlices(
      async (size) => {
        sizes.push(size);
        work(3);
        return calls++ < 5 ? size : 0;
      },
      async (ms) => void rests.push(ms),
    );
    assert.deepEqual(sizes, Array(6).fill(SWEEP_BATCH));
    assert.ok(rests.every((ms) => ms >= 3 * 4 * 0.9));
  });

  it("keeps batches at the pace's own batchRows, walked slices widening to four times that over live rows", async () => {
    const pace: SweepPace = { sliceMs: Infinity, restFactor: 4, batchRows: 100 };
    const sizes: number[] = [];
    let calls = 0;
    await drainInSlices(
      async (size) => (sizes.push(size), calls++ < 3 ? size : 0),
      async () => {},
      pace,
    );
    assert.deepEqual(sizes, [100, 100, 100, 100]);

    const walked: number[] = [];
    const keys = Array.from({ length: 3000 }, (_, i) => String(i).padStart(5, '0'));
    const expired = new Set(keys.slice(0, 1000)); // the first third expired, then only live rows
    const total = await walkInSlices(walkedTable(keys, expired, walked), async () => {}, pace);
    assert.equal(total, 1000);
    assert.ok(
      walked.slice(0, 10).every((size) => size === 100),
      `slices over expired rows: ${walked.join(' ')}`,
    );
    assert.equal(Math.max(...walked), 400);
  });

  it('walks a table to its last key, past slices that delete nothing, resting after each and growing quick slices', async () => {
    // 20,000 keys, one in a hundred expired.
    const keys = Array.from({ length: 20_000 }, (_, i) => `k${String(i).padStart(5, '0')}`);
    const expired = new Set(keys.filter((_, i) => i % 100 === 37));
    const sizes: number[] = [];
    const rests: number[] = [];
    const total = await walkInSlices(walkedTable(keys, expired, sizes), async (ms) => void rests.push(ms), PACE);
    assert.equal(total, 200);
    assert.equal(expired.size, 0, 'every expired key was reached');
    assert.equal(sizes[0], SWEEP_BATCH);
    assert.equal(Math.max(...sizes), SWEEP_WALK_BATCH);
    assert.equal(rests.length, sizes.length - 1, 'a rest after every slice but the last');
  });

  it('keeps a walk over expired rows at a batch of deletions a slice, however fast, when time does not size slices', async () => {
    const sizes: number[] = [];
    const keys = Array.from({ length: 5000 }, (_, i) => String(i).padStart(5, '0'));
    const total = await walkInSlices(walkedTable(keys, 'all', sizes), async () => {}, { sliceMs: Infinity, restFactor: 4 });
    assert.equal(total, 5000);
    assert.ok(
      sizes.every((size) => size === SWEEP_BATCH),
      `slices: ${sizes.join(' ')}`,
    );
  });
});

/**
 * A heap for walkPages, given how many expired rows each page holds: each range deletes the
 * expired rows of its pages (once), noting the range.
 */
function pagedTable(expiredOnPage: number[], ranges: [number, number][]) {
  const left = [...expiredOnPage];
  return async (from: number, until: number) => {
    ranges.push([from, until]);
    let deleted = 0;
    for (let page = from; page < until; page++) {
      deleted += left[page]!;
      left[page] = 0;
    }
    return deleted;
  };
}

describe('sweep by page (PostgreSQL 14 on)', () => {
  const pace: SweepPace = { sliceMs: Infinity, restFactor: 8, batchRows: 100 };

  it('covers every page it was given once, in order, widening over pages of live rows up to SWEEP_MOST_PAGES', async () => {
    // 2,000 pages; a few expired rows on one page in fifty.
    const expired = Array.from({ length: 2000 }, (_, page) => (page % 50 === 7 ? 3 : 0));
    const ranges: [number, number][] = [];
    const rests: number[] = [];
    const total = await walkPages(pagedTable(expired, ranges), expired.length, async (ms) => void rests.push(ms), pace);
    assert.equal(total, 40 * 3);
    assert.deepEqual(ranges[0], [0, 1], 'starts with one page');
    for (let i = 1; i < ranges.length; i++) assert.equal(ranges[i]![0], ranges[i - 1]![1], 'each range starts where the last ended');
    assert.equal(ranges.at(-1)![1], 2000, 'up to the last page');
    assert.equal(Math.max(...ranges.map(([from, until]) => until - from)), SWEEP_MOST_PAGES);
    assert.equal(rests.length, ranges.length - 1, 'a rest after every range but the last');
  });

  it('narrows its ranges to about a batch of deletions where every row is expired', async () => {
    // 200 pages of live rows (one expired row each), then 300 pages of 70 expired rows: the range
    // widened over the first part that enters the second deletes 499, the next is narrowed to
    // 3 pages (210 deletions), then to 1 (70, over half a batch: kept).
    const expired = Array.from({ length: 500 }, (_, page) => (page < 200 ? 1 : 70));
    const ranges: [number, number][] = [];
    const total = await walkPages(pagedTable(expired, ranges), expired.length, async () => {}, pace);
    assert.equal(total, 200 + 300 * 70);
    const dense = ranges.filter(([from]) => from >= 200).map(([from, until]) => until - from);
    assert.ok(dense.length >= 250, `ranges over the expired pages: ${dense.join(' ')}`);
    assert.ok(dense[0] === 3 && dense.slice(1).every((span) => span === 1), `ranges over the expired pages: ${dense.join(' ')}`);
  });

  it('walks nothing on an empty table, and stops after the range in flight once aborted', async () => {
    const ranges: [number, number][] = [];
    assert.equal(await walkPages(pagedTable([], ranges), 0, async () => {}, pace), 0);
    assert.equal(ranges.length, 0);

    const controller = new AbortController();
    const expired = Array.from({ length: 1000 }, () => 1);
    const walk = pagedTable(expired, ranges);
    const total = await walkPages(
      async (from, until) => {
        const deleted = await walk(from, until);
        if (ranges.length === 3) controller.abort();
        return deleted;
      },
      expired.length,
      async () => {},
      pace,
      controller.signal,
    );
    assert.equal(ranges.length, 3, 'no range after the abort');
    assert.equal(total, ranges.at(-1)![1]);
  });
});

describe('SQLite checkpointer', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ca-checkpointer-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('stops after the batch in flight once aborted, with the rows deleted until then', async () => {
    const controller = new AbortController();
    let batches = 0;
    // Batches are resized by how long each took, so the rows are counted as deleted, not assumed.
    let deleted = 0;
    const total = await drainInSlices(
      async (size) => {
        if (++batches === 2) controller.abort(); // while the second batch runs
        if (batches >= 10) return 0; // ends by itself after ten, should the abort be ignored
        deleted += size;
        return size;
      },
      async () => undefined,
      PACE,
      controller.signal,
    );
    assert.equal(batches, 2, 'no batch after the abort');
    assert.equal(total, deleted);
    const walkController = new AbortController();
    const sizes: number[] = [];
    const keys = Array.from({ length: 5000 }, (_, i) => `k${String(i).padStart(5, '0')}`);
    const walk = walkedTable(keys, 'all', sizes);
    const walked = await walkInSlices(
      async (after, size) => {
        const slice = await walk(after, size);
        if (sizes.length === 3) walkController.abort();
        return slice;
      },
      async () => undefined,
      PACE,
      walkController.signal,
    );
    assert.equal(sizes.length, 3, 'no slice after the abort');
    assert.equal(
      walked,
      sizes.reduce((a, b) => a + b, 0),
    );
  });

  it('copies the WAL into the database file from its own thread', async () => {
    const file = path.join(dir, 'wal.db');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0');
    db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)');
    db.pragma('wal_checkpoint(TRUNCATE)');
    const before = fs.statSync(file).size;
    const insert = db.prepare('INSERT INTO t VALUES (?, ?)');
    db.transaction(() => {
      for (let i = 0; i < 5000; i++) insert.run(`k${i}`, 'v'.repeat(200));
    })();
    // Nobody checkpointed: the rows are in the WAL only.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(fs.statSync(file).size, before);

    const checkpointer = await startCheckpointer(file);
    try {
      const deadline = Date.now() + 5000;
      while (fs.statSync(file).size === before && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.ok(fs.statSync(file).size > before + 5000 * 200, 'the pages reached the database file');
    } finally {
      await checkpointer.stop();
      db.close();
    }
  });
});
