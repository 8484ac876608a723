import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { rotateSigningKeys } from '../../src/authorization-server/keys.js';
import { addResourceServer, createHarness, introspect, ISSUER, obtainTokens, REVISIONS, type Harness } from '../helpers/harness.js';

async function jwks(h: Harness): Promise<JSONWebKeySet> {
  const response = await h.request('/jwks');
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^application\/jwk-set\+json/);
  return (await response.json()) as JSONWebKeySet;
}

async function verifies(h: Harness, token: unknown): Promise<boolean> {
  const set = createLocalJWKSet(await jwks(h));
  return jwtVerify(String(token), set, { issuer: ISSUER, currentDate: new Date(h.clock.now * 1000) }).then(
    () => true,
    () => false,
  );
}

async function rotate(h: Harness): Promise<void> {
  h.clock.now += 1;
  await rotateSigningKeys(h.store, h.clock.now);
  h.server.keys.invalidate();
}

describe('JWKS', () => {
  it('publishes the current public key only: EC P-256, ES256, kid, use sig, no private part', async () => {
    const { keys } = await jwks(createHarness());
    assert.equal(keys.length, 1);
    const [key] = keys;
    assert.equal(key!.kty, 'EC');
    assert.equal(key!.crv, 'P-256');
    assert.equal(key!.alg, 'ES256');
    assert.equal(key!.use, 'sig');
    assert.equal(typeof key!.kid, 'string');
    assert.equal(key!.d, undefined);
  });

  it('keeps the same key between requests', async () => {
    const h = createHarness();
    assert.deepEqual(await jwks(h), await jwks(h));
  });

  it('publishes the current and the previous key after a rotation, and retires the one before', async () => {
    const h = createHarness();
    const [first] = (await jwks(h)).keys;
    await rotate(h);
    const afterOne = (await jwks(h)).keys.map((key) => key.kid);
    assert.equal(afterOne.length, 2);
    assert.ok(afterOne.includes(first!.kid));
    await rotate(h);
    const afterTwo = (await jwks(h)).keys.map((key) => key.kid);
    assert.equal(afterTwo.length, 2);
    assert.ok(!afterTwo.includes(first!.kid));
  });
});

for (const revision of REVISIONS) {
  describe(`JWKS and key rotation — ${revision.name}`, () => {
    it('still verifies a token signed before a rotation; new tokens use the new key', async () => {
      const h = createHarness();
      const before = await obtainTokens(h, revision);
      await rotate(h);
      assert.ok(await verifies(h, before.tokens.access_token));
      assert.equal((await introspect(h, before.tokens.access_token, await addResourceServer(h))).active, true);

      const oldKid = decodeProtectedHeader(String(before.tokens.access_token)).kid;
      const newKey = (await jwks(h)).keys.find((key) => key.kid !== oldKid)!;
      // Published at once, but signing only after 10 s, so resource servers know it first.
      const during = await obtainTokens(h, revision, { client: before.client });
      assert.equal(decodeProtectedHeader(String(during.tokens.access_token)).kid, oldKid);
      h.clock.now += 10;
      h.server.keys.invalidate();
      const after = await obtainTokens(h, revision, { client: before.client });
      const newKid = decodeProtectedHeader(String(after.tokens.access_token)).kid;
      assert.equal(newKid, newKey.kid);
      assert.ok((await jwks(h)).keys.some((key) => key.kid === newKid));
      assert.ok(await verifies(h, after.tokens.access_token));
    });

    it('stops accepting a token once its key is retired (two rotations later)', async () => {
      const h = createHarness();
      const { tokens } = await obtainTokens(h, revision);
      const rs = await addResourceServer(h);
      await rotate(h);
      await rotate(h);
      assert.equal(await verifies(h, tokens.access_token), false);
      assert.equal((await introspect(h, tokens.access_token, rs)).active, false);
    });
  });
}
