/** A refresh and the record of the assertion sent with it (a DPoP proof) in one transaction (the refreshWithAssertion capability). */
import assert from 'node:assert/strict';
import { isStoreConflict, type AssertionUse, type FullStore, type RefreshTokenRecord } from '../store.js';
import { assertCounts, countsAround, steps, type Suite } from './harness.js';
import { NOW, makeRefreshToken, refreshOf, uniqueId } from './records.js';

export function refreshWithAssertionTests(suite: Suite): void {
  const { describe, itNeeds } = suite;
  const { family } = steps(suite);
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  const assertion = (): AssertionUse => ({ key: uniqueId('proof'), expiresAt: NOW + 360 });
  const refresh = (oldHash: string, next: RefreshTokenRecord, used: AssertionUse, now = NOW) =>
    store.refreshGrantWithAssertion(refreshOf(oldHash, next, now), used);

  describe('refreshGrantWithAssertion', () => {
    itNeeds('refreshWithAssertion', 'refreshes as refreshGrant does and keeps the record: the assertion again changes nothing', async () => {
      const { grant, token: old } = await family({ scope: ['read'] });
      const next = makeRefreshToken(grant);
      const used = assertion();
      const { before, after, result } = await countsAround(suite, () => refresh(old.tokenHash, next, used));
      assertCounts(before, after, { spentRefreshTokens: 1, usedAssertions: 1 }, 'one rotation and one record, in one step');
      assert.deepEqual(result, { status: 'ok', grant: { ...grant, accessExpiresAt: NOW + 600 }, scope: ['read'] });
      assert.equal(await store.useAssertionId(used.key, used.expiresAt, NOW + 1), false, 'the record is kept');

      // The same assertion with the new token: refused before the token is looked at.
      const { grant: other, token: live } = await family();
      assert.deepEqual(await refresh(live.tokenHash, makeRefreshToken(other), used, NOW + 1), { status: 'assertion-used' });
      assert.deepEqual(await store.getRefreshToken(live.tokenHash), live, 'the token is left unspent');
      assert.equal(await store.findSpentRefreshToken(live.tokenHash), undefined);
    });

    itNeeds('refreshWithAssertion', 'an assertion recorded by useAssertionId is refused too, and one whose record expired is taken', async () => {
      const { grant, token: old } = await family();
      const used = assertion();
      assert.equal(await store.useAssertionId(used.key, NOW + 60, NOW), true);
      assert.deepEqual(await refresh(old.tokenHash, makeRefreshToken(grant), used, NOW + 30), { status: 'assertion-used' });
      assert.deepEqual(await store.getRefreshToken(old.tokenHash), old);
      assert.equal((await refresh(old.tokenHash, makeRefreshToken(grant), used, NOW + 60)).status, 'ok', 'a record expired at now counts as none');
    });

    itNeeds('refreshWithAssertion', 'a refresh refused for its token keeps the record all the same', async () => {
      const { grant, token: old } = await family();
      const next = makeRefreshToken(grant);
      expectStatus(await refresh(old.tokenHash, next, assertion()), 'ok');
      for (const [presented, status] of [
        [old.tokenHash, 'replayed'],
        ['no-such-token', 'missing'],
      ] as const) {
        const used = assertion();
        expectStatus(await refresh(presented, makeRefreshToken(grant), used), status);
        assert.equal(await store.useAssertionId(used.key, used.expiresAt, NOW), false, `${status}: the record is kept`);
      }
    });

    itNeeds('refreshWithAssertion', 'a refresh that fails as a whole (a new token whose hash is taken) keeps no record', async () => {
      const { grant, token: old } = await family();
      const { token: taken } = await family();
      const used = assertion();
      await assert.rejects(refresh(old.tokenHash, { ...makeRefreshToken(grant), tokenHash: taken.tokenHash }, used), isStoreConflict);
      assert.deepEqual(await store.getRefreshToken(old.tokenHash), old, 'the token is left unspent');
      assert.equal(await store.useAssertionId(used.key, used.expiresAt, NOW), true, 'and no record kept');
    });

    itNeeds('refreshWithAssertion', 'of concurrent refreshes of several tokens with one assertion, exactly one goes', async () => {
      const families = await Promise.all(Array.from({ length: 8 }, () => family()));
      const used = assertion();
      const results = await Promise.all(families.map(({ grant, token }) => refresh(token.tokenHash, makeRefreshToken(grant), used)));
      assert.deepEqual(results.map((result) => result.status).sort(), [...Array(7).fill('assertion-used'), 'ok']);
      const live = await Promise.all(families.map(({ token }) => store.getRefreshToken(token.tokenHash)));
      assert.equal(live.filter((token) => token === undefined).length, 1, 'one token spent');
    });
  });
}

function expectStatus(result: { status: string }, status: string): void {
  assert.equal(result.status, status);
}
