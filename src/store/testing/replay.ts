/** Records of use (ReplayStore): an assertion or a DPoP proof accepted once. */
import assert from 'node:assert/strict';
import type { FullStore } from '../store.js';
import { assertCounts, countsAround, type Suite } from './harness.js';
import { NOW } from './records.js';

export function replayTests(suite: Suite): void {
  const { describe, it, itNeeds } = suite;
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  describe('used assertions', () => {
    it('useAssertionId is true the first time, false while the record is kept, true again once it expired', async () => {
      assert.equal(await store.useAssertionId('assertion-1', NOW + 60, NOW), true);
      assert.equal(await store.useAssertionId('assertion-1', NOW + 60, NOW + 30), false, 'a replay');
      assert.equal(await store.useAssertionId('assertion-2', NOW + 60, NOW), true, 'another assertion');
      assert.equal(await store.useAssertionId('assertion-1', NOW + 200, NOW + 60), true, 'a record expired at now counts as none');
      assert.equal(await store.useAssertionId('assertion-1', NOW + 200, NOW + 100), false, 'and the new record holds');
    });

    it('of many concurrent uses of one assertion, exactly one succeeds', async () => {
      const {
        before,
        after,
        result: results,
      } = await countsAround(suite, () => Promise.all(Array.from({ length: 20 }, () => store.useAssertionId('raced', NOW + 60, NOW))));
      assert.equal(results.filter(Boolean).length, 1);
      assertCounts(before, after, { usedAssertions: 1 }, 'one record of it');
    });

    itNeeds('upkeep', 'the sweep removes expired records and keeps live ones', async () => {
      await store.useAssertionId('short', NOW + 10, NOW);
      await store.useAssertionId('long', NOW + 100, NOW);
      await store.sweepExpired(NOW + 50);
      assert.equal(await store.useAssertionId('long', NOW + 100, NOW + 20), false, 'still recorded');
      // Asked as of a time before it expired, only a removed record answers true.
      assert.equal(await store.useAssertionId('short', NOW + 100, NOW + 5), true, 'swept');
    });
  });
}
