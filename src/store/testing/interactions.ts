/** Interactions (InteractionStore): pending authorization requests, updated as the person goes on and consumed once. */
import assert from 'node:assert/strict';
import type { FullStore } from '../store.js';
import { steps, type Suite } from './harness.js';
import { NOW, makeClient, makeInteraction } from './records.js';

export function interactionTests(suite: Suite): void {
  const { describe, it } = suite;
  const { seed } = steps(suite);
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  describe('interactions', () => {
    it('round-trips and hides an expired interaction', async () => {
      const client = makeClient();
      await store.createClient(client);
      const interaction = makeInteraction(client.clientId, { expiresAt: NOW + 100 });
      await store.createInteraction(interaction);
      assert.deepEqual(await store.getInteraction(interaction.id, NOW + 99), interaction);
      assert.equal(await store.getInteraction(interaction.id, NOW + 100), undefined);
      assert.equal(await store.getInteraction(interaction.id, NOW + 1000), undefined);
      assert.equal(await store.getInteraction('nope', NOW), undefined);
    });

    it('records the user who signed in, one who exists', async () => {
      const { client, user } = await seed();
      const interaction = makeInteraction(client.clientId);
      await store.createInteraction(interaction);
      await store.updateInteraction(interaction.id, { userId: user.id });
      assert.equal((await store.getInteraction(interaction.id, NOW))?.userId, user.id);
      await assert.rejects(store.updateInteraction(interaction.id, { userId: 'no-such-user' }));
      assert.equal((await store.getInteraction(interaction.id, NOW))?.userId, user.id);
      await store.updateInteraction('nope', { userId: user.id });
    });

    it('is consumed once', async () => {
      const client = makeClient();
      await store.createClient(client);
      const interaction = makeInteraction(client.clientId);
      await store.createInteraction(interaction);
      assert.deepEqual(await store.consumeInteraction(interaction.id, NOW), interaction);
      assert.equal(await store.consumeInteraction(interaction.id, NOW), undefined);
      assert.equal(await store.getInteraction(interaction.id, NOW), undefined);
    });

    it('cannot be consumed once expired, nor when unknown', async () => {
      const client = makeClient();
      await store.createClient(client);
      const interaction = makeInteraction(client.clientId, { expiresAt: NOW });
      await store.createInteraction(interaction);
      assert.equal(await store.consumeInteraction(interaction.id, NOW), undefined);
      assert.equal(await store.consumeInteraction('nope', NOW), undefined);
    });

    it('refuses an interaction for an unknown client', async () => {
      await assert.rejects(store.createInteraction(makeInteraction('no-such-client')));
    });

    it('concurrent consumers get it exactly once', async () => {
      const client = makeClient();
      await store.createClient(client);
      const interaction = makeInteraction(client.clientId);
      await store.createInteraction(interaction);
      const results = await Promise.all(Array.from({ length: 50 }, () => store.consumeInteraction(interaction.id, NOW)));
      assert.equal(results.filter((r) => r !== undefined).length, 1);
    });

    it('an interaction keeps the provider chosen', async () => {
      const client = makeClient();
      await store.createClient(client);
      const interaction = makeInteraction(client.clientId);
      await store.createInteraction(interaction);
      const upstream = { provider: 'corp', sealedPending: 'v1.k.n.b' };
      await store.updateInteraction(interaction.id, { upstream });
      assert.deepEqual((await store.getInteraction(interaction.id, NOW))?.upstream, upstream);
      assert.deepEqual((await store.consumeInteraction(interaction.id, NOW))?.upstream, upstream);
    });
  });
}
