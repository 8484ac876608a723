import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { printable, printableJson, withoutControlCharacters } from '../../src/core/control-characters.js';

describe('control characters in text from elsewhere', () => {
  it('are removed before keeping: escapes, C1, DEL, bidi overrides; line breaks become a space', () => {
    assert.equal(withoutControlCharacters('Eve\u001b[2J\u001b[H Example'), 'Eve[2J[H Example');
    assert.equal(withoutControlCharacters('a\u009b31mb\u007fc\u0000d'), 'a31mbcd');
    assert.equal(withoutControlCharacters('\u202eevil\u202c \u2066x\u2069'), 'evil x');
    assert.equal(withoutControlCharacters(' Ada\r\n\tLovelace\u2028 '), 'Ada Lovelace');
    // Right-to-left text keeps its marks; an unpaired surrogate (not storable as UTF-8) is replaced.
    assert.equal(withoutControlCharacters('\u05e9\u05dc\u05d5\u05dd\u200f'), '\u05e9\u05dc\u05d5\u05dd\u200f');
    assert.equal(withoutControlCharacters('a\ud800b'), 'a\ufffdb');
    assert.equal(withoutControlCharacters('Zoë 😀'), 'Zoë 😀');
  });

  it('are shown as escapes when printed', () => {
    assert.equal(printable('x\u001b[2Jy\u009b\u202e'), 'x\\x1b[2Jy\\x9b\\u202e');
  });

  it('JSON for a terminal: the same value, with what JSON.stringify leaves raw escaped', () => {
    const value = { name: 'a\u009bb\u202ec\u007fd\u001be', list: [1] };
    const text = printableJson(value, 2);
    // eslint-disable-next-line no-control-regex -- control characters are the point
    assert.doesNotMatch(text, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);
    assert.deepEqual(JSON.parse(text), value);
  });
});
