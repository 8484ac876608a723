/**
 * The batching of group-commit.ts on its own: which items go together, with a commit that only
 * records its batches (the databases' side is test/store/group-commit.test.ts and
 * postgres-refresh-batch.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { groupCommit, type Outcome } from '../../src/store/sql/group-commit.js';

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A commit that answers each item doubled once `release` is called for its batch. */
function recordingCommit() {
  const batches: number[][] = [];
  const pending: Array<() => void> = [];
  const commit = (items: number[]): Promise<Outcome[]> => {
    batches.push(items);
    return new Promise((resolve) => pending.push(() => resolve(items.map((n) => ({ ok: true, value: n * 2 })))));
  };
  /** Lets the oldest running batch finish, and the next batch (scheduled as it settles) start. */
  const release = async (): Promise<void> => {
    pending.shift()!();
    await nextTurn();
    await nextTurn();
  };
  return { batches, commit, release, running: () => pending.length };
}

describe('group commit scheduling', () => {
  it('one batch in flight at most: what arrives meanwhile waits, and goes as one batch when it finishes', async () => {
    const c = recordingCommit();
    const batcher = groupCommit<number>(c.commit, (err) => err, { inFlight: 1 });
    const first = batcher.transaction<number>(1);
    assert.deepEqual(c.batches, [[1]], 'a first item under light load goes at once, alone');
    await nextTurn();
    const second = [batcher.transaction<number>(2), batcher.transaction<number>(3)];
    await nextTurn();
    const third = batcher.transaction<number>(4);
    await nextTurn();
    assert.deepEqual(c.batches, [[1]], 'nothing else starts while a batch runs');
    await c.release();
    assert.equal(await first, 2);
    assert.deepEqual(c.batches, [[1], [2, 3, 4]], 'the items of several turns go together');
    await c.release();
    assert.deepEqual(await Promise.all([...second, third]), [4, 6, 8]);
    assert.equal(c.running(), 0);
  });

  it("unbounded by default: each turn's items start at once, beside the batches still running", async () => {
    const c = recordingCommit();
    const batcher = groupCommit<number>(c.commit, (err) => err);
    const answers = [batcher.transaction<number>(1), batcher.transaction<number>(2)];
    await nextTurn();
    answers.push(batcher.transaction<number>(3));
    await nextTurn();
    assert.deepEqual(c.batches, [[1], [2], [3]]);
    for (let i = 0; i < 3; i++) await c.release();
    assert.deepEqual(await Promise.all(answers), [2, 4, 6]);
  });

  it('at most `most` items a batch, and flush() waits for everything queued, through the bound', async () => {
    const c = recordingCommit();
    const batcher = groupCommit<number>(c.commit, (err) => err, { inFlight: 1, most: 3 });
    const answers = [1, 2, 3, 4, 5, 6, 7].map((n) => batcher.transaction<number>(n));
    let flushed = false;
    const flushing = batcher.flush().then(() => (flushed = true));
    while (c.running() > 0 || !flushed) {
      if (c.running() > 0) await c.release();
      else await nextTurn();
    }
    await flushing;
    assert.deepEqual(c.batches, [[1], [2, 3, 4], [5, 6, 7]]);
    assert.deepEqual(await Promise.all(answers), [2, 4, 6, 8, 10, 12, 14]);
  });

  it('a batch that fails as a whole rejects each of its items, with the translated error, and the next batch goes on', async () => {
    let fail = true;
    const batcher = groupCommit<number>(
      async (items) => {
        if (fail) throw new Error('lost');
        return items.map((n) => ({ ok: true, value: n }));
      },
      (err) => new Error(`translated: ${(err as Error).message}`),
      { inFlight: 1 },
    );
    const failed = await Promise.allSettled([batcher.transaction(1), batcher.transaction(2)]);
    assert.deepEqual(
      failed.map((r) => r.status === 'rejected' && (r.reason as Error).message),
      ['translated: lost', 'translated: lost'],
    );
    fail = false;
    assert.equal(await batcher.transaction(3), 3);
  });
});
