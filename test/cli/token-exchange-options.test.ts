import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readDelegationRules, tokenExchangeOptions } from '../../src/cli/token-exchange-options.js';

const SCOPES = ['mcp:tools', 'mcp:admin'];
const folder = mkdtempSync(join(tmpdir(), 'delegation-config-'));
let n = 0;
function file(content: unknown): string {
  const path = join(folder, `rules-${++n}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}
const rule = { client: 'notes-server', from: 'https://notes.example/mcp', to: 'https://files.example/mcp', scopes: ['mcp:tools'] };

describe('--delegation-config', () => {
  it('reads a list of rules, or an object with delegations and maxDelegationDepth', () => {
    assert.deepEqual(readDelegationRules(file([rule]), SCOPES), { delegations: [rule] });
    assert.deepEqual(readDelegationRules(file({ delegations: [rule], maxDelegationDepth: 2 }), SCOPES), { delegations: [rule], maxDelegationDepth: 2 });
    assert.deepEqual(tokenExchangeOptions({ 'delegation-config': file([rule]) }, SCOPES), { tokenExchange: { delegations: [rule] } });
    assert.deepEqual(tokenExchangeOptions({}, SCOPES), {});
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ['bad JSON', '[{', /is not valid JSON/],
    ['no rules', [], /no rules/],
    ['a rule without a client', [{ ...rule, client: undefined }], /delegations\[0\]\.client must be a client id/],
    ['a rule to its own resource', [{ ...rule, to: rule.from }], /from and to are the same resource/],
    ['a relative resource', [{ ...rule, to: '/files' }], /delegations\[0\]\.to must be an absolute URI/],
    ['an unsupported scope', [{ ...rule, scopes: ['files:write'] }], /does not offer: files:write/],
    ['a depth of 0', { delegations: [rule], maxDelegationDepth: 0 }, /maxDelegationDepth must be a whole number from 1 to 10/],
    ['an unknown field', { delegations: [rule], depth: 2 }, /unknown field "depth"/],
  ];
  for (const [what, content, message] of bad) {
    it(`refuses ${what}, naming the file`, () => {
      const path = file(content);
      assert.throws(
        () => readDelegationRules(path, SCOPES),
        (error: Error) => error.message.includes(path) && message.test(error.message),
      );
    });
  }

  it('refuses a missing file', () => {
    assert.throws(() => readDelegationRules(join(folder, 'absent.json'), SCOPES), /Cannot read --delegation-config .*ENOENT/);
  });
});

describe('--id-jag-audience and --id-jag-config', () => {
  it('takes issuers from the flag and audiences from the file, together', () => {
    const audiences = file([{ issuer: 'https://ras.example', email: true, clients: { ours: 'theirs' } }]);
    assert.deepEqual(tokenExchangeOptions({ 'id-jag-audience': ['https://auth.example/'], 'id-jag-config': audiences }, SCOPES), {
      tokenExchange: { idJagAudiences: [{ issuer: 'https://auth.example' }, { issuer: 'https://ras.example', email: true, clients: { ours: 'theirs' } }] },
    });
    assert.deepEqual(tokenExchangeOptions({ 'id-jag-config': file({ idJagAudiences: [{ issuer: 'https://ras.example' }] }) }, SCOPES), {
      tokenExchange: { idJagAudiences: [{ issuer: 'https://ras.example' }] },
    });
  });

  it('refuses an issuer that is not one, naming the flag or the file', () => {
    assert.throws(
      () => tokenExchangeOptions({ 'id-jag-audience': ['http://ras.example'] }, SCOPES),
      /--id-jag-audience http:\/\/ras\.example: issuer must use https/,
    );
    const path = file([{ issuer: 'https://ras.example', clients: ['theirs'] }]);
    assert.throws(
      () => tokenExchangeOptions({ 'id-jag-config': path }, SCOPES),
      (error: Error) => error.message.includes(path) && /clients must map our client ids/.test(error.message),
    );
    const empty = file([]);
    assert.throws(() => tokenExchangeOptions({ 'id-jag-config': empty }, SCOPES), /must hold a list of audiences/);
  });
});
