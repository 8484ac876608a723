import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { jwtSigner, verificationKey } from '../../../src/core/jwt.js';
import { AssertionDefect, readAssertion, spendAssertion, verifyAssertion, type AssertionRules } from '../../../src/authorization-server/assertions/verify-assertion.js';
import { createMemoryStore } from '../../../src/store/index.js';

const NOW = 1_800_000_000;
const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const sign = jwtSigner({ alg: 'ES256', kid: 'k1', typ: 'JWT' }, privateKey);
const keys = () => ({ key: verificationKey(publicKey, 'ES256') });
const rules: AssertionRules = { name: 'client assertion', audiences: ['https://as.example'], audienceList: false, maxLifetimeSeconds: 300, clockToleranceSeconds: 10 };
const claims = { iss: 'c1', sub: 'c1', aud: 'https://as.example', jti: 'j1', iat: NOW, exp: NOW + 60 };

function encode(part: object): string {
  return Buffer.from(JSON.stringify(part)).toString('base64url');
}

async function defectOf(token: string, overrides: Partial<AssertionRules> = {}): Promise<string> {
  try {
    await verifyAssertion(readAssertion(token, 'client assertion'), keys, { ...rules, ...overrides }, NOW);
  } catch (error) {
    assert.ok(error instanceof AssertionDefect);
    const payload = token.split('.')[1] ?? '';
    assert.ok(payload.length < 8 || !error.message.includes(payload), 'never echoes the assertion');
    return error.message;
  }
  assert.fail('accepted');
}

describe('verifyAssertion', () => {
  it('accepts a well-formed assertion and returns its claims', async () => {
    const verified = await verifyAssertion(readAssertion(sign(claims), 'x'), keys, rules, NOW);
    assert.equal(verified.sub, 'c1');
    assert.equal(verified.jti, 'j1');
  });

  it('names each defect', async () => {
    assert.match(await defectOf(sign({ ...claims, aud: 'https://other.example' })), /aud does not name this authorization server/);
    assert.match(await defectOf(sign({ ...claims, exp: NOW - 60 })), /has expired/);
    assert.match(await defectOf(sign({ ...claims, exp: undefined })), /has no exp/);
    assert.match(await defectOf(sign({ ...claims, exp: NOW + 3600 })), /lives too long/);
    assert.match(await defectOf(sign({ ...claims, jti: undefined })), /has no jti/);
    // RFC 7523 §3: iss and sub MUST be present.
    assert.match(await defectOf(sign({ ...claims, iss: undefined })), /has no iss/);
    assert.match(await defectOf(sign({ ...claims, sub: '' })), /has no sub/);
    assert.match(await defectOf(sign({ ...claims, nbf: NOW + 600 })), /not valid yet/);
    assert.match(await defectOf(sign({ ...claims, iat: NOW + 600 })), /issued in the future/);
    assert.match(await defectOf(sign(claims), { typ: 'oauth-id-jag+jwt' }), /typ is not oauth-id-jag\+jwt/);
    assert.match(await defectOf('not.a.jwt'), /not a signed JWT/);
  });

  it('takes aud as a single string naming us unless lists are allowed, and never a list naming anyone else', async () => {
    const lists = { audienceList: true, audiences: ['https://as.example', 'https://as.example/token'] };
    assert.match(await defectOf(sign({ ...claims, aud: ['https://as.example'] })), /aud must be a single string, not a list/);
    assert.match(await defectOf(sign({ ...claims, aud: ['https://as.example'] }), { expectedAudience: 'the issuer identifier https://as.example' }), /not a list: the issuer identifier https:\/\/as\.example/);
    assert.match(await defectOf(sign({ ...claims, aud: 'https://as.example/token' }), { expectedAudience: 'X' }), /aud does not name this authorization server: it must be X/);
    assert.match(await defectOf(sign({ ...claims, aud: undefined })), /has no aud/);
    assert.match(await defectOf(sign({ ...claims, aud: [] }), lists), /has no aud/);
    assert.match(await defectOf(sign({ ...claims, aud: ['https://as.example', 'https://rs.example'] }), lists), /names another audience beside this authorization server/);
    assert.match(await defectOf(sign({ ...claims, aud: ['https://as.example', 7] }), lists), /names another audience/);
    assert.match(await defectOf(sign({ ...claims, aud: ['https://rs.example'] }), lists), /does not name this authorization server/);
    for (const aud of [['https://as.example'], ['https://as.example/token', 'https://as.example'], 'https://as.example/token']) {
      const verified = await verifyAssertion(readAssertion(sign({ ...claims, aud }), 'x'), keys, { ...rules, ...lists }, NOW);
      assert.equal(verified.sub, 'c1', JSON.stringify(aud));
    }
  });

  it('refuses alg none and HMAC before looking for a key', async () => {
    const none = `${encode({ alg: 'none' })}.${encode(claims)}.`;
    assert.match(await defectOf(none), /unsigned \(alg none is never accepted\)/);
    assert.match(await defectOf(`${encode({ alg: 'none' })}.${encode(claims)}.${Buffer.alloc(64).toString('base64url')}`), /algorithm that is not accepted/);
    const hs256 = `${encode({ alg: 'HS256', kid: 'k1' })}.${encode(claims)}.${Buffer.alloc(32).toString('base64url')}`;
    assert.match(await defectOf(hs256), /algorithm that is not accepted/);
  });

  it('refuses a signature made with another key, and an unknown kid', async () => {
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    assert.match(await defectOf(jwtSigner({ alg: 'ES256', kid: 'k1', typ: 'JWT' }, other)(claims)), /signature does not verify/);
    await assert.rejects(
      verifyAssertion(readAssertion(sign(claims), 'x'), () => ({ problem: 'unknown' }), rules, NOW),
      /no key of the client assertion's issuer matches its kid/,
    );
  });

  it('spendAssertion accepts a jti once', async () => {
    const store = createMemoryStore();
    const verified = await verifyAssertion(readAssertion(sign(claims), 'x'), keys, rules, NOW);
    await spendAssertion(store, verified, 'client assertion', NOW, 10);
    await assert.rejects(spendAssertion(store, verified, 'client assertion', NOW + 1, 10), /was used before/);
  });
});
