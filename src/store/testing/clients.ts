/** The clients aggregate (ClientStore): saved, found, replaced; and what upkeep and administration add. */
import assert from 'node:assert/strict';
import { isStoreConflict, type FullStore } from '../store.js';
import { assertCounts, countsAround, steps, type Suite } from './harness.js';
import { NOW, addUser, makeClient, makeConsent, makeGrant, makeInteraction } from './records.js';

export function clientTests(suite: Suite): void {
  const { describe, it, itNeeds } = suite;
  const { familyOf, family, consume } = steps(suite);
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  describe('clients', () => {
    it('saveClient creates, then replaces the metadata and keeps the creation time', async () => {
      const client = makeClient({ clientId: 'https://app.example/client.json', clientName: 'First' });
      await store.saveClient(client);
      assert.deepEqual(await store.getClient(client.clientId), client);
      await store.saveClient({ ...client, clientName: 'Second', redirectUris: ['https://app.example/other'], createdAt: NOW + 100 });
      assert.deepEqual(await store.getClient(client.clientId), { ...client, clientName: 'Second', redirectUris: ['https://app.example/other'] });
    });

    itNeeds('upkeep', 'touchClient records use at most once a day; sweeping removes dynamic clients unused since a time', async () => {
      const used = makeClient();
      const unused = makeClient();
      const admin = makeClient({ registeredBy: 'admin' });
      for (const client of [used, unused, admin]) await store.createClient(client);
      await store.touchClient(used.clientId, NOW + 10);
      await store.touchClient(used.clientId, NOW + 20);
      assert.equal((await store.getClient(used.clientId))?.lastUsedAt, NOW + 10, 'within a day, not written again');
      await store.touchClient(used.clientId, NOW + 10 + 86_400);
      assert.equal((await store.getClient(used.clientId))?.lastUsedAt, NOW + 10 + 86_400);
      await store.saveClient({ ...used, clientName: 'refetched' });
      assert.equal((await store.getClient(used.clientId))?.lastUsedAt, NOW + 10 + 86_400, 'saveClient keeps the last use');

      const user = await addUser(store);
      const grant = makeGrant(unused.clientId, user.id);
      await store.createGrant(grant);
      await store.sweepExpired(NOW, { unusedClientsBefore: NOW + 100 });
      assert.ok(await store.getClient(used.clientId));
      assert.ok(await store.getClient(admin.clientId), "operators' clients are never swept");
      assert.equal(await store.getClient(unused.clientId), undefined);
      assert.equal(await store.getGrant(grant.id), undefined, 'with everything issued to it');
    });

    it('round-trips every field', async () => {
      const client = makeClient({
        clientSecretHash: 'secret-hash',
        tokenEndpointAuthMethod: 'client_secret_basic',
        grantTypes: ['client_credentials'],
        clientName: null,
        scope: 'read write',
        canIntrospect: true,
        registeredBy: 'admin',
      });
      await store.createClient(client);
      assert.deepEqual(await store.getClient(client.clientId), client);
      const publicClient = makeClient();
      await store.createClient(publicClient);
      assert.deepEqual(await store.getClient(publicClient.clientId), publicClient);
    });

    it('returns undefined for an unknown client', async () => {
      assert.equal(await store.getClient('nope'), undefined);
    });

    it('refuses a duplicate client id', async () => {
      const client = makeClient();
      await store.createClient(client);
      await assert.rejects(store.createClient(makeClient({ clientId: client.clientId })), isStoreConflict);
      assert.deepEqual(await store.getClient(client.clientId), client);
    });

    itNeeds('administration', 'lists clients oldest first', async () => {
      const newer = makeClient({ createdAt: NOW + 10 });
      const older = makeClient({ createdAt: NOW - 10 });
      await store.createClient(newer);
      await store.createClient(older);
      assert.deepEqual(await store.listClients(), [older, newer]);
    });

    itNeeds('administration', 'deletes a client once', async () => {
      const client = makeClient();
      await store.createClient(client);
      assert.equal(await store.deleteClient(client.clientId), true);
      assert.equal(await store.getClient(client.clientId), undefined);
      assert.equal(await store.deleteClient(client.clientId), false);
      assert.equal(await store.deleteClient('nope'), false);
    });

    itNeeds('administration', 'deleting a client deletes its grants, codes, tokens, consents and interactions, and nothing else', async () => {
      const { client, user, grant, token: refresh, code } = await family();
      const other = makeClient();
      await store.createClient(other);
      const { grant: otherGrant, token: otherRefresh } = await familyOf(other, user);
      const interaction = makeInteraction(client.clientId);
      await store.createInteraction(interaction);
      await store.saveConsent(makeConsent(user.id, client.clientId));
      await store.saveConsent(makeConsent(user.id, other.clientId));

      const { before, after, result: deleted } = await countsAround(suite, () => store.deleteClient(client.clientId));
      assert.equal(deleted, true);
      assertCounts(
        before,
        after,
        { clients: -1, grants: -1, authorizationCodes: -1, refreshTokens: -1, interactions: -1, consents: -1 },
        'what hangs on the client, and nothing else',
      );

      assert.equal(await store.getGrant(grant.id), undefined);
      assert.equal((await consume(code.codeHash, NOW)).status, 'missing');
      assert.equal(await store.getRefreshToken(refresh.tokenHash), undefined);
      assert.equal(await store.getInteraction(interaction.id, NOW), undefined);
      assert.deepEqual(await store.listConsents({ clientId: client.clientId }), []);

      assert.ok(await store.getUser({ id: user.id }));
      assert.ok(await store.getGrant(otherGrant.id));
      assert.ok(await store.getRefreshToken(otherRefresh.tokenHash));
      assert.equal((await store.listConsents({ userId: user.id })).length, 1);
    });
  });
}
