import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { hashSecret, matchesDigest, randomToken, safeEqual } from '../../src/core/secrets.js';

const BASE64URL = /^[A-Za-z0-9_-]+$/;

describe('randomToken', () => {
  const cases: { bytes: number | undefined; length: number }[] = [
    { bytes: undefined, length: 43 }, // default 32 bytes = 256 bits
    { bytes: 16, length: 22 },
    { bytes: 32, length: 43 },
    { bytes: 48, length: 64 },
    { bytes: 1, length: 2 },
  ];
  for (const { bytes, length } of cases) {
    it(`${bytes ?? 'default'} bytes → ${length} base64url characters`, () => {
      const token = bytes === undefined ? randomToken() : randomToken(bytes);
      assert.equal(token.length, length);
      assert.match(token, BASE64URL);
      assert.ok(!token.includes('='), 'no padding');
      assert.equal(Buffer.from(token, 'base64url').length, bytes ?? 32);
    });
  }

  it('is unique across many draws', () => {
    const count = 10_000;
    const tokens = new Set(Array.from({ length: count }, () => randomToken()));
    assert.equal(tokens.size, count);
  });
});

describe('hashSecret', () => {
  const cases: { secret: string }[] = [{ secret: '' }, { secret: 'secret' }, { secret: randomToken() }, { secret: 'mot de passe – é' }];
  for (const { secret } of cases) {
    it(`is deterministic SHA-256 base64url for ${JSON.stringify(secret)}`, () => {
      const hash = hashSecret(secret);
      assert.equal(hashSecret(secret), hash);
      assert.equal(hash, createHash('sha256').update(secret, 'utf8').digest('base64url'));
      assert.equal(hash.length, 43);
      assert.match(hash, BASE64URL);
      assert.notEqual(hash, secret);
    });
  }

  it('matches a known SHA-256 vector ("abc", FIPS 180-2)', () => {
    const hex = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
    assert.equal(hashSecret('abc'), Buffer.from(hex, 'hex').toString('base64url'));
  });

  it('differs for different secrets', () => {
    assert.notEqual(hashSecret('secret'), hashSecret('Secret'));
    assert.notEqual(hashSecret('secret'), hashSecret('secret '));
  });
});

describe('safeEqual', () => {
  const token = randomToken();
  const cases: { name: string; a: string; b: string; expected: boolean }[] = [
    { name: 'identical strings', a: 'abc', b: 'abc', expected: true },
    { name: 'identical empty strings', a: '', b: '', expected: true },
    { name: 'identical random tokens', a: token, b: `${token}`, expected: true },
    { name: 'identical non-ASCII', a: 'é€', b: 'é€', expected: true },
    { name: 'same length, last character differs', a: 'abc', b: 'abd', expected: false },
    { name: 'same length, first character differs', a: 'xbc', b: 'abc', expected: false },
    { name: 'case differs', a: 'abc', b: 'ABC', expected: false },
    { name: 'prefix (different lengths)', a: 'abc', b: 'abcd', expected: false },
    { name: 'longer first (different lengths)', a: 'abcd', b: 'abc', expected: false },
    { name: 'empty vs non-empty', a: '', b: 'a', expected: false },
    { name: 'very different lengths', a: 'a', b: 'a'.repeat(1000), expected: false },
    { name: 'NFC vs NFD (no normalisation)', a: '\u00e9', b: 'e\u0301', expected: false },
    { name: 'two different lone surrogates (the same in UTF-8)', a: 'a\ud800', b: 'a\udbff', expected: false },
    { name: 'a lone surrogate vs the replacement character', a: '\udc00', b: '\ufffd', expected: false },
    { name: 'identical lone surrogates', a: 'a\ud800', b: 'a\ud800', expected: true },
  ];
  for (const { name, a, b, expected } of cases) {
    it(`${name} → ${expected}`, () => {
      assert.equal(safeEqual(a, b), expected);
      assert.equal(safeEqual(b, a), expected, 'symmetric');
    });
  }
});

describe('matchesDigest', () => {
  const digest = hashSecret('token');
  it('takes the digest itself', () => assert.equal(matchesDigest(`${digest}`, digest), true));
  for (const [name, sent] of [
    ['one character changed', `${digest.slice(0, -1)}${digest.endsWith('A') ? 'B' : 'A'}`],
    ['a prefix', digest.slice(0, -1)],
    ['longer', `${digest}A`],
    ['empty', ''],
    ['another digest', hashSecret('other')],
    // Characters whose UTF-8 is longer: compared as bytes, never truncated to match.
    ['non-ASCII of the same length', `${digest.slice(0, -1)}\u0141`],
    ['a lone surrogate', `${digest.slice(0, -1)}\ud800`],
  ] as const) {
    it(`refuses ${name}`, () => assert.equal(matchesDigest(sent, digest), false));
  }
});
