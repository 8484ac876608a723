import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OAuthError } from '../../src/core/errors.js';
import { formatScope, isSubset, parseScope, resolveScope } from '../../src/core/scopes.js';

function isInvalidScope(error: unknown): true {
  assert.ok(error instanceof OAuthError);
  assert.equal(error.code, 'invalid_scope');
  assert.equal(error.status, 400);
  return true;
}

describe('parseScope', () => {
  const parsed: { name: string; input: string | undefined | null; expected: string[] }[] = [
    { name: 'undefined', input: undefined, expected: [] },
    { name: 'null', input: null, expected: [] },
    { name: 'empty string', input: '', expected: [] },
    { name: 'spaces only', input: '   ', expected: [] },
    { name: 'one scope', input: 'read', expected: ['read'] },
    { name: 'sorted', input: 'write read admin', expected: ['admin', 'read', 'write'] },
    { name: 'de-duplicated', input: 'read read write read', expected: ['read', 'write'] },
    { name: 'extra spaces ignored', input: '  read   write ', expected: ['read', 'write'] },
    { name: 'case-sensitive (distinct scopes)', input: 'Read read', expected: ['Read', 'read'] },
    {
      name: 'punctuation allowed by RFC 6749',
      input: "files:read mcp.tools/list a!#$%&'()*+,-./:;<=>?@[]^_`{|}~",
      expected: ["a!#$%&'()*+,-./:;<=>?@[]^_`{|}~", 'files:read', 'mcp.tools/list'],
    },
  ];
  for (const { name, input, expected } of parsed) {
    it(`${name}: ${JSON.stringify(input)} → ${JSON.stringify(expected)}`, () => {
      assert.deepEqual(parseScope(input), expected);
    });
  }

  const invalid: { name: string; input: string }[] = [
    { name: 'double quote', input: 'read "write"' },
    { name: 'backslash', input: 'read wr\\ite' },
    { name: 'tab separator', input: 'read\twrite' },
    { name: 'newline', input: 'read\nwrite' },
    { name: 'NUL', input: 'read\u0000' },
    { name: 'DEL', input: 'read\u007f' },
    { name: 'non-ASCII', input: 'lire écrire' },
    { name: 'non-breaking space', input: 'read\u00a0write' },
  ];
  for (const { name, input } of invalid) {
    it(`refuses ${name} with invalid_scope`, () => {
      assert.throws(() => parseScope(input), isInvalidScope);
    });
  }
});

describe('formatScope', () => {
  const cases: { input: string[]; expected: string }[] = [
    { input: [], expected: '' },
    { input: ['write', 'read', 'write'], expected: 'read write' },
  ];
  for (const { input, expected } of cases) {
    it(`${JSON.stringify(input)} → ${JSON.stringify(expected)}`, () => {
      assert.equal(formatScope(input), expected);
      assert.deepEqual(parseScope(formatScope(input)), [...new Set(input)].sort());
    });
  }
});

describe('resolveScope', () => {
  const allowed = ['admin', 'read', 'write'];
  const resolved: { name: string; requested: string[]; defaults: string[]; expected: string[] }[] = [
    { name: 'nothing requested → defaults', requested: [], defaults: ['read'], expected: ['read'] },
    { name: 'nothing requested → several defaults', requested: [], defaults: ['read', 'write'], expected: ['read', 'write'] },
    { name: 'nothing requested → defaults limited to allowed', requested: [], defaults: ['read', 'other'], expected: ['read'] },
    { name: 'nothing requested, no defaults → none', requested: [], defaults: [], expected: [] },
    { name: 'requested allowed scopes, defaults ignored', requested: ['write'], defaults: ['read'], expected: ['write'] },
    { name: 'every allowed scope', requested: ['admin', 'read', 'write'], defaults: [], expected: ['admin', 'read', 'write'] },
  ];
  for (const { name, requested, defaults, expected } of resolved) {
    it(name, () => {
      assert.deepEqual(resolveScope(requested, allowed, defaults), expected);
    });
  }

  const refused: { name: string; requested: string[]; message: RegExp }[] = [
    { name: 'one unknown scope', requested: ['delete'], message: /scope not allowed: delete/ },
    { name: 'unknown among allowed', requested: ['read', 'delete', 'root'], message: /scope not allowed: delete root/ },
    { name: 'case differs', requested: ['READ'], message: /scope not allowed: READ/ },
  ];
  for (const { name, requested, message } of refused) {
    it(`refuses ${name} with invalid_scope`, () => {
      assert.throws(
        () => resolveScope(requested, allowed, ['read']),
        (error: unknown) => isInvalidScope(error) && message.test((error as Error).message),
      );
    });
  }

  it('returns a copy, not the requested array', () => {
    const requested = ['read'];
    const result = resolveScope(requested, allowed, []);
    assert.notEqual(result, requested);
    assert.deepEqual(result, requested);
  });
});

describe('isSubset', () => {
  const cases: { subset: string[]; superset: string[]; expected: boolean }[] = [
    { subset: [], superset: [], expected: true },
    { subset: [], superset: ['read'], expected: true },
    { subset: ['read'], superset: ['read', 'write'], expected: true },
    { subset: ['write', 'read'], superset: ['read', 'write'], expected: true },
    { subset: ['read', 'read'], superset: ['read'], expected: true },
    { subset: ['read', 'write'], superset: ['read', 'write'], expected: true },
    { subset: ['admin'], superset: ['read', 'write'], expected: false },
    { subset: ['read', 'admin'], superset: ['read', 'write'], expected: false },
    { subset: ['read'], superset: [], expected: false },
    { subset: ['Read'], superset: ['read'], expected: false },
  ];
  for (const { subset, superset, expected } of cases) {
    it(`${JSON.stringify(subset)} ⊆ ${JSON.stringify(superset)} → ${expected}`, () => {
      assert.equal(isSubset(subset, superset), expected);
    });
  }
});
