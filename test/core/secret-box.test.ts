import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SecretBox, SecretBoxError, generateSecretKey, parseSecretKeys } from '../../src/core/secret-box.js';

const box = (...keys: string[]): SecretBox => new SecretBox(parseSecretKeys(keys.join(','), 'test'));

describe('SecretBox (upstream tokens at rest)', () => {
  const key = generateSecretKey();

  it('opens what it sealed, for the same owner', () => {
    const sealed = box(key).seal('upstream-access-token', 'grant-1');
    assert.equal(box(key).open(sealed, 'grant-1'), 'upstream-access-token');
  });

  it('the sealed form does not contain the secret and differs every time', () => {
    const a = box(key).seal('upstream-access-token', 'grant-1');
    const b = box(key).seal('upstream-access-token', 'grant-1');
    assert.notEqual(a, b);
    assert.ok(!a.includes('upstream-access-token'));
    assert.ok(!Buffer.from(a.split('.')[3]!, 'base64url').toString('latin1').includes('upstream'));
  });

  it('cannot be opened without the key', () => {
    const sealed = box(key).seal('upstream-access-token', 'grant-1');
    assert.throws(() => box(generateSecretKey()).open(sealed, 'grant-1'), SecretBoxError);
  });

  it('cannot be moved to another owner', () => {
    const sealed = box(key).seal('upstream-access-token', 'grant-1');
    assert.throws(() => box(key).open(sealed, 'grant-2'), /altered, or belongs to another owner/);
  });

  it('any change to the sealed value is detected', () => {
    const sealed = box(key).seal('upstream-access-token', 'grant-1');
    const parts = sealed.split('.');
    const body = Buffer.from(parts[3]!, 'base64url');
    body[0] = body[0]! ^ 1;
    assert.throws(() => box(key).open([...parts.slice(0, 3), body.toString('base64url')].join('.'), 'grant-1'), SecretBoxError);
    assert.throws(() => box(key).open('not sealed', 'grant-1'), /not a sealed value/);
  });

  it('rotation: the newest key seals, older keys still open', () => {
    const old = box(key).seal('sealed before the rotation', 'g');
    const rotated = box(generateSecretKey(), key);
    assert.equal(rotated.open(old, 'g'), 'sealed before the rotation');
    assert.ok(rotated.isStale(old));
    const fresh = rotated.seal('sealed after', 'g');
    assert.ok(!rotated.isStale(fresh));
    assert.throws(() => box(key).open(fresh, 'g'), /not configured/);
  });

  it('reads base64 as openssl prints it, and refuses keys of the wrong size', () => {
    const standard = Buffer.from(key, 'base64url').toString('base64');
    assert.equal(parseSecretKeys(standard, 'env')[0]!.id, parseSecretKeys(key, 'env')[0]!.id);
    assert.throws(() => parseSecretKeys('c2hvcnQ', 'env'), /not 32 bytes/);
    assert.throws(() => parseSecretKeys('  ', 'env'), /holds no key/);
  });
});
