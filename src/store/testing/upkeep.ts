/** Upkeep (the upkeep capability): what sweepExpired deletes, in paced batches where the store says so. */
import assert from 'node:assert/strict';
import type { FullStore, RefreshTokenRecord } from '../store.js';
import { assertCounts, countsAround, expectRecord, inBatches, steps, type Suite } from './harness.js';
import { NOW, issueFirstToken, makeGrant, makeInteraction, makeRefreshToken, makeSession } from './records.js';

export function upkeepTests(suite: Suite): void {
  const { describe, itNeeds } = suite;
  const { parties, seed, familyOf, consume, rotate } = steps(suite);
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  describe('sweepExpired', () => {
    /** `count` grants of one client and user, each with a refresh token (`tokenOverrides`) issued at NOW. */
    async function families(count: number, tokenOverrides: Partial<RefreshTokenRecord>) {
      const { client, user } = await parties();
      return inBatches(count, async () => (await familyOf(client, user, {}, tokenOverrides)).token);
    }

    itNeeds('upkeep', 'sweeps more rows than one batch holds, all of them', async () => {
      const bulk = await families(1200, { expiresAt: NOW - 1 });
      const [live] = await families(1, { expiresAt: NOW + 60 });
      assert.ok((await store.sweepExpired(NOW)) >= 1200);
      assert.equal(await store.getRefreshToken(bulk[0]!.tokenHash), undefined);
      assert.equal(await store.getRefreshToken(bulk[1199]!.tokenHash), undefined);
      assert.ok(await store.getRefreshToken(live!.tokenHash));
    });

    itNeeds('upkeep', 'an aborted sweep deletes nothing more, and the next sweep takes all that is left', async () => {
      const expired = await families(30, { expiresAt: NOW - 1 });
      const controller = new AbortController();
      controller.abort();
      assert.equal(await store.sweepExpired(NOW, { signal: controller.signal }), 0);
      assert.ok(await store.getRefreshToken(expired[0]!.tokenHash), 'still there after the aborted sweep');
      assert.ok((await store.sweepExpired(NOW)) >= 30);
      for (const token of expired) assert.equal(await store.getRefreshToken(token.tokenHash), undefined);
    });

    itNeeds('upkeep', 'a sweep rests through the pause it is given: held there, it goes on once the pause resolves', async () => {
      await families(1200, { expiresAt: NOW - 1 });
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const asked: number[] = [];
      let finished = false;
      const pause = (ms: number) => {
        asked.push(ms);
        return held;
      };
      const sweep = store.sweepExpired(NOW, { pause }).then((rows) => ((finished = true), rows));
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (suite.batchedSweep) {
        assert.ok(asked.length > 0, 'paused after a batch');
        assert.equal(finished, false, 'held at the pause');
      }
      release();
      assert.ok((await sweep) >= 1200);
    });

    itNeeds('upkeep', 'finds expired tokens and spent records among more live ones than a slice of the walk holds, all of them', async () => {
      // Random hashes: the expired lie scattered between the live along the key.
      const { client, user } = await parties();
      const live = await inBatches(2500, async () => (await familyOf(client, user, {}, { expiresAt: NOW + 60 })).token);
      const expired = await inBatches(60, async () => familyOf(client, user, {}, { expiresAt: NOW - 1 }));
      const rotated = expired.slice(0, 20);
      for (const { grant, token } of rotated) expectRecord(await rotate(token.tokenHash, makeRefreshToken(grant, { expiresAt: NOW + 60 }), NOW - 100), 'ok');
      // The 20 rotated went to spent records (expired with their tokens); 40 expired tokens are
      // left. The codes redeemed at NOW, and the grants made then, are not yet due.
      assert.equal(await store.sweepExpired(NOW), 60);
      for (const { token } of expired) assert.equal(await store.getRefreshToken(token.tokenHash), undefined);
      for (const { token } of rotated) assert.equal(await store.findSpentRefreshToken(token.tokenHash), undefined);
      for (const token of live) assert.ok(await store.getRefreshToken(token.tokenHash));
    });

    itNeeds('upkeep', 'walks old grants in slices with rests between them, finding the empty ones among those still in use', async () => {
      const { client, user } = await seed();
      // 3,000 old grants kept by an access token still valid; one in forty of them empty and done
      // (fewer than a batch of deletions, so that only a walk rests among them).
      const grants = Array.from({ length: 3000 }, (_, i) =>
        makeGrant(client.clientId, user.id, { createdAt: NOW - 1000, accessExpiresAt: i % 40 === 3 ? NOW - 1 : NOW + 60 }),
      );
      await inBatches(grants.length, (i) => store.createGrant(grants[i]!));
      let rests = 0;
      assert.equal(await store.sweepExpired(NOW, { pause: async () => void rests++ }), 75);
      // One statement looking for empty grants among those in use read every one of them (1M:
      // 640 ms on SQLite's event loop). A sweep in one pass has no rests.
      if (suite.batchedSweep) assert.ok(rests >= 2, `rests: ${rests}`);
      for (const [i, grant] of grants.entries()) assert.equal((await store.getGrant(grant.id)) === undefined, i % 40 === 3, `grant ${i}`);
    });

    itNeeds('upkeep', 'removes expired rows and orphaned old grants, keeps live ones, and counts', async () => {
      const { client, user } = await seed();
      const old = NOW - 1000;
      const deadGrant = makeGrant(client.clientId, user.id, { createdAt: old });
      const emptyOldGrant = makeGrant(client.clientId, user.id, { createdAt: old });
      const emptyNewGrant = makeGrant(client.clientId, user.id, { createdAt: NOW - 30 });
      const liveGrant = makeGrant(client.clientId, user.id, { createdAt: old });
      // Only an access token in hand (client_credentials): kept until it expires.
      const accessOnlyGrant = makeGrant(client.clientId, null, { createdAt: old, accessExpiresAt: NOW + 60 });
      const accessExpiredGrant = makeGrant(client.clientId, null, { createdAt: old, accessExpiresAt: NOW });
      for (const grant of [emptyOldGrant, emptyNewGrant, accessOnlyGrant, accessExpiredGrant]) await store.createGrant(grant);

      // Codes redeemed a little before NOW: the dead one expired at NOW, the live one a second later.
      const deadRefresh = makeRefreshToken(deadGrant, { expiresAt: NOW - 1 });
      const deadCode = await issueFirstToken(store, deadGrant, deadRefresh, { at: NOW - 10, code: { expiresAt: NOW } });
      const liveRefresh = makeRefreshToken(liveGrant);
      const liveCode = await issueFirstToken(store, liveGrant, liveRefresh, { at: NOW - 10, code: { expiresAt: NOW + 1 } });
      const deadSession = makeSession(user.id, { expiresAt: NOW });
      const deadInteraction = makeInteraction(client.clientId, { expiresAt: NOW - 1 });
      const liveSession = makeSession(user.id);
      const liveInteraction = makeInteraction(client.clientId);
      await store.createSession(deadSession);
      await store.createInteraction(deadInteraction);
      await store.createSession(liveSession);
      await store.createInteraction(liveInteraction);

      // 4 expired rows + the dead grant + the old empty grant + the one whose access token expired (the initial seed grant is new).
      const { before, after, result: swept } = await countsAround(suite, () => store.sweepExpired(NOW));
      assert.equal(swept, 7);
      assertCounts(
        before,
        after,
        { authorizationCodes: -1, refreshTokens: -1, sessions: -1, interactions: -1, grants: -3 },
        'what the sweep counts is what went',
      );

      assert.equal((await consume(deadCode.codeHash, NOW - 10)).status, 'missing');
      assert.equal(await store.getRefreshToken(deadRefresh.tokenHash), undefined);
      assert.equal(await store.getGrant(accessExpiredGrant.id), undefined);
      assert.equal(await store.getSession(deadSession.idHash, NOW - 10), undefined);
      assert.equal(await store.getInteraction(deadInteraction.id, NOW - 10), undefined);
      assert.equal(await store.getGrant(deadGrant.id), undefined);
      assert.equal(await store.getGrant(emptyOldGrant.id), undefined);

      assert.ok(await store.getGrant(emptyNewGrant.id));
      assert.ok(await store.getGrant(liveGrant.id));
      assert.ok(await store.getRefreshToken(liveRefresh.tokenHash));
      assert.ok(await store.getGrant(accessOnlyGrant.id));
      assert.ok(await store.getSession(liveSession.idHash, NOW));
      assert.ok(await store.getInteraction(liveInteraction.id, NOW));
      expectRecord(await consume(liveCode.codeHash, NOW), 'replayed');

      assert.equal(await store.sweepExpired(NOW), 0);
    });

    itNeeds('upkeep', 'sweeps spent records when their token would have expired, and grants that only spent records remember', async () => {
      const { client, user } = await seed({ createdAt: NOW });
      const ended = makeGrant(client.clientId, user.id, { createdAt: NOW - 1000 });
      const going = makeGrant(client.clientId, user.id, { createdAt: NOW - 1000 });
      const endedToken = makeRefreshToken(ended, { expiresAt: NOW + 10 });
      const endedNext = makeRefreshToken(ended, { expiresAt: NOW + 10 });
      const goingToken = makeRefreshToken(going, { expiresAt: NOW + 100 });
      const goingNext = makeRefreshToken(going, { expiresAt: NOW + 200 });
      // Their codes, redeemed a minute before NOW, expire at NOW.
      await issueFirstToken(store, ended, endedToken, { at: NOW - 60 });
      await issueFirstToken(store, going, goingToken, { at: NOW - 60 });
      // Access tokens as short-lived as the ended family's refresh tokens: a grant goes only once they expired too.
      expectRecord(await rotate(endedToken.tokenHash, endedNext, NOW, NOW + 10), 'ok');
      expectRecord(await rotate(goingToken.tokenHash, goingNext, NOW, NOW + 10), 'ok');

      // Past the ended family's tokens, spent and live, and both codes: all go, then its grant.
      assert.equal(await store.sweepExpired(NOW + 10), 5);
      assert.equal(await store.findSpentRefreshToken(endedToken.tokenHash), undefined);
      assert.equal(await store.getGrant(ended.id), undefined);
      assert.ok(await store.findSpentRefreshToken(goingToken.tokenHash), 'a spent record is kept until its token would have expired');
      assert.equal((await rotate(goingToken.tokenHash, makeRefreshToken(going), NOW + 50)).status, 'replayed');

      // The spent record, and the seed's grant, empty and now old enough.
      assert.equal(await store.sweepExpired(NOW + 100), 2);
      assert.equal(await store.findSpentRefreshToken(goingToken.tokenHash), undefined);
      assert.ok(await store.getRefreshToken(goingNext.tokenHash));
    });

    itNeeds('upkeep', 'returns 0 on an empty store', async () => {
      assert.equal(await store.sweepExpired(NOW), 0);
    });
  });
}
