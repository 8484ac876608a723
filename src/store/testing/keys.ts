/** Signing keys (KeyStore), and their rotation (administration). */
import assert from 'node:assert/strict';
import type { FullStore } from '../store.js';
import type { Suite } from './harness.js';
import { NOW, makeSigningKey } from './records.js';

export function keyTests(suite: Suite): void {
  const { describe, it, itNeeds } = suite;
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  describe('signing keys', () => {
    it('starts empty', async () => {
      assert.deepEqual(await store.listSigningKeys(), []);
    });

    itNeeds('administration', 'rotates current → previous → retired, listing newest first', async () => {
      const k1 = makeSigningKey({ createdAt: NOW });
      const k2 = makeSigningKey({ createdAt: NOW + 10 });
      const k3 = makeSigningKey({ createdAt: NOW + 20, status: 'retired' });
      await store.rotateSigningKey(k1);
      assert.deepEqual(await store.listSigningKeys(), [k1]);
      await store.rotateSigningKey(k2);
      assert.deepEqual(await store.listSigningKeys(), [k2, { ...k1, status: 'previous' }]);
      await store.rotateSigningKey(k3);
      assert.deepEqual(await store.listSigningKeys(), [
        { ...k3, status: 'current' },
        { ...k2, status: 'previous' },
        { ...k1, status: 'retired' },
      ]);
      const k4 = makeSigningKey({ createdAt: NOW + 30 });
      await store.rotateSigningKey(k4);
      assert.deepEqual(
        (await store.listSigningKeys()).map((k) => [k.kid, k.status]),
        [
          [k4.kid, 'current'],
          [k3.kid, 'previous'],
          [k2.kid, 'retired'],
          [k1.kid, 'retired'],
        ],
      );
    });

    itNeeds('administration', 'orders keys created in the same second by rotation order', async () => {
      const k1 = makeSigningKey();
      const k2 = makeSigningKey();
      await store.rotateSigningKey(k1);
      await store.rotateSigningKey(k2);
      assert.deepEqual(
        (await store.listSigningKeys()).map((k) => k.kid),
        [k2.kid, k1.kid],
      );
    });

    it('ensureSigningKey saves the first key only', async () => {
      const first = makeSigningKey();
      const second = makeSigningKey();
      assert.deepEqual(await store.ensureSigningKey(first), first);
      assert.deepEqual(await store.ensureSigningKey(second), first);
      assert.deepEqual(await store.listSigningKeys(), [first]);
    });

    itNeeds('administration', 'ensureSigningKey returns the current key after a rotation', async () => {
      await store.ensureSigningKey(makeSigningKey());
      const rotated = makeSigningKey({ createdAt: NOW + 1 });
      await store.rotateSigningKey(rotated);
      assert.deepEqual(await store.ensureSigningKey(makeSigningKey()), rotated);
      assert.equal((await store.listSigningKeys()).length, 2);
    });

    it('concurrent ensureSigningKey calls agree on one key', async () => {
      const keys = Array.from({ length: 20 }, () => makeSigningKey());
      const results = await Promise.all(keys.map((key) => store.ensureSigningKey(key)));
      assert.equal(new Set(results.map((k) => k.kid)).size, 1);
      assert.equal((await store.listSigningKeys()).length, 1);
    });
  });
}
