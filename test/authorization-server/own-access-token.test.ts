/**
 * verifyOwnAccessToken, which introspection and revocation use: one of our access tokens is
 * accepted only with a published key of ours, that key's own algorithm, typ at+jwt, our issuer,
 * no crit, not expired, and jti and client_id present.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign as cryptoSign, type KeyObject } from 'node:crypto';
import { describe, it } from 'node:test';
import { resolveConfig } from '../../src/authorization-server/config.js';
import { rotateSigningKeys } from '../../src/authorization-server/keys.js';
import { verifyOwnAccessToken } from '../../src/authorization-server/tokens.js';
import { createHarness, jwtClaims, obtainTokens, REVISIONS, type Harness } from '../helpers/harness.js';

function handSigned(key: KeyObject, header: Record<string, unknown>, claims: Record<string, unknown>, hash = 'sha256'): string {
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${input}.${cryptoSign(hash, Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

async function setup(): Promise<{ h: Harness; token: string; claims: Record<string, unknown>; kid: string; key: KeyObject }> {
  const h = createHarness();
  const { tokens } = await obtainTokens(h, REVISIONS[1]);
  const { kid, key } = await h.server.keys.current();
  return { h, token: String(tokens.access_token), claims: jwtClaims(tokens.access_token), kid, key };
}

const own = (h: Harness, token: string) => verifyOwnAccessToken({ config: resolveConfig(h.options), keys: h.server.keys, now: () => h.clock.now }, token);

describe('verifyOwnAccessToken', () => {
  it('accepts a token we issued, and the same claims hand-signed with our key (the control)', async () => {
    const { h, token, claims, kid, key } = await setup();
    assert.equal((await own(h, token))?.jti, claims.jti);
    assert.equal((await own(h, handSigned(key, { alg: 'ES256', kid, typ: 'at+jwt' }, claims)))?.jti, claims.jti);
  });

  it('refuses another typ, crit, another alg over our key, an unknown kid, or no kid', async () => {
    const { h, claims, kid, key } = await setup();
    const refused = [
      handSigned(key, { alg: 'ES256', kid, typ: 'JWT' }, claims),
      handSigned(key, { alg: 'ES256', kid }, claims),
      handSigned(key, { alg: 'ES256', kid, typ: 'at+jwt', crit: ['exp'], exp: 1 }, claims),
      handSigned(key, { alg: 'ES384', kid, typ: 'at+jwt' }, claims, 'sha384'),
      handSigned(key, { alg: 'ES384', kid, typ: 'at+jwt' }, claims),
      handSigned(key, { alg: 'ES256', kid: 'another', typ: 'at+jwt' }, claims),
      handSigned(key, { alg: 'ES256', typ: 'at+jwt' }, claims),
      handSigned(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey, { alg: 'ES256', kid, typ: 'at+jwt' }, claims),
    ];
    for (const token of refused) assert.equal(await own(h, token), undefined, token.split('.')[0]);
  });

  it('refuses another issuer, an expired token, a missing exp, jti, client_id or grant_id', async () => {
    const { h, claims, kid, key } = await setup();
    const header = { alg: 'ES256', kid, typ: 'at+jwt' };
    for (const changed of [
      { iss: 'http://127.0.0.1:9998' },
      { exp: h.clock.now },
      { exp: undefined },
      { jti: undefined },
      { client_id: undefined },
      { grant_id: undefined },
      { exp: String(h.clock.now + 60) },
    ]) {
      const token = handSigned(key, header, { ...claims, ...changed });
      assert.equal(await own(h, token), undefined, JSON.stringify(changed));
    }
  });

  it('accepts a token signed with the previous key after a rotation, not once that key is retired', async () => {
    const { h, token } = await setup();
    await rotateSigningKeys(h.store, h.clock.now);
    h.server.keys.invalidate();
    assert.ok(await own(h, token));
    await rotateSigningKeys(h.store, h.clock.now);
    h.server.keys.invalidate();
    assert.equal(await own(h, token), undefined);
  });
});
