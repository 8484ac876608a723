/** Sessions (SessionStore): browser sessions and upstream sign-ins; signing out (the signOut capability). */
import assert from 'node:assert/strict';
import type { FullStore } from '../store.js';
import { steps, type Suite } from './harness.js';
import { NOW, addUser, makeGrant, makeSession, makeUpstreamSession } from './records.js';

export function sessionTests(suite: Suite): void {
  const { describe, it, itNeeds } = suite;
  const { seed, familyOf } = steps(suite);
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  describe('sessions', () => {
    it('round-trips and hides expired sessions', async () => {
      const user = await addUser(store);
      const session = makeSession(user.id, { expiresAt: NOW + 10 });
      await store.createSession(session);
      assert.deepEqual(await store.getSession(session.idHash, NOW), session);
      assert.equal(await store.getSession(session.idHash, NOW + 10), undefined);
      assert.equal(await store.getSession('nope', NOW), undefined);
    });

    itNeeds('signOut', "deletes one session, leaving the user's others", async () => {
      const user = await addUser(store);
      const session = makeSession(user.id);
      const other = makeSession(user.id);
      await store.createSession(session);
      await store.createSession(other);
      await store.deleteSession(session.idHash);
      await store.deleteSession(session.idHash);
      assert.equal(await store.getSession(session.idHash, NOW), undefined);
      assert.ok(await store.getSession(other.idHash, NOW));
    });

    it('refuses a session for an unknown user', async () => {
      await assert.rejects(store.createSession(makeSession('no-such-user')));
    });
  });

  describe('upstream sessions', () => {
    it('an upstream session, its tokens replaced; sessions and grants rest on it', async () => {
      const { client, user } = await seed();
      const upstream = makeUpstreamSession(user.id);
      await store.createUpstreamSession(upstream);
      assert.deepEqual(await store.getUpstreamSession(upstream.id), upstream);
      await store.updateUpstreamSessionTokens(upstream.id, 'v1.key.nonce.renewed');
      assert.equal((await store.getUpstreamSession(upstream.id))?.sealedTokens, 'v1.key.nonce.renewed');

      const session = makeSession(user.id, { upstreamSessionId: upstream.id });
      await store.createSession(session);
      assert.deepEqual(await store.getSession(session.idHash, NOW), session);
      const grant = makeGrant(client.clientId, user.id, { upstreamSessionId: upstream.id });
      await store.createGrant(grant);
      assert.deepEqual(await store.getGrant(grant.id), grant);
      await assert.rejects(store.createGrant(makeGrant(client.clientId, user.id, { upstreamSessionId: 'no-such-session' })));
    });

    itNeeds('upkeep', 'sweeping removes an expired upstream session only once nothing rests on it', async () => {
      const { client, user } = await seed();
      const kept = makeUpstreamSession(user.id, { expiresAt: NOW - 1 });
      const gone = makeUpstreamSession(user.id, { expiresAt: NOW - 1 });
      await store.createUpstreamSession(kept);
      await store.createUpstreamSession(gone);
      await familyOf(client, user, { upstreamSessionId: kept.id });
      await store.sweepExpired(NOW);
      assert.ok(await store.getUpstreamSession(kept.id));
      assert.equal(await store.getUpstreamSession(gone.id), undefined);
    });
  });
}
