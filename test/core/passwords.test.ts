import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { DUMMY_PASSWORD_HASH, hashPassword, verifyPassword } from '../../src/core/passwords.js';

// scrypt at N=2^15 costs tens of milliseconds per call: hash each password once, up front.
const PASSWORD = 'correct horse battery staple';
let stored: string;
let parts: string[];

before(async () => {
  stored = await hashPassword(PASSWORD);
  parts = stored.split('$');
});

describe('hashPassword', () => {
  it('produces scrypt$N$r$p$salt$key with the recommended cost', () => {
    assert.equal(parts.length, 6);
    assert.deepEqual(parts.slice(0, 4), ['scrypt', String(1 << 15), '8', '1']);
    assert.equal(Buffer.from(parts[4]!, 'base64url').length, 16, '16-byte salt');
    assert.equal(Buffer.from(parts[5]!, 'base64url').length, 32, '32-byte key');
    assert.ok(!stored.includes(PASSWORD));
  });

  it('salts: two hashes of the same password differ, and both verify', async () => {
    const [a, b] = await Promise.all([hashPassword('same password'), hashPassword('same password')]);
    assert.notEqual(a, b);
    assert.notEqual(a.split('$')[4], b.split('$')[4], 'different salts');
    assert.equal(await verifyPassword('same password', a), true);
    assert.equal(await verifyPassword('same password', b), true);
  });

  it('DUMMY_PASSWORD_HASH has the same shape as a real hash', () => {
    assert.deepEqual(DUMMY_PASSWORD_HASH.split('$').slice(0, 4), parts.slice(0, 4));
    assert.equal(DUMMY_PASSWORD_HASH.split('$').length, 6);
  });
});

describe('verifyPassword', () => {
  const candidates: { name: string; password: string; expected: boolean }[] = [
    { name: 'the right password', password: PASSWORD, expected: true },
    { name: 'the right password in NFKC-equivalent form', password: PASSWORD.replace('a', '\uff41'), expected: true },
    { name: 'a wrong password', password: 'Tr0ub4dor&3', expected: false },
    { name: 'a case variant', password: PASSWORD.toUpperCase(), expected: false },
    { name: 'a trailing space', password: `${PASSWORD} `, expected: false },
    { name: 'a prefix', password: PASSWORD.slice(0, -1), expected: false },
    { name: 'the empty password', password: '', expected: false },
  ];
  for (const { name, password, expected } of candidates) {
    it(`${expected ? 'accepts' : 'refuses'} ${name}`, async () => {
      assert.equal(await verifyPassword(password, stored), expected);
    });
  }

  it('refuses any password against DUMMY_PASSWORD_HASH', async () => {
    assert.equal(await verifyPassword(PASSWORD, DUMMY_PASSWORD_HASH), false);
  });

  /** Each case rewrites the stored hash into something malformed. */
  const malformed: { name: string; make: (p: string[]) => string }[] = [
    { name: 'empty string', make: () => '' },
    { name: 'not a hash', make: () => 'hunter2' },
    { name: 'the bare password', make: () => PASSWORD },
    { name: 'other algorithm', make: (p) => ['bcrypt', ...p.slice(1)].join('$') },
    { name: 'too few fields', make: (p) => p.slice(0, 5).join('$') },
    { name: 'too many fields', make: (p) => [...p, 'extra'].join('$') },
    { name: 'non-numeric N', make: (p) => [p[0], 'abc', ...p.slice(2)].join('$') },
    { name: 'zero N', make: (p) => [p[0], '0', ...p.slice(2)].join('$') },
    { name: 'negative r', make: (p) => [...p.slice(0, 2), '-8', ...p.slice(3)].join('$') },
    { name: 'fractional p', make: (p) => [...p.slice(0, 3), '1.5', ...p.slice(4)].join('$') },
    { name: 'N not a power of two', make: (p) => [p[0], '1000', ...p.slice(2)].join('$') },
    { name: 'N over the memory limit', make: (p) => [p[0], String(1 << 20), ...p.slice(2)].join('$') },
    { name: 'different (valid) N', make: (p) => [p[0], String(1 << 14), ...p.slice(2)].join('$') },
    { name: 'empty salt and key', make: (p) => [...p.slice(0, 4), '', ''].join('$') },
    { name: 'truncated key', make: (p) => [...p.slice(0, 5), p[5]!.slice(0, 20)].join('$') },
    { name: 'key of another salt', make: (p) => [...p.slice(0, 4), Buffer.alloc(16).toString('base64url'), p[5]].join('$') },
  ];
  for (const { name, make } of malformed) {
    it(`returns false (does not throw) for a malformed stored hash: ${name}`, async () => {
      assert.equal(await verifyPassword(PASSWORD, make(parts)), false);
    });
  }
});
