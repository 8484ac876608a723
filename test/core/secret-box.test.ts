import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SecretBox, generateSecretKey, parseSecretKeys, type SealedValueDefect } from '../../src/core/secret-box.js';

const box = (...keys: string[]): SecretBox => new SecretBox(parseSecretKeys(keys.join(','), 'test'));

/** Why a sealed value does not open; fails the test when it opens. */
function refusal(opened: ReturnType<SecretBox['open']>): SealedValueDefect {
  assert.ok(!opened.ok, 'it opened');
  return opened.defect;
}

describe('SecretBox (upstream tokens at rest)', () => {
  const key = generateSecretKey();

  it('opens what it sealed, for the same owner', () => {
    const sealed = box(key).seal('upstream-access-token', 'grant-1');
    assert.deepEqual(box(key).open(sealed, 'grant-1'), { ok: true, value: 'upstream-access-token' });
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
    assert.equal(refusal(box(generateSecretKey()).open(sealed, 'grant-1')).code, 'unknown_key');
  });

  it('cannot be moved to another owner', () => {
    const sealed = box(key).seal('upstream-access-token', 'grant-1');
    assert.deepEqual(refusal(box(key).open(sealed, 'grant-2')), { code: 'altered', description: 'the sealed value was altered, or belongs to another owner' });
  });

  it('any change to the sealed value is detected', () => {
    const sealed = box(key).seal('upstream-access-token', 'grant-1');
    const parts = sealed.split('.');
    const body = Buffer.from(parts[3]!, 'base64url');
    body[0] = body[0]! ^ 1;
    assert.equal(refusal(box(key).open([...parts.slice(0, 3), body.toString('base64url')].join('.'), 'grant-1')).code, 'altered');
    assert.deepEqual(refusal(box(key).open('not sealed', 'grant-1')), { code: 'malformed', description: 'not a sealed value' });
  });

  it('rotation: the newest key seals, older keys still open', () => {
    const old = box(key).seal('sealed before the rotation', 'g');
    const rotated = box(generateSecretKey(), key);
    assert.deepEqual(rotated.open(old, 'g'), { ok: true, value: 'sealed before the rotation' });
    assert.ok(rotated.isStale(old));
    const fresh = rotated.seal('sealed after', 'g');
    assert.ok(!rotated.isStale(fresh));
    assert.match(refusal(box(key).open(fresh, 'g')).description, /not configured/);
  });

  it('reads base64 as openssl prints it, and refuses keys of the wrong size', () => {
    const standard = Buffer.from(key, 'base64url').toString('base64');
    assert.equal(parseSecretKeys(standard, 'env')[0]!.id, parseSecretKeys(key, 'env')[0]!.id);
    assert.throws(() => parseSecretKeys('c2hvcnQ', 'env'), /not 32 bytes/);
    assert.throws(() => parseSecretKeys('  ', 'env'), /holds no key/);
  });
});
