/** Records are copied in and out, in every aggregate: a caller that changes what it passed or got changes nothing stored. */
import assert from 'node:assert/strict';
import type { FullStore } from '../store.js';
import { expectRecord, steps, type Suite } from './harness.js';
import { NOW, makeClient, makeCode, makeConsent, makeGrant, makeInteraction, makeRefreshToken, makeSigningKey } from './records.js';

export function copyTests(suite: Suite): void {
  const { describe, it, itNeeds } = suite;
  const { seed, family, consume, rotate } = steps(suite);
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  describe('copies', () => {
    it('mutating an input after saving it does not change the store', async () => {
      const client = makeClient();
      await store.createClient(client);
      client.redirectUris.push('https://evil.example/');
      client.metadata['injected'] = true;
      const stored = await store.getClient(client.clientId);
      assert.deepEqual(stored?.redirectUris, ['https://app.example/callback', 'http://127.0.0.1/callback']);
      assert.equal(stored?.metadata['injected'], undefined);
    });

    it('mutating a returned record does not change the store', async () => {
      const { client, user, grant } = await seed();
      const fetchedClient = await store.getClient(client.clientId);
      assert.ok(fetchedClient);
      fetchedClient.redirectUris.push('https://evil.example/');
      (fetchedClient.metadata['nested'] as { a: number[] }).a.push(3);
      assert.deepEqual(await store.getClient(client.clientId), client);

      const fetchedGrant = await store.getGrant(grant.id);
      assert.ok(fetchedGrant);
      fetchedGrant.scope.push('admin');
      fetchedGrant.revokedAt = NOW;
      assert.deepEqual(await store.getGrant(grant.id), grant);

      const fetchedUser = await store.getUser({ id: user.id });
      assert.ok(fetchedUser);
      fetchedUser.username = 'mallory';
      assert.deepEqual(await store.getUser({ username: user.username }), user);

      const interaction = makeInteraction(client.clientId);
      await store.createInteraction(interaction);
      const fetchedInteraction = await store.getInteraction(interaction.id, NOW);
      assert.ok(fetchedInteraction);
      fetchedInteraction.request.scope.push('admin');
      assert.deepEqual(await store.getInteraction(interaction.id, NOW), interaction);

      await store.saveConsent(makeConsent(user.id, client.clientId));
      (await store.getConsent(user.id, client.clientId, 'https://mcp.example/'))?.scope.push('admin');
      assert.deepEqual((await store.getConsent(user.id, client.clientId, 'https://mcp.example/'))?.scope, ['read']);
    });

    itNeeds('administration', 'mutating a listed record does not change the store', async () => {
      const { client, user } = await seed();
      const listed = await store.listClients();
      listed[0]?.grantTypes.push('client_credentials');
      assert.deepEqual(await store.getClient(client.clientId), client);
      await store.saveConsent(makeConsent(user.id, client.clientId));
      const consents = await store.listConsents({});
      consents[0]?.scope.push('admin');
      assert.deepEqual((await store.getConsent(user.id, client.clientId, 'https://mcp.example/'))?.scope, ['read']);
    });

    it('mutating a consume or rotate result does not change the store', async () => {
      const { client, user, grant, token, code: redeemed } = await family();
      const other = makeGrant(client.clientId, user.id);
      const code = makeCode(other);
      await store.createGrant(other, code);
      const used = expectRecord(await consume(code.codeHash, NOW), 'ok');
      used.consumedAt = null;
      used.scope.push('admin');
      expectRecord(await consume(code.codeHash, NOW), 'replayed');
      expectRecord(await consume(redeemed.codeHash, NOW), 'replayed');

      const next = makeRefreshToken(grant);
      expectRecord(await rotate(token.tokenHash, next, NOW), 'ok');
      (await store.getRefreshToken(next.tokenHash))!.scope.push('admin');
      assert.deepEqual((await store.getRefreshToken(next.tokenHash))?.scope, next.scope);
      (await store.findSpentRefreshToken(token.tokenHash))!.spentAt = 0;
      assert.equal((await store.findSpentRefreshToken(token.tokenHash))?.spentAt, NOW);

      const key = makeSigningKey();
      const ensured = await store.ensureSigningKey(key);
      ensured.status = 'retired';
      assert.equal((await store.listSigningKeys())[0]?.status, 'current');
    });
  });
}
