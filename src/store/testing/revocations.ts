/** The revocation feed (the revocationFeed capability): what resource servers must refuse, recorded while it matters. */
import assert from 'node:assert/strict';
import type { FullStore } from '../store.js';
import { expectRecord, steps, type Suite } from './harness.js';
import { NOW, makeCode, makeConsent, makeGrant, makeRefreshToken } from './records.js';

export function revocationFeedTests(suite: Suite): void {
  const { describe, itNeeds } = suite;
  const { parties, seed, family, rotate } = steps(suite);
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  describe('revocations', () => {
    itNeeds('revocationFeed', 'a revoked access token is listed once, at its first revocation', async () => {
      await store.revokeAccessToken('jti-1', NOW + 600, NOW + 1);
      await store.revokeAccessToken('jti-1', NOW + 600, NOW + 2);
      await store.revokeAccessToken('jti-expired', NOW, NOW);
      assert.deepEqual(await store.listRevocations(0, NOW), [{ kind: 'token', id: 'jti-1', revokedAt: NOW + 1, expiresAt: NOW + 600 }]);
    });

    itNeeds('revocationFeed', 'revokeGrant records the grant until the latest exp of its access tokens, once', async () => {
      const { grant, token } = await family({}, {}, NOW + 300);
      const second = makeRefreshToken(grant);
      expectRecord(await rotate(token.tokenHash, second, NOW, NOW + 600), 'ok');
      expectRecord(await rotate(second.tokenHash, makeRefreshToken(grant), NOW, NOW - 5), 'ok');
      assert.deepEqual(await store.listRevocations(0, NOW), []);
      await store.revokeGrant(grant.id, NOW + 1);
      await store.revokeGrant(grant.id, NOW + 2);
      assert.deepEqual(await store.listRevocations(0, NOW + 2), [{ kind: 'grant', id: grant.id, revokedAt: NOW + 1, expiresAt: NOW + 600 }]);
    });

    itNeeds('revocationFeed', 'records nothing for a grant whose access tokens have all expired, or that issued none (nothing left to refuse)', async () => {
      const { grant } = await family({}, {}, NOW);
      await store.revokeGrant(grant.id, NOW);
      const quiet = (await seed()).grant;
      await store.revokeGrant(quiet.id, NOW);
      assert.deepEqual(await store.listRevocations(0, NOW), []);
    });

    itNeeds('revocationFeed', 'lists from a cursor (revoked at or after it) and only what still affects an unexpired token', async () => {
      await store.revokeAccessToken('early', NOW + 100, NOW + 10);
      await store.revokeAccessToken('late', NOW + 900, NOW + 20);
      assert.deepEqual(
        (await store.listRevocations(0, NOW + 20)).map((r) => [r.kind, r.id, r.revokedAt, r.expiresAt]),
        [
          ['token', 'early', NOW + 10, NOW + 100],
          ['token', 'late', NOW + 20, NOW + 900],
        ],
      );
      assert.deepEqual(
        (await store.listRevocations(NOW + 11, NOW + 20)).map((r) => r.id),
        ['late'],
      );
      assert.deepEqual(
        (await store.listRevocations(0, NOW + 100)).map((r) => r.id),
        ['late'],
      );
    });

    itNeeds(
      ['administration', 'revocationFeed'],
      'revokeConsents, deleteClient and deleteUser record the grants they end, with tokens still in hand',
      async () => {
        const { client, user, grant } = await family({}, {}, NOW + 500);
        await store.saveConsent(makeConsent(user.id, client.clientId));
        await store.revokeConsents(user.id, client.clientId, NOW + 1);
        const second = await family({}, {}, NOW + 500);
        await store.deleteClient(second.client.clientId, NOW + 2);
        const third = await family({}, {}, NOW + 500);
        await store.deleteUser(third.user.username, NOW + 3);
        assert.deepEqual(
          (await store.listRevocations(0, NOW)).map((r) => [r.id, r.revokedAt]),
          [
            [grant.id, NOW + 1],
            [second.grant.id, NOW + 2],
            [third.grant.id, NOW + 3],
          ],
        );
      },
    );

    itNeeds('revocationFeed', 'a redemption racing a revocation: either it is refused, or the recorded revocation covers its access token', async () => {
      const { client, user } = await parties();
      for (let round = 0; round < 10; round++) {
        const grant = makeGrant(client.clientId, user.id);
        const code = makeCode(grant);
        await store.createGrant(grant, code);
        const redeeming = store.redeemAuthorizationCode(code.codeHash, NOW, () => ({
          accessExpiresAt: NOW + 600 + round,
          refreshToken: makeRefreshToken(grant),
        }));
        const revoking = round % 2 === 0 ? store.revokeGrant(grant.id, NOW) : Promise.resolve().then(() => store.revokeGrant(grant.id, NOW));
        const [result] = await Promise.all([redeeming, revoking]);
        const recorded = (await store.listRevocations(0, NOW)).find((r) => r.id === grant.id);
        if (result.status === 'ok') assert.equal(recorded?.expiresAt, NOW + 600 + round, 'the issued token is covered');
        else assert.equal(result.status, 'revoked');
      }
    });

    itNeeds(['revocationFeed', 'upkeep'], 'the sweep removes a revocation a minute after its last token expired', async () => {
      const { grant } = await family({}, {}, NOW + 100);
      await store.revokeGrant(grant.id, NOW);
      await store.sweepExpired(NOW + 159);
      assert.equal((await store.listRevocations(0, NOW)).length, 1);
      await store.sweepExpired(NOW + 160);
      assert.equal((await store.listRevocations(0, NOW)).length, 0);
    });
  });
}
