import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { jwtSigner, verificationKey } from '../../../src/core/jwt.js';
import {
  readAssertion,
  spendAssertion,
  verifyAssertion,
  type AssertionCheck,
  type AssertionDefectCode,
  type AssertionRules,
} from '../../../src/authorization-server/assertions/verify-assertion.js';
import { createMemoryStore } from '../../../src/store/index.js';

const NOW = 1_800_000_000;
const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const sign = jwtSigner({ alg: 'ES256', kid: 'k1', typ: 'JWT' }, privateKey);
const keys = () => ({ key: verificationKey(publicKey, 'ES256') });
const rules: AssertionRules = {
  name: 'client assertion',
  audiences: ['https://as.example'],
  audienceList: false,
  maxLifetimeSeconds: 300,
  clockToleranceSeconds: 10,
};
const claims = { iss: 'c1', sub: 'c1', aud: 'https://as.example', jti: 'j1', iat: NOW, exp: NOW + 60 };

function encode(part: object): string {
  return Buffer.from(JSON.stringify(part)).toString('base64url');
}

/** The value a check vouches for; fails the test on a defect. */
function valueOf<T>(check: AssertionCheck<T>): T {
  assert.ok(check.ok, check.ok ? '' : check.defect.description);
  return check.value;
}

async function defectOf(token: string, overrides: Partial<AssertionRules> = {}, code?: AssertionDefectCode): Promise<string> {
  const read = readAssertion(token, 'client assertion');
  const check = read.ok ? await verifyAssertion(read.value, keys, { ...rules, ...overrides }, NOW) : read;
  assert.ok(!check.ok, 'accepted');
  if (code) assert.equal(check.defect.code, code);
  const payload = token.split('.')[1] ?? '';
  assert.ok(payload.length < 8 || !check.defect.description.includes(payload), 'never echoes the assertion');
  return check.defect.description;
}

describe('verifyAssertion', () => {
  it('accepts a well-formed assertion and returns its claims', async () => {
    const verified = valueOf(await verifyAssertion(valueOf(readAssertion(sign(claims), 'x')), keys, rules, NOW));
    assert.equal(verified.sub, 'c1');
    assert.equal(verified.jti, 'j1');
  });

  it('names each defect, with a stable code', async () => {
    assert.match(await defectOf(sign({ ...claims, aud: 'https://other.example' }), {}, 'audience'), /aud does not name this authorization server/);
    assert.match(await defectOf(sign({ ...claims, exp: NOW - 60 }), {}, 'time'), /has expired/);
    assert.match(await defectOf(sign({ ...claims, exp: undefined }), {}, 'claims'), /has no exp/);
    assert.match(await defectOf(sign({ ...claims, exp: NOW + 3600 }), {}, 'time'), /lives too long/);
    assert.match(await defectOf(sign({ ...claims, jti: undefined }), {}, 'claims'), /has no jti/);
    // RFC 7523 §3: iss and sub MUST be present.
    assert.match(await defectOf(sign({ ...claims, iss: undefined }), {}, 'claims'), /has no iss/);
    assert.match(await defectOf(sign({ ...claims, sub: '' }), {}, 'claims'), /has no sub/);
    assert.match(await defectOf(sign({ ...claims, nbf: NOW + 600 }), {}, 'time'), /not valid yet/);
    assert.match(await defectOf(sign({ ...claims, iat: NOW + 600 }), {}, 'time'), /issued in the future/);
    assert.match(await defectOf(sign(claims), { typ: 'oauth-id-jag+jwt' }, 'header'), /typ is not oauth-id-jag\+jwt/);
    assert.match(await defectOf('not.a.jwt', {}, 'malformed'), /not a signed JWT/);
  });

  it('takes aud as a single string naming us unless lists are allowed, and never a list naming anyone else', async () => {
    const lists = { audienceList: true, audiences: ['https://as.example', 'https://as.example/token'] };
    assert.match(await defectOf(sign({ ...claims, aud: ['https://as.example'] })), /aud must be a single string, not a list/);
    assert.match(
      await defectOf(sign({ ...claims, aud: ['https://as.example'] }), { expectedAudience: 'the issuer identifier https://as.example' }),
      /not a list: the issuer identifier https:\/\/as\.example/,
    );
    assert.match(
      await defectOf(sign({ ...claims, aud: 'https://as.example/token' }), { expectedAudience: 'X' }),
      /aud does not name this authorization server: it must be X/,
    );
    assert.match(await defectOf(sign({ ...claims, aud: undefined })), /has no aud/);
    assert.match(await defectOf(sign({ ...claims, aud: [] }), lists), /has no aud/);
    assert.match(
      await defectOf(sign({ ...claims, aud: ['https://as.example', 'https://rs.example'] }), lists),
      /names another audience beside this authorization server/,
    );
    assert.match(await defectOf(sign({ ...claims, aud: ['https://as.example', 7] }), lists), /names another audience/);
    assert.match(await defectOf(sign({ ...claims, aud: ['https://rs.example'] }), lists), /does not name this authorization server/);
    for (const aud of [['https://as.example'], ['https://as.example/token', 'https://as.example'], 'https://as.example/token']) {
      const verified = valueOf(await verifyAssertion(valueOf(readAssertion(sign({ ...claims, aud }), 'x')), keys, { ...rules, ...lists }, NOW));
      assert.equal(verified.sub, 'c1', JSON.stringify(aud));
    }
  });

  it('refuses alg none and HMAC before looking for a key', async () => {
    const none = `${encode({ alg: 'none' })}.${encode(claims)}.`;
    assert.match(await defectOf(none, {}, 'algorithm'), /unsigned \(alg none is never accepted\)/);
    assert.match(await defectOf(`${encode({ alg: 'none' })}.${encode(claims)}.${Buffer.alloc(64).toString('base64url')}`), /algorithm that is not accepted/);
    const hs256 = `${encode({ alg: 'HS256', kid: 'k1' })}.${encode(claims)}.${Buffer.alloc(32).toString('base64url')}`;
    assert.match(await defectOf(hs256), /algorithm that is not accepted/);
  });

  it('refuses a signature made with another key, and an unknown kid', async () => {
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    assert.match(await defectOf(jwtSigner({ alg: 'ES256', kid: 'k1', typ: 'JWT' }, other)(claims), {}, 'signature'), /signature does not verify/);
    const unknownKid = await verifyAssertion(valueOf(readAssertion(sign(claims), 'x')), () => ({ problem: 'unknown' }), rules, NOW);
    assert.deepEqual(unknownKid, { ok: false, defect: { code: 'key', description: "no key of the client assertion's issuer matches its kid and alg" } });
  });

  it('spendAssertion accepts a jti once', async () => {
    const store = createMemoryStore();
    const verified = valueOf(await verifyAssertion(valueOf(readAssertion(sign(claims), 'x')), keys, rules, NOW));
    valueOf(await spendAssertion(store, verified, 'client assertion', NOW, 10));
    const again = await spendAssertion(store, verified, 'client assertion', NOW + 1, 10);
    assert.ok(!again.ok);
    assert.equal(again.defect.code, 'replayed');
    assert.match(again.defect.description, /was used before/);
  });
});
