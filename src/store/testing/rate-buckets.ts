/** Shared rate-limit buckets (the rateBuckets capability). */
import assert from 'node:assert/strict';
import type { FullStore } from '../store.js';
import type { Suite } from './harness.js';
import { NOW, uniqueId } from './records.js';

export function rateBucketTests(suite: Suite): void {
  const { describe, itNeeds } = suite;
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  describe('shared rate-limit buckets', () => {
    const T = NOW * 1000;

    // Unique keys: a database may outlive one test.
    let bucket = { key: '', burst: 3, perSecond: 1 };
    suite.eachStore(() => {
      bucket = { ...bucket, key: `register:${uniqueId('bucket')}:${Math.random()}` };
    });

    itNeeds('rateBuckets', 'a new bucket starts full; grants what it holds, up to the want; refills with time, never past the burst', async () => {
      assert.deepEqual(await store.takeRateTokens({ ...bucket, want: 2, nowMs: T }), { granted: 2, level: 1 });
      assert.deepEqual(await store.takeRateTokens({ ...bucket, want: 2, nowMs: T }), { granted: 1, level: 0 });
      assert.deepEqual(await store.takeRateTokens({ ...bucket, want: 1, nowMs: T + 500 }), { granted: 0, level: 0.5 });
      assert.deepEqual(await store.takeRateTokens({ ...bucket, want: 1, nowMs: T + 1000 }), { granted: 1, level: 0 });
      // A clock behind the last writer's (another replica's) refills nothing and takes the bucket back in time to no one.
      assert.deepEqual(await store.takeRateTokens({ ...bucket, want: 1, nowMs: T }), { granted: 0, level: 0 });
      assert.deepEqual(await store.takeRateTokens({ ...bucket, want: 5, nowMs: T + 1_000_000 }), { granted: 3, level: 0 });
      // Other keys are other buckets.
      assert.deepEqual(await store.takeRateTokens({ ...bucket, key: `${bucket.key}-other`, want: 1, nowMs: T }), { granted: 1, level: 2 });
    });

    itNeeds('rateBuckets', 'concurrent takes never grant more than the bucket holds', async () => {
      const results = await Promise.all(Array.from({ length: 20 }, () => store.takeRateTokens({ ...bucket, burst: 7, want: 1, nowMs: T })));
      assert.equal(
        results.reduce((sum, r) => sum + r.granted, 0),
        7,
      );
    });

    itNeeds(['rateBuckets', 'upkeep'], 'a bucket full again is swept; one still refilling is kept', async () => {
      await store.sweepExpired(NOW + 1_000_000);
      await store.takeRateTokens({ ...bucket, want: 3, nowMs: T });
      assert.equal(await store.sweepExpired(NOW + 2), 0);
      assert.equal(await store.sweepExpired(NOW + 3), 1);
      // Swept means full: the next take sees a new bucket, as it would have seen a refilled one.
      assert.deepEqual(await store.takeRateTokens({ ...bucket, want: 3, nowMs: T + 3000 }), { granted: 3, level: 0 });
    });
  });
}
