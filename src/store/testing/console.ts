/** The admin console's needs (the console capability): pages of clients and users, administrators, sessions ended. */
import assert from 'node:assert/strict';
import type { FullStore } from '../store.js';
import { steps, type Suite } from './harness.js';
import { NOW, addUser, makeClient, makeInteraction, makeSession, makeUser } from './records.js';

export function consoleTests(suite: Suite): void {
  const { describe, itNeeds } = suite;
  const { parties } = steps(suite);
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  describe('admin console', () => {
    itNeeds('console', 'pages through clients in client_id order, and narrows them by ID or name in any case', async () => {
      const names = ['c-05', 'c-01', 'c-03', 'c-02', 'c-04'];
      for (const id of names) await store.createClient(makeClient({ clientId: id, clientName: id === 'c-04' ? 'The Weather App' : null }));
      const first = await store.listClientsPage({ limit: 2 });
      assert.deepEqual(
        first.map((c) => c.clientId),
        ['c-01', 'c-02'],
      );
      const second = await store.listClientsPage({ limit: 2, after: 'c-02' });
      assert.deepEqual(
        second.map((c) => c.clientId),
        ['c-03', 'c-04'],
      );
      assert.deepEqual(
        (await store.listClientsPage({ limit: 2, after: 'c-04' })).map((c) => c.clientId),
        ['c-05'],
      );
      assert.deepEqual(
        (await store.listClientsPage({ limit: 10, search: 'WEATHER' })).map((c) => c.clientId),
        ['c-04'],
      );
      assert.deepEqual(
        (await store.listClientsPage({ limit: 10, search: '-03' })).map((c) => c.clientId),
        ['c-03'],
      );
      assert.deepEqual(await store.listClientsPage({ limit: 10, search: '%' }), [], 'a wildcard in the search is a plain character');
      assert.deepEqual(await store.listClientsPage({ limit: 10, search: '_' }), []);
      assert.deepEqual(first[0], await store.getClient('c-01'));
    });

    itNeeds('console', 'pages through users by username, narrowed by a search', async () => {
      for (const username of ['dora', 'alice', 'carol', 'bob']) await store.createUser(makeUser({ username }));
      assert.deepEqual(
        (await store.listUsersPage({ limit: 3 })).map((u) => u.username),
        ['alice', 'bob', 'carol'],
      );
      assert.deepEqual(
        (await store.listUsersPage({ limit: 3, after: 'carol' })).map((u) => u.username),
        ['dora'],
      );
      assert.deepEqual(
        (await store.listUsersPage({ limit: 3, search: 'AR' })).map((u) => u.username),
        ['carol'],
      );
    });

    itNeeds('console', 'marks a user an administrator and back, and says when there is no such user', async () => {
      const user = await addUser(store, makeUser({ username: 'root-person' }));
      assert.equal((await store.getUser({ id: user.id }))?.admin ?? false, false);
      assert.equal(await store.setUserAdmin('root-person', true), true);
      assert.equal((await store.getUser({ id: user.id }))?.admin, true);
      assert.equal(await store.setUserAdmin('root-person', false), true);
      assert.equal((await store.getUser({ id: user.id }))?.admin, false);
      assert.equal(await store.setUserAdmin('nobody', true), false);
      assert.equal(await store.createUser(makeUser({ username: 'born-admin', admin: true })), undefined);
      assert.equal((await store.getUser({ username: 'born-admin' }))?.admin, true);
    });

    itNeeds('console', "a new session records the user's last sign-in", async () => {
      const user = await addUser(store);
      await store.createSession(makeSession(user.id, { createdAt: NOW + 5 }));
      assert.equal((await store.getUser({ id: user.id }))?.lastSignInAt, NOW + 5);
    });

    itNeeds('console', "ending a user's sessions ends all of theirs and their pending sign-ins, and no one else's", async () => {
      const { client, user } = await parties();
      const other = await addUser(store);
      const mine = [makeSession(user.id), makeSession(user.id)];
      const theirs = makeSession(other.id);
      for (const session of [...mine, theirs]) await store.createSession(session);
      const interaction = makeInteraction(client.clientId, { userId: user.id });
      await store.createInteraction(interaction);
      assert.equal(await store.endUserSessions(user.id), 2);
      for (const session of mine) assert.equal(await store.getSession(session.idHash, NOW), undefined);
      assert.equal(await store.getInteraction(interaction.id, NOW), undefined);
      assert.ok(await store.getSession(theirs.idHash, NOW));
      assert.equal(await store.endUserSessions(user.id), 0);
    });
  });
}
