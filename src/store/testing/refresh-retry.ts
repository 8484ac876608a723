/** The retry of a refresh answered with the token it issued (the refreshRetry capability, repeatRefresh). */
import assert from 'node:assert/strict';
import { hashSecret } from '../../core/secrets.js';
import { SPENT_KEY_CHARS } from '../internal.js';
import type {
  FullStore,
  GrantRecord,
  RefreshResult,
  RefreshTokenRecord,
  RepeatRefreshRequest,
  RepeatRefreshResult,
  SpentRefreshTokenRecord,
} from '../store.js';
import { assertCounts, countsAround, expectRecord, steps, type Suite } from './harness.js';
import { NOW, makeRefreshToken, makeUpstreamSession, refreshOf, repeatOf } from './records.js';

export function refreshRetryTests(suite: Suite): void {
  const { describe, itNeeds } = suite;
  const { seed, familyOf, family, rotate } = steps(suite);
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  describe('repeatRefresh', () => {
    /** The retry of the refresh that spent `oldHash`, naming `successor` (see repeatOf). */
    async function repeat(
      oldHash: string,
      successor: RefreshTokenRecord,
      now: number,
      spentAfter: number,
      overrides: Partial<RepeatRefreshRequest> = {},
    ): Promise<RepeatRefreshResult> {
      return store.repeatRefresh(repeatOf(oldHash, successor, now, spentAfter, overrides));
    }

    /** The successor's hash an answered retry names. */
    function answered(result: RepeatRefreshResult): string {
      assert.equal(result.status, 'ok');
      return (result as Extract<RepeatRefreshResult, { status: 'ok' }>).successorHash;
    }

    /** The spent record a refused retry reports. */
    function replayed(result: RepeatRefreshResult): SpentRefreshTokenRecord {
      assert.equal(result.status, 'replayed');
      return (result as Extract<RepeatRefreshResult, { status: 'replayed' }>).record;
    }

    /** A token rotated at NOW to `successor`, its grant's only live token. */
    async function rotated(grantOverrides: Partial<GrantRecord> = {}) {
      const { client, user, grant, token: old } = await family(grantOverrides);
      const successor = makeRefreshToken(grant, { expiresAt: NOW + 50_000 });
      expectRecord(await rotate(old.tokenHash, successor, NOW), 'ok');
      return { client, user, grant: { ...grant, accessExpiresAt: NOW + 600 }, old, successor };
    }

    itNeeds('refreshRetry', 'answers with the successor the refresh issued, left live and unchanged, and raises the grant’s access expiry', async () => {
      const { grant, old, successor } = await rotated({ scope: ['read', 'write'] });
      const { before, after, result } = await countsAround(suite, () => repeat(old.tokenHash, successor, NOW + 10, NOW - 50, { accessExpiresAt: NOW + 610 }));
      assertCounts(before, after, {}, 'a retry writes no token');
      assert.deepEqual(result, { status: 'ok', grant: { ...grant, accessExpiresAt: NOW + 610 }, scope: successor.scope, successorHash: successor.tokenHash });
      assert.deepEqual(await store.getRefreshToken(successor.tokenHash), successor);
      assert.equal(await store.findSpentRefreshToken(successor.tokenHash), undefined);
      assert.deepEqual(
        await store.findSpentRefreshToken(old.tokenHash),
        {
          grantId: grant.id,
          clientId: grant.clientId,
          spentAt: NOW,
          expiresAt: old.expiresAt,
          successorUnused: true,
        },
        'the spent record stays as the refresh left it',
      );
      assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, NOW + 610);
    });

    itNeeds('refreshRetry', 'as often as it is asked, concurrently too: the same successor every time, until the successor is used', async () => {
      const { grant, old, successor } = await rotated();
      for (const at of [NOW + 1, NOW + 2]) assert.equal(answered(await repeat(old.tokenHash, successor, at, NOW - 60)), successor.tokenHash);
      const results = await Promise.all(Array.from({ length: 20 }, () => repeat(old.tokenHash, successor, NOW + 3, NOW - 60)));
      assert.deepEqual(results.map(answered), Array(20).fill(successor.tokenHash));
      assert.deepEqual(await store.getRefreshToken(successor.tokenHash), successor);
      const third = makeRefreshToken(grant);
      expectRecord(await rotate(successor.tokenHash, third, NOW + 4), 'ok');
      replayed(await repeat(old.tokenHash, successor, NOW + 5, NOW - 60));
      assert.deepEqual(await store.getRefreshToken(third.tokenHash), third);
    });

    itNeeds(
      'refreshRetry',
      'confirms the successor by its full hash, among those asked for (one per key the server holds), never by its key alone',
      async () => {
        const { client, user, old, successor } = await rotated();
        const other = hashSecret('another token');
        assert.equal(
          answered(await repeat(old.tokenHash, successor, NOW + 1, NOW - 60, { successorHashes: [other, successor.tokenHash] })),
          successor.tokenHash,
        );
        const sameKey = `${successor.tokenHash.slice(0, SPENT_KEY_CHARS)}${'x'.repeat(successor.tokenHash.length - SPENT_KEY_CHARS)}`;
        replayed(await repeat(old.tokenHash, successor, NOW + 1, NOW - 60, { successorHashes: [sameKey, other] }));
        replayed(await repeat(old.tokenHash, successor, NOW + 1, NOW - 60, { successorHashes: [] }));
        const { token: anotherFamilys } = await familyOf(client, user);
        replayed(await repeat(old.tokenHash, successor, NOW + 1, NOW - 60, { successorHashes: [anotherFamilys.tokenHash] }));
      },
    );

    itNeeds('refreshRetry', 'not once the successor was used, nor with the token that followed it', async () => {
      const { grant, old, successor } = await rotated();
      const third = makeRefreshToken(grant);
      expectRecord(await rotate(successor.tokenHash, third, NOW + 1), 'ok');
      assert.deepEqual(replayed(await repeat(old.tokenHash, successor, NOW + 2, NOW - 60)), {
        grantId: grant.id,
        clientId: grant.clientId,
        spentAt: NOW,
        expiresAt: old.expiresAt,
        successorUnused: false,
      });
      replayed(await repeat(old.tokenHash, third, NOW + 2, NOW - 60));
      assert.equal(answered(await repeat(successor.tokenHash, third, NOW + 2, NOW - 60)), third.tokenHash, "the successor's own retry");
    });

    itNeeds('refreshRetry', 'not for a token spent at or before spentAfter, nor one never spent or unknown', async () => {
      const { client, user, old, successor } = await rotated();
      replayed(await repeat(old.tokenHash, successor, NOW + 60, NOW));
      const { token: live } = await familyOf(client, user);
      assert.notEqual((await repeat(live.tokenHash, successor, NOW + 1, NOW - 60)).status, 'ok', 'a live token is not a retry');
      assert.ok(await store.getRefreshToken(live.tokenHash));
      assert.deepEqual(await repeat('nope', successor, NOW + 1, NOW - 60), { status: 'missing' });
      assert.deepEqual(await store.getRefreshToken(successor.tokenHash), successor);
    });

    itNeeds(
      'refreshRetry',
      'not for another client, a revoked grant, an expired successor or an unchecked upstream sign-in; a refusal writes nothing',
      async () => {
        const cases: { why: string; setUp: (family: Awaited<ReturnType<typeof rotated>>) => Promise<Partial<RepeatRefreshRequest>> }[] = [
          { why: 'another client', setUp: async () => ({ clientId: 'someone-else' }) },
          { why: 'a revoked grant', setUp: async ({ grant }) => (await store.revokeGrant(grant.id, NOW), {}) },
          { why: 'an expired successor', setUp: async () => ({ now: NOW + 50_000 }) },
        ];
        for (const { why, setUp } of cases) {
          const family = await rotated();
          const overrides = await setUp(family);
          const { before, after, result } = await countsAround(suite, () =>
            repeat(family.old.tokenHash, family.successor, NOW + 1, NOW - 60, { accessExpiresAt: NOW + 700, ...overrides }),
          );
          assert.equal(result.status, 'replayed', why);
          assertCounts(before, after, {}, `${why}: nothing written`);
          assert.deepEqual(await store.getRefreshToken(family.successor.tokenHash), family.successor, why);
          assert.equal((await store.getGrant(family.grant.id))?.accessExpiresAt, NOW + 600, `${why}: the grant's expiry stays`);
        }
        const { user } = await seed();
        const session = makeUpstreamSession(user.id);
        await store.createUpstreamSession(session);
        const { old, successor } = await rotated({ upstreamSessionId: session.id });
        replayed(await repeat(old.tokenHash, successor, NOW + 1, NOW - 60, { upstreamChecked: false }));
        assert.equal(answered(await repeat(old.tokenHash, successor, NOW + 1, NOW - 60, { upstreamChecked: true })), successor.tokenHash);
      },
    );

    itNeeds(
      'refreshRetry',
      'a retry racing the successor’s own rotation comes first (answered with the successor, which the rotation then spends) or after (refused): one live token',
      async () => {
        for (let round = 0; round < 10; round++) {
          const { grant, old, successor } = await rotated();
          const next = makeRefreshToken(grant);
          const retrying = () => repeat(old.tokenHash, successor, NOW + 1, NOW - 60);
          const rotating = () => store.refreshGrant(refreshOf(successor.tokenHash, next, NOW + 1));
          const [retried, rotation] =
            round % 2 === 0
              ? await Promise.all([retrying(), rotating()])
              : ((await Promise.all([rotating(), retrying()])).reverse() as [RepeatRefreshResult, RefreshResult]);
          assert.equal(rotation.status, 'ok', `round ${round}`);
          if (retried.status === 'ok') assert.equal(retried.successorHash, successor.tokenHash, `round ${round}`);
          else assert.equal(retried.status, 'replayed', `round ${round}`);
          assert.equal(await store.getRefreshToken(successor.tokenHash), undefined, `round ${round}`);
          assert.deepEqual(await store.getRefreshToken(next.tokenHash), next, `round ${round}: the rotation's token, the family's only live one`);
        }
      },
    );

    itNeeds('refreshRetry', 'mutating a repeatRefresh result does not change the store', async () => {
      const { grant, old, successor } = await rotated();
      const repeated = await store.repeatRefresh(repeatOf(old.tokenHash, successor, NOW + 1, NOW - 60));
      assert.equal(repeated.status, 'ok');
      if (repeated.status === 'ok') {
        repeated.scope.push('admin');
        repeated.grant.scope.push('admin');
      }
      assert.deepEqual((await store.getRefreshToken(successor.tokenHash))?.scope, successor.scope);
      assert.deepEqual((await store.getGrant(grant.id))?.scope, grant.scope);
    });
  });
}
