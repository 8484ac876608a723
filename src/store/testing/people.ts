/** People (PeopleStore): users found by id, username or upstream identity, their identities, their consents; and what administration adds. */
import assert from 'node:assert/strict';
import { isStoreConflict, type ConsentRecord, type FullStore } from '../store.js';
import { assertCounts, steps, type Suite } from './harness.js';
import { NOW, makeClient, makeConsent, makeGrant, makeIdentity, makeInteraction, makeSession, makeUpstreamSession, makeUser } from './records.js';

export function peopleTests(suite: Suite): void {
  const { describe, it, itNeeds } = suite;
  const { seed, family, consume } = steps(suite);
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  describe('users', () => {
    it('finds a user by id, by username and by an identity linked to them', async () => {
      const user = makeUser();
      const identity = makeIdentity(user);
      await store.createUserWithIdentity(user, identity);
      assert.deepEqual(await store.getUser({ id: user.id }), user);
      assert.deepEqual(await store.getUser({ username: user.username }), user);
      assert.deepEqual(await store.getUser({ identity }), user);
      assert.equal(await store.getUser({ id: 'nope' }), undefined);
      assert.equal(await store.getUser({ username: 'nope' }), undefined);
      assert.equal(await store.getUser({ id: user.username }), undefined, 'an id is not a username');
      assert.equal(await store.getUser({ username: user.id }), undefined, 'nor a username an id');
    });

    itNeeds('administration', 'refuses a taken username', async () => {
      const user = makeUser({ username: 'alice' });
      await store.createUser(user);
      await assert.rejects(store.createUser(makeUser({ username: 'alice' })), isStoreConflict);
      assert.deepEqual(await store.listUsers(), [user]);
    });

    itNeeds('administration', 'refuses a duplicate user id', async () => {
      const user = makeUser();
      await store.createUser(user);
      await assert.rejects(store.createUser(makeUser({ id: user.id })), isStoreConflict);
    });

    itNeeds('administration', 'lists users by username', async () => {
      const bob = makeUser({ username: 'bob' });
      const alice = makeUser({ username: 'alice' });
      await store.createUser(bob);
      await store.createUser(alice);
      assert.deepEqual(await store.listUsers(), [alice, bob]);
    });

    itNeeds('administration', 'deleting a user deletes their sessions, consents, interactions and grants, and nothing else', async () => {
      const { client, user, grant, token: refresh, code } = await family();
      const other = makeUser();
      await store.createUser(other);
      const otherGrant = makeGrant(client.clientId, other.id);
      await store.createGrant(otherGrant);

      const session = makeSession(user.id);
      const otherSession = makeSession(other.id);
      const interaction = makeInteraction(client.clientId, { userId: user.id });
      await store.createSession(session);
      await store.createSession(otherSession);
      await store.createInteraction(interaction);
      await store.saveConsent(makeConsent(user.id, client.clientId));
      await store.saveConsent(makeConsent(other.id, client.clientId));

      assert.equal(await store.deleteUser(user.username), true);

      assert.equal(await store.getUser({ id: user.id }), undefined);
      assert.equal(await store.getSession(session.idHash, NOW), undefined);
      assert.equal(await store.getInteraction(interaction.id, NOW), undefined);
      assert.deepEqual(await store.listConsents({ userId: user.id }), []);
      assert.equal(await store.getGrant(grant.id), undefined);
      assert.equal((await consume(code.codeHash, NOW)).status, 'missing');
      assert.equal(await store.getRefreshToken(refresh.tokenHash), undefined);

      assert.ok(await store.getClient(client.clientId));
      assert.ok(await store.getSession(otherSession.idHash, NOW));
      assert.ok(await store.getGrant(otherGrant.id));
      assert.equal((await store.listConsents({ userId: other.id })).length, 1);
      assert.equal(await store.deleteUser(user.username), false);
    });

    itNeeds('administration', "a new password ends the user's sessions and pending sign-ins, and keeps their grants and other users' sessions", async () => {
      const { client, user, grant } = await seed();
      const other = makeUser();
      await store.createUser(other);
      const sessions = [makeSession(user.id), makeSession(user.id)];
      for (const session of sessions) await store.createSession(session);
      const otherSession = makeSession(other.id);
      await store.createSession(otherSession);
      const signedIn = makeInteraction(client.clientId, { userId: user.id });
      const notYet = makeInteraction(client.clientId);
      await store.createInteraction(signedIn);
      await store.createInteraction(notYet);

      assert.deepEqual(await store.setUserPassword(user.username, 'scrypt$new'), { sessionsEnded: 2 });

      assert.equal((await store.getUser({ id: user.id }))?.passwordHash, 'scrypt$new');
      assert.equal((await store.getUser({ id: other.id }))?.passwordHash, other.passwordHash);
      for (const session of sessions) assert.equal(await store.getSession(session.idHash, NOW), undefined);
      assert.equal(await store.getInteraction(signedIn.id, NOW), undefined);
      assert.ok(await store.getInteraction(notYet.id, NOW));
      assert.ok(await store.getSession(otherSession.idHash, NOW));
      assert.ok(await store.getGrant(grant.id));
      assert.equal(await store.setUserPassword('nobody', 'scrypt$x'), undefined);
    });
  });

  describe('consents', () => {
    it('saves and reads a consent', async () => {
      const { client, user } = await seed();
      assert.equal(await store.getConsent(user.id, client.clientId, 'https://mcp.example/'), undefined);
      const consent = makeConsent(user.id, client.clientId, { scope: ['read', 'admin'] });
      await store.saveConsent(consent);
      assert.deepEqual(await store.getConsent(user.id, client.clientId, consent.resource), { ...consent, scope: ['admin', 'read'] });
    });

    it('widens a consent to the union of scopes, sorted and de-duplicated, keeping createdAt', async () => {
      const { client, user } = await seed();
      await store.saveConsent(makeConsent(user.id, client.clientId, { scope: ['write', 'read'] }));
      await store.saveConsent(makeConsent(user.id, client.clientId, { scope: ['admin', 'read', 'read'], createdAt: NOW + 50, updatedAt: NOW + 50 }));
      const consent = await store.getConsent(user.id, client.clientId, 'https://mcp.example/');
      assert.deepEqual(consent?.scope, ['admin', 'read', 'write']);
      assert.equal(consent?.createdAt, NOW);
      assert.equal(consent?.updatedAt, NOW + 50);
    });

    it('keeps consents for different resources apart', async () => {
      const { client, user } = await seed();
      await store.saveConsent(makeConsent(user.id, client.clientId, { resource: 'https://a.example/', scope: ['a'] }));
      await store.saveConsent(makeConsent(user.id, client.clientId, { resource: 'https://b.example/', scope: ['b'] }));
      assert.deepEqual((await store.getConsent(user.id, client.clientId, 'https://a.example/'))?.scope, ['a']);
      assert.deepEqual((await store.getConsent(user.id, client.clientId, 'https://b.example/'))?.scope, ['b']);
    });

    itNeeds('administration', 'lists consents by user, by client, by both or all', async () => {
      const { client, user } = await seed();
      const otherClient = makeClient();
      const otherUser = makeUser();
      await store.createClient(otherClient);
      await store.createUser(otherUser);
      const pairs: Array<[string, string]> = [
        [user.id, client.clientId],
        [user.id, otherClient.clientId],
        [otherUser.id, client.clientId],
      ];
      for (const [userId, clientId] of pairs) await store.saveConsent(makeConsent(userId, clientId));

      const key = (c: ConsentRecord) => `${c.userId}|${c.clientId}`;
      const keys = async (filter: { userId?: string; clientId?: string }) => (await store.listConsents(filter)).map(key).sort();
      assert.deepEqual(await keys({}), pairs.map(([u, c]) => `${u}|${c}`).sort());
      assert.deepEqual(await keys({ userId: user.id }), [`${user.id}|${client.clientId}`, `${user.id}|${otherClient.clientId}`].sort());
      assert.deepEqual(await keys({ clientId: client.clientId }), [`${user.id}|${client.clientId}`, `${otherUser.id}|${client.clientId}`].sort());
      assert.deepEqual(await keys({ userId: otherUser.id, clientId: otherClient.clientId }), []);
    });

    itNeeds('administration', 'revokeConsents deletes the consents and revokes the grants of that user and client only', async () => {
      const { client, user, grant } = await seed();
      const alreadyRevoked = makeGrant(client.clientId, user.id, { revokedAt: NOW - 5 });
      const otherClient = makeClient();
      await store.createClient(otherClient);
      const otherGrant = makeGrant(otherClient.clientId, user.id);
      await store.createGrant(alreadyRevoked);
      await store.createGrant(otherGrant);
      await store.saveConsent(makeConsent(user.id, client.clientId, { resource: 'https://a.example/' }));
      await store.saveConsent(makeConsent(user.id, client.clientId, { resource: 'https://b.example/' }));
      await store.saveConsent(makeConsent(user.id, otherClient.clientId));

      assert.equal(await store.revokeConsents(user.id, client.clientId, NOW + 1), 2);

      assert.deepEqual(await store.listConsents({ userId: user.id, clientId: client.clientId }), []);
      assert.equal((await store.getGrant(grant.id))?.revokedAt, NOW + 1);
      assert.equal((await store.getGrant(alreadyRevoked.id))?.revokedAt, NOW - 5);
      assert.equal((await store.getGrant(otherGrant.id))?.revokedAt, null);
      assert.equal((await store.listConsents({ userId: user.id })).length, 1);
      assert.equal(await store.revokeConsents(user.id, client.clientId, NOW + 2), 0);
    });

    it('refuses a consent for an unknown user or client', async () => {
      const { client, user } = await seed();
      await assert.rejects(store.saveConsent(makeConsent('no-such-user', client.clientId)));
      await assert.rejects(store.saveConsent(makeConsent(user.id, 'no-such-client')));
    });
  });

  describe('upstream identities', () => {
    it('a user without a password, with their identity, found by provider, issuer and subject', async () => {
      const user = makeUser({ passwordHash: null });
      const identity = makeIdentity(user);
      await store.createUserWithIdentity(user, identity);
      assert.deepEqual(await store.getUser({ identity }), user);
      assert.deepEqual(await store.getUser({ id: user.id }), user);
      assert.equal(await store.getUser({ identity: { ...identity, subject: 'someone-else' } }), undefined);
      assert.equal(await store.getUser({ identity: { ...identity, issuer: 'https://other.example' } }), undefined);
      assert.equal(await store.getUser({ identity: { ...identity, provider: 'other' } }), undefined);
      assert.deepEqual(await store.listUserIdentities({ userId: user.id }), [identity]);
    });

    it('the same issuer and subject at two providers are two people', async () => {
      const first = makeUser({ passwordHash: null });
      const second = makeUser({ passwordHash: null });
      const identity = makeIdentity(first, { provider: 'hub', subject: '1001' });
      await store.createUserWithIdentity(first, identity);
      await store.createUserWithIdentity(second, { ...identity, provider: 'forge', userId: second.id });
      assert.equal((await store.getUser({ identity }))?.id, first.id);
      assert.equal((await store.getUser({ identity: { ...identity, provider: 'forge' } }))?.id, second.id);
    });

    it('a taken username or identity is a conflict, and nothing is half-written', async () => {
      const first = makeUser({ passwordHash: null });
      const identity = makeIdentity(first);
      await store.createUserWithIdentity(first, identity);
      const second = makeUser({ passwordHash: null });
      const before = await suite.counts();
      await assert.rejects(store.createUserWithIdentity(second, { ...identity, userId: second.id }), isStoreConflict);
      assert.equal(await store.getUser({ id: second.id }), undefined);
      await assert.rejects(store.createUserWithIdentity({ ...second, username: first.username }, makeIdentity(second)), isStoreConflict);
      assert.equal(await store.getUser({ id: second.id }), undefined);
      assert.equal((await store.listUserIdentities({ userId: second.id })).length, 0);
      assertCounts(before, await suite.counts(), {}, 'nothing half-written');
    });

    itNeeds('administration', 'deleting the user deletes their identities and upstream sessions', async () => {
      const user = makeUser({ passwordHash: null });
      await store.createUserWithIdentity(user, makeIdentity(user));
      const upstream = makeUpstreamSession(user.id);
      await store.createUpstreamSession(upstream);
      assert.equal(await store.deleteUser(user.username), true);
      assert.equal(await store.getUpstreamSession(upstream.id), undefined);
      assert.deepEqual(await store.listUserIdentities({ userId: user.id }), []);
    });
  });
}
