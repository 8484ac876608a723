import assert from 'node:assert/strict';
import type { JsonWebKey } from 'node:crypto';
import { describe, it } from 'node:test';
import { macKeyOf, rotateSigningKeys, SigningKeys } from '../../src/authorization-server/keys.js';
import { privateKeyFromJwk } from '../../src/core/jwt.js';
import { createMemoryStore } from '../../src/store/memory.js';

describe('MAC keys derived from the signing keys', () => {
  it('are one per published key, the signing key first, and differ by label', async () => {
    const store = createMemoryStore();
    let now = 1_000_000;
    const keys = new SigningKeys(store, () => now, 5, 10);
    const [only, ...none] = await keys.macKeys('form');
    assert.equal(none.length, 0);
    assert.equal(only!.length, 32);
    assert.notDeepEqual((await keys.macKeys('refresh'))[0], only);
    assert.equal(keys.macKeysIfCached('form')![0], only, 'derived once, then kept');

    now += 1;
    await rotateSigningKeys(store, now);
    keys.invalidate();
    // The new key is published at once but signs only after its activation delay: until then the old key's MAC key comes first.
    assert.deepEqual(await keys.macKeys('form'), [only, (await keys.macKeys('form'))[1]]);
    now += 10;
    keys.invalidate();
    const [first, second] = await keys.macKeys('form');
    assert.equal(second, only);
    assert.notDeepEqual(first, only);
  });

  it('a replica on the same store derives the same keys; a process on another does not', async () => {
    const store = createMemoryStore();
    const now = () => 1_000_000;
    const a = await new SigningKeys(store, now).macKeys('form');
    const b = await new SigningKeys(store, now).macKeys('form');
    assert.deepEqual(a, b);
    const other = await new SigningKeys(createMemoryStore(), now).macKeys('form');
    assert.notDeepEqual(other, a);
  });

  it('reveal nothing of the signing key: HKDF of its private part, not the part itself', async () => {
    const store = createMemoryStore();
    const keys = new SigningKeys(store, () => 1_000_000);
    const [mac] = await keys.macKeys('form');
    const [record] = await store.listSigningKeys();
    const jwk = JSON.parse(record!.privateJwk) as { d: string };
    assert.notEqual(mac!.toString('base64url'), jwk.d);
    assert.deepEqual(mac, macKeyOf(privateKeyFromJwk(JSON.parse(record!.privateJwk) as JsonWebKey, record!.alg), 'form'));
  });
});
