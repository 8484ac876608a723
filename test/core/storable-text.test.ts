import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isStorableJson, isStorableText } from '../../src/core/storable-text.js';

describe('storable text', () => {
  it('accepts any text without NUL or unpaired surrogates, pairs (emoji) included', () => {
    for (const text of ['', 'plain', 'é', 'e\u0301', '🙂', '\ud83d\ude42', '\uffff', '%00', '\\u0000']) assert.ok(isStorableText(text), JSON.stringify(text));
  });

  it('refuses NUL and unpaired surrogates anywhere in the text', () => {
    for (const text of ['\u0000', 'a\u0000b', '\ud800', 'x\udfff', '\udfff\ud800', '🙂\ud83d']) assert.ok(!isStorableText(text), JSON.stringify(text));
  });

  it('looks through JSON values, keys included', () => {
    assert.ok(isStorableJson({ a: ['b', { c: 1, d: null, e: true }] }));
    assert.ok(!isStorableJson({ a: ['b', { c: 'x\u0000' }] }));
    assert.ok(!isStorableJson({ 'k\ud800': 1 }));
    assert.ok(!isStorableJson(['\udc00']));
  });

  it('walks JSON deeper than the stack (a 64 KiB body can nest 30,000 arrays)', () => {
    const deep = JSON.parse(`${'['.repeat(30_000)}"\\u0000"${']'.repeat(30_000)}`) as unknown;
    assert.equal(isStorableJson(deep), false);
  });
});
