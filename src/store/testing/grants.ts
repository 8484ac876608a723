/** Grants (GrantStore): created with their code, the code redeemed once, refresh tokens rotated once, grants and access tokens revoked. */
import assert from 'node:assert/strict';
import { hashSecret } from '../../core/secrets.js';
import { SPENT_KEY_CHARS } from '../internal.js';
import { isStoreConflict, type AuthorizationCodeRecord, type FullStore } from '../store.js';
import { assertCounts, countsAround, expectRecord, steps, type Suite } from './harness.js';
import { NOW, makeCode, makeGrant, makeRefreshToken, makeUpstreamSession, refreshOf } from './records.js';

export function grantTests(suite: Suite): void {
  const { describe, it, itNeeds } = suite;
  const { parties, seed, familyOf, family, consume, rotate } = steps(suite);
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  describe('grants', () => {
    it('round-trips a user grant and a client_credentials grant', async () => {
      const { client, grant } = await seed();
      assert.deepEqual(await store.getGrant(grant.id), grant);
      const machine = makeGrant(client.clientId, null, { scope: [] });
      await store.createGrant(machine);
      assert.deepEqual(await store.getGrant(machine.id), machine);
      assert.equal(await store.getGrant('nope'), undefined);
    });

    it('revokes once: the first revocation time stays', async () => {
      const { grant } = await seed();
      await store.revokeGrant(grant.id, NOW + 1);
      await store.revokeGrant(grant.id, NOW + 2);
      assert.equal((await store.getGrant(grant.id))?.revokedAt, NOW + 1);
      await store.revokeGrant('nope', NOW);
    });

    it('refuses a grant for an unknown client or user', async () => {
      const { client, user } = await seed();
      await assert.rejects(store.createGrant(makeGrant('no-such-client', user.id)));
      await assert.rejects(store.createGrant(makeGrant(client.clientId, 'no-such-user')));
    });

    it('refuses a duplicate grant id', async () => {
      const { grant } = await seed();
      await assert.rejects(store.createGrant(grant), isStoreConflict);
    });

    it('creates a grant with its code in one step, or neither when the code is refused', async () => {
      const { client, user } = await seed();
      const grant = makeGrant(client.clientId, user.id);
      const code = makeCode(grant);
      await store.createGrant(grant, code);
      assert.equal((await store.getGrant(grant.id))?.id, grant.id);
      assert.equal((await consume(code.codeHash, NOW)).status, 'ok');

      // The same code hash again, for a new grant: the conflict leaves no grant behind.
      const before = await suite.counts();
      const orphan = makeGrant(client.clientId, user.id);
      await assert.rejects(store.createGrant(orphan, { ...code, grantId: orphan.id }), isStoreConflict);
      assert.equal(await store.getGrant(orphan.id), undefined);
      // A code naming a grant that does not exist is refused, and the grant with it.
      const stray = makeGrant(client.clientId, user.id);
      await assert.rejects(store.createGrant(stray, makeCode({ ...stray, id: 'no-such-grant' })));
      assert.equal(await store.getGrant(stray.id), undefined);
      assertCounts(before, await suite.counts(), {}, 'nothing written');
    });
  });

  describe('authorization codes', () => {
    /** A grant saved with a code (`overrides`), the code unused. */
    async function withCode(overrides: Partial<AuthorizationCodeRecord> = {}) {
      const { client, user } = await parties();
      const grant = makeGrant(client.clientId, user.id);
      const code = makeCode(grant, overrides);
      await store.createGrant(grant, code);
      return { grant, code };
    }

    it('is consumed once, then reported as replayed', async () => {
      const { code } = await withCode();
      const first = expectRecord(await consume(code.codeHash, NOW + 1), 'ok');
      assert.deepEqual(first, { ...code, consumedAt: NOW + 1 });
      const second = expectRecord(await consume(code.codeHash, NOW + 2), 'replayed');
      assert.equal(second.consumedAt, NOW + 1);
    });

    it('is expired at and after expiresAt, and stays unused', async () => {
      const { code } = await withCode({ expiresAt: NOW + 60 });
      assert.deepEqual(expectRecord(await consume(code.codeHash, NOW + 60), 'expired'), code);
      assert.equal((await consume(code.codeHash, NOW + 600)).status, 'expired');
    });

    it('a used code stays a replay after it expires', async () => {
      const { code } = await withCode({ expiresAt: NOW + 60 });
      expectRecord(await consume(code.codeHash, NOW), 'ok');
      expectRecord(await consume(code.codeHash, NOW + 120), 'replayed');
    });

    it("keeps the authorization request's nonce with the code, and none when it had none", async () => {
      const { code } = await withCode({ nonce: 'n-0S6_WzA2Mj' });
      assert.equal(expectRecord(await consume(code.codeHash, NOW), 'ok').nonce, 'n-0S6_WzA2Mj');
      const { code: without } = await withCode();
      assert.equal(expectRecord(await consume(without.codeHash, NOW), 'ok').nonce, null);
    });

    it('is missing when unknown', async () => {
      assert.deepEqual(await consume('nope', NOW), { status: 'missing' });
    });

    it('is not consumed once its grant is revoked, and says so', async () => {
      const { grant, code } = await withCode();
      await store.revokeGrant(grant.id, NOW);
      assert.deepEqual(expectRecord(await consume(code.codeHash, NOW + 1), 'revoked'), code);
      // Still unused: the refusal did not spend it.
      assert.equal((await consume(code.codeHash, NOW + 2)).status, 'revoked');
    });

    it('redeems a code with its tokens in one step; a refusal still uses the code, a throw uses nothing', async () => {
      const { code: refused } = await withCode();
      assert.equal((await store.redeemAuthorizationCode(refused.codeHash, NOW, () => undefined)).status, 'ok');
      assert.equal((await consume(refused.codeHash, NOW)).status, 'replayed');

      const { grant, code: thrown } = await withCode();
      await assert.rejects(
        store.redeemAuthorizationCode(thrown.codeHash, NOW, () => {
          throw new Error('no');
        }),
        /no/,
      );
      const accepted = makeRefreshToken(grant);
      const result = await store.redeemAuthorizationCode(thrown.codeHash, NOW, (record) => {
        assert.equal(record.codeHash, thrown.codeHash);
        return { accessExpiresAt: NOW + 600, refreshToken: accepted };
      });
      assert.equal(result.status, 'ok');
      assert.deepEqual(await store.getRefreshToken(accepted.tokenHash), accepted);
      assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, NOW + 600);
    });

    it('a redemption whose refresh token is taken issues nothing and leaves the code unused', async () => {
      const { token: taken } = await family();
      const { grant, code } = await withCode();
      const before = await suite.counts();
      await assert.rejects(
        store.redeemAuthorizationCode(code.codeHash, NOW, () => ({ accessExpiresAt: NOW + 600, refreshToken: { ...taken, grantId: grant.id } })),
        isStoreConflict,
      );
      assertCounts(before, await suite.counts(), {}, 'nothing written');
      assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, null);
      assert.equal((await consume(code.codeHash, NOW)).status, 'ok');
    });

    it('50 concurrent consumers: exactly one gets it', async () => {
      const { code } = await withCode();
      const results = await Promise.all(Array.from({ length: 50 }, () => consume(code.codeHash, NOW)));
      assert.equal(results.filter((r) => r.status === 'ok').length, 1);
      assert.equal(results.filter((r) => r.status === 'replayed').length, 49);
    });
  });

  describe('refresh tokens', () => {
    it('round-trips', async () => {
      const { token } = await family();
      assert.deepEqual(await store.getRefreshToken(token.tokenHash), token);
      assert.equal(await store.getRefreshToken('nope'), undefined);
    });

    it('rotates: the old one is gone, a spent record of it is kept, the new one is stored', async () => {
      const { grant, token: old } = await family();
      const next = makeRefreshToken(grant, { createdAt: NOW + 5 });
      assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined, 'not spent before its rotation');
      const { before, after, result } = await countsAround(suite, () => rotate(old.tokenHash, next, NOW + 5));
      assert.deepEqual(expectRecord(result, 'ok'), old);
      assertCounts(before, after, { spentRefreshTokens: 1 }, 'the old token became a spent record, the new one took its place');
      assert.equal(await store.getRefreshToken(old.tokenHash), undefined);
      assert.deepEqual(await store.findSpentRefreshToken(old.tokenHash), {
        grantId: grant.id,
        clientId: grant.clientId,
        spentAt: NOW + 5,
        expiresAt: old.expiresAt,
        successorUnused: true,
      });
      assert.deepEqual(await store.getRefreshToken(next.tokenHash), next);
      assert.equal(await store.findSpentRefreshToken(next.tokenHash), undefined);
      expectRecord(await rotate(next.tokenHash, makeRefreshToken(grant), NOW + 6), 'ok');
      assert.equal((await store.findSpentRefreshToken(old.tokenHash))?.successorUnused, false, 'once its successor is used');
    });

    it('a reused token is a replay, told by its spent record, and its replacement is not saved', async () => {
      const { grant, token: old } = await family();
      expectRecord(await rotate(old.tokenHash, makeRefreshToken(grant), NOW), 'ok');
      const stolen = makeRefreshToken(grant);
      const { before, after, result } = await countsAround(suite, () => rotate(old.tokenHash, stolen, NOW + 1));
      assertCounts(before, after, {}, 'a replay writes nothing');
      const replayed = expectRecord(result, 'replayed');
      assert.deepEqual(replayed, { grantId: grant.id, clientId: grant.clientId, spentAt: NOW, expiresAt: old.expiresAt, successorUnused: true });
      assert.equal(await store.getRefreshToken(stolen.tokenHash), undefined);
      assert.equal((await store.findSpentRefreshToken(old.tokenHash))?.spentAt, NOW, 'a replay does not move the time it was spent');
    });

    it(`a spent record is found by its token’s hash (its first ${SPENT_KEY_CHARS} characters, 132 bits), never by another token’s`, async () => {
      const { grant, token: old } = await family();
      expectRecord(await rotate(old.tokenHash, makeRefreshToken(grant), NOW), 'ok');
      const key = old.tokenHash.slice(0, SPENT_KEY_CHARS);
      const flip = (c: string): string => (c === 'A' ? 'B' : 'A');
      assert.ok(await store.findSpentRefreshToken(`${key}${'x'.repeat(old.tokenHash.length - SPENT_KEY_CHARS)}`), 'the key is the prefix');
      assert.equal(await store.findSpentRefreshToken(`${key.slice(0, -1)}${flip(key.at(-1)!)}${old.tokenHash.slice(SPENT_KEY_CHARS)}`), undefined);
      assert.equal(await store.findSpentRefreshToken(hashSecret('another token')), undefined);
    });

    it('two spent tokens whose hashes share the key: the rotation still succeeds, the first record stays', async () => {
      const prefix = hashSecret('shared').slice(0, SPENT_KEY_CHARS);
      const { client, user, grant } = await family({}, { tokenHash: `${prefix}${'a'.repeat(21)}` });
      const { grant: otherGrant, token: second } = await familyOf(client, user, {}, { tokenHash: `${prefix}${'b'.repeat(21)}` });
      expectRecord(await rotate(`${prefix}${'a'.repeat(21)}`, makeRefreshToken(grant), NOW), 'ok');
      const next = makeRefreshToken(otherGrant);
      expectRecord(await rotate(second.tokenHash, next, NOW + 1), 'ok');
      assert.deepEqual(await store.getRefreshToken(next.tokenHash), next);
      assert.equal((await store.findSpentRefreshToken(second.tokenHash))?.grantId, grant.id, 'the first record is kept');
    });

    it('a live token comes before a spent record sharing its key', async () => {
      const prefix = hashSecret('shared').slice(0, SPENT_KEY_CHARS);
      const { grant, token: spent } = await family({}, { tokenHash: `${prefix}${'a'.repeat(21)}` });
      const live = makeRefreshToken(grant, { tokenHash: `${prefix}${'b'.repeat(21)}`, expiresAt: NOW + 10 });
      expectRecord(await rotate(spent.tokenHash, live, NOW), 'ok');
      assert.deepEqual(expectRecord(await rotate(live.tokenHash, makeRefreshToken(grant), NOW + 10), 'expired'), live);
      expectRecord(await rotate(live.tokenHash, makeRefreshToken(grant), NOW + 9), 'ok');
    });

    itNeeds('administration', 'a spent record is not found once its grant is gone', async () => {
      const { client, grant, token: old } = await family();
      expectRecord(await rotate(old.tokenHash, makeRefreshToken(grant), NOW), 'ok');
      await store.deleteClient(client.clientId);
      assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined);
      assert.deepEqual(await rotate(old.tokenHash, makeRefreshToken(grant), NOW), { status: 'missing' });
    });

    it('an expired token is not rotated', async () => {
      const { grant, token: old } = await family({}, { expiresAt: NOW + 10 });
      const next = makeRefreshToken(grant);
      assert.deepEqual(expectRecord(await rotate(old.tokenHash, next, NOW + 10), 'expired'), old);
      assert.equal(await store.getRefreshToken(next.tokenHash), undefined);
      assert.deepEqual(await store.getRefreshToken(old.tokenHash), old);
      assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined);
    });

    it('a token of a revoked grant is not rotated, nor spent', async () => {
      const { grant, token: old } = await family();
      const next = makeRefreshToken(grant);
      await store.revokeGrant(grant.id, NOW);
      const { before, after, result } = await countsAround(suite, () => rotate(old.tokenHash, next, NOW + 1));
      assertCounts(before, after, {}, 'a refusal writes nothing');
      assert.deepEqual(expectRecord(result, 'revoked'), old);
      assert.equal(await store.getRefreshToken(next.tokenHash), undefined);
      assert.deepEqual(await store.getRefreshToken(old.tokenHash), old);
      assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined);
    });

    it('an unknown token is missing and nothing is saved', async () => {
      const { grant } = await seed();
      const next = makeRefreshToken(grant);
      assert.deepEqual(await rotate('nope', next, NOW), { status: 'missing' });
      assert.equal(await store.getRefreshToken(next.tokenHash), undefined);
    });

    it('a failed insert of the replacement leaves the old token unused and unspent', async () => {
      const { client, user, grant, token: old } = await family();
      const { token: existing } = await familyOf(client, user);
      const before = await suite.counts();
      await assert.rejects(rotate(old.tokenHash, { ...existing, grantId: grant.id }, NOW), isStoreConflict);
      assertCounts(before, await suite.counts(), {}, 'the failed rotation is undone whole');
      assert.deepEqual(await store.getRefreshToken(old.tokenHash), old);
      assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined);
    });

    it('concurrent rotations of one token naming the same new token (a server derives it from the token): one wins, the rest are replays, never a conflict', async () => {
      const { grant, token: old } = await family();
      const next = makeRefreshToken(grant);
      const {
        before,
        after,
        result: results,
      } = await countsAround(suite, () => Promise.all(Array.from({ length: 20 }, () => rotate(old.tokenHash, next, NOW))));
      assert.deepEqual(results.map((r) => r.status).sort(), ['ok', ...Array(19).fill('replayed')]);
      assertCounts(before, after, { spentRefreshTokens: 1 }, 'one rotation, one spent record, one live token');
      assert.deepEqual(await store.getRefreshToken(next.tokenHash), next);
      assert.equal((await store.findSpentRefreshToken(old.tokenHash))?.successorUnused, true);
    });

    it('50 concurrent rotations: exactly one wins and exactly one new token is stored', async () => {
      const { grant, token: old } = await family();
      const nexts = Array.from({ length: 50 }, () => makeRefreshToken(grant));
      const { before, after, result: results } = await countsAround(suite, () => Promise.all(nexts.map((next) => rotate(old.tokenHash, next, NOW))));
      assertCounts(before, after, { spentRefreshTokens: 1 }, 'one rotation, one spent record, one live token');
      assert.equal(results.filter((r) => r.status === 'ok').length, 1);
      assert.equal(results.filter((r) => r.status === 'replayed').length, 49);
      const stored = await Promise.all(nexts.map((next) => store.getRefreshToken(next.tokenHash)));
      assert.equal(stored.filter((t) => t !== undefined).length, 1);
      const winner = results.findIndex((r) => r.status === 'ok');
      assert.deepEqual(stored[winner], nexts[winner]);
    });
  });

  describe('refreshGrant', () => {
    it('returns the grant (its access expiry raised) and the spent token’s scope; the new token takes its grant, client and scope', async () => {
      const { grant, token: old } = await family({ scope: ['read', 'write'] }, { scope: ['read'] });
      const next = makeRefreshToken(grant, { createdAt: NOW + 5, expiresAt: NOW + 999 });
      const result = await store.refreshGrant(refreshOf(old.tokenHash, next, NOW + 5, { accessExpiresAt: NOW + 605 }));
      assert.deepEqual(result, { status: 'ok', grant: { ...grant, accessExpiresAt: NOW + 605 }, scope: ['read'] });
      assert.deepEqual(await store.getRefreshToken(next.tokenHash), { ...next, scope: ['read'] });
      assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, NOW + 605);
    });

    it('a redemption and each refresh raise the grant’s access expiry, never lower it', async () => {
      const { grant, token } = await family({}, {}, NOW + 600);
      assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, NOW + 600);
      const next = makeRefreshToken(grant);
      const result = await store.refreshGrant(refreshOf(token.tokenHash, next, NOW + 1, { accessExpiresAt: NOW + 300 }));
      assert.equal(result.status === 'ok' && result.grant.accessExpiresAt, NOW + 600);
      assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, NOW + 600);
    });

    it('another client’s token is foreign: left as it is, unspent', async () => {
      const { grant, token: old } = await family();
      const next = makeRefreshToken(grant);
      const result = await store.refreshGrant(refreshOf(old.tokenHash, next, NOW, { clientId: 'someone-else' }));
      assert.deepEqual(result, { status: 'foreign', record: old });
      assert.deepEqual(await store.getRefreshToken(old.tokenHash), old);
      assert.equal(await store.getRefreshToken(next.tokenHash), undefined);
      assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined);
      assert.equal((await store.getGrant(grant.id))?.accessExpiresAt, 0, 'nothing issued: the expiry stays');
    });

    it('a grant resting on an upstream sign-in is held back, unspent, until the caller says it checked it', async () => {
      const { user } = await seed();
      const session = makeUpstreamSession(user.id);
      await store.createUpstreamSession(session);
      const { grant, token: old } = await family({ upstreamSessionId: session.id });
      const next = makeRefreshToken(grant);
      const held = await store.refreshGrant(refreshOf(old.tokenHash, next, NOW, { upstreamChecked: false }));
      assert.equal(held.status, 'upstream');
      assert.equal(held.status === 'upstream' && held.grant.upstreamSessionId, session.id);
      assert.deepEqual(await store.getRefreshToken(old.tokenHash), old);
      assert.equal(await store.findSpentRefreshToken(old.tokenHash), undefined);
      assert.equal((await store.refreshGrant(refreshOf(old.tokenHash, next, NOW, { upstreamChecked: true }))).status, 'ok');
    });

    it('an unchecked upstream grant that is revoked says revoked, not upstream', async () => {
      const { user } = await seed();
      const session = makeUpstreamSession(user.id);
      await store.createUpstreamSession(session);
      const { grant, token: old } = await family({ upstreamSessionId: session.id });
      await store.revokeGrant(grant.id, NOW);
      assert.equal((await store.refreshGrant(refreshOf(old.tokenHash, makeRefreshToken(grant), NOW, { upstreamChecked: false }))).status, 'revoked');
    });

    itNeeds('revocationFeed', 'a refresh racing a revocation: either it is refused, or the recorded revocation covers its access token', async () => {
      for (let round = 0; round < 10; round++) {
        const { grant, token: old } = await family();
        const refreshing = store.refreshGrant(refreshOf(old.tokenHash, makeRefreshToken(grant), NOW, { accessExpiresAt: NOW + 600 + round }));
        const revoking = round % 2 === 0 ? store.revokeGrant(grant.id, NOW) : Promise.resolve().then(() => store.revokeGrant(grant.id, NOW));
        const [result] = await Promise.all([refreshing, revoking]);
        const recorded = (await store.listRevocations(0, NOW)).find((r) => r.id === grant.id);
        if (result.status === 'ok') assert.equal(recorded?.expiresAt, NOW + 600 + round, 'the issued token is covered');
        else assert.equal(result.status, 'revoked');
      }
    });
  });

  describe('access tokens', () => {
    it('revokeAccessToken records the token while it is unexpired; isAccessTokenRevoked tells', async () => {
      assert.equal(await store.isAccessTokenRevoked('jti-1'), false);
      await store.revokeAccessToken('jti-1', NOW + 600, NOW + 1);
      await store.revokeAccessToken('jti-1', NOW + 600, NOW + 2);
      assert.equal(await store.isAccessTokenRevoked('jti-1'), true);
      await store.revokeAccessToken('jti-expired', NOW, NOW);
      assert.equal(await store.isAccessTokenRevoked('jti-expired'), false, 'an expired token needs no record');
    });
  });
}
