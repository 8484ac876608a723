import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { jwtBearerOptions, readWorkloadRules } from '../../src/cli/jwt-bearer-options.js';

const SCOPES = ['mcp:tools', 'mcp:admin'];
const folder = mkdtempSync(join(tmpdir(), 'workload-config-'));
let n = 0;
function file(content: unknown): string {
  const path = join(folder, `rules-${++n}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}
const rule = {
  issuer: 'https://oidc.eks.eu-west-1.amazonaws.com/id/ABC',
  subject: 'system:serviceaccount:billing:invoicer',
  client: 'billing',
  scopes: ['mcp:tools'],
};

describe('--workload-config', () => {
  it('reads a list of rules, or an object with workloads', () => {
    assert.deepEqual(readWorkloadRules(file([rule]), SCOPES, false), [rule]);
    assert.deepEqual(readWorkloadRules(file({ workloads: [rule] }), SCOPES, false), [rule]);
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ['bad JSON', '[{', /is not valid JSON/],
    ['no rules', [], /has no rules/],
    ['a missing issuer', [{ ...rule, issuer: undefined }], /workloads\[0\]\.issuer is missing/],
    ['an http issuer', [{ ...rule, issuer: 'http://issuer.example' }], /workloads\[0\]\.issuer must be an https URL/],
    ['an http loopback issuer without the switch', [{ ...rule, issuer: 'http://127.0.0.1:9/x' }], /only with the insecure switch/],
    ['a duplicate rule', [rule, { ...rule, client: 'other' }], /workloads\[1\] repeats/],
    ['an unsupported scope', [{ ...rule, scopes: ['admin:all'] }], /names admin:all, which this server does not support/],
    ['a subject of stars only', [{ ...rule, subject: '**' }], /must not match every subject/],
    ['an unknown field', [{ ...rule, audiences: ['x'] }], /unknown field "audiences"/],
    ['a URL client id', [{ ...rule, client: 'https://client.example/doc' }], /client must be a client id/],
  ];
  for (const [what, content, message] of bad) {
    it(`refuses ${what}, naming the file`, () => {
      const path = file(content);
      assert.throws(
        () => readWorkloadRules(path, SCOPES, false),
        (error: Error) => error.message.includes(path) && message.test(error.message),
      );
    });
  }

  it('refuses a missing file', () => {
    assert.throws(() => readWorkloadRules(join(folder, 'absent.json'), SCOPES, false), /Cannot read --workload-config .*ENOENT/);
  });
});

describe('--trusted-idp', () => {
  it('accepts https issuers, and http://127.0.0.1 only with --allow-insecure-idp', () => {
    assert.deepEqual(jwtBearerOptions({ 'trusted-idp': ['https://corp.okta.com'] }, SCOPES).trustedIdps, ['https://corp.okta.com']);
    assert.throws(() => jwtBearerOptions({ 'trusted-idp': ['http://127.0.0.1:5556'] }, SCOPES), /insecure switch/);
    assert.deepEqual(jwtBearerOptions({ 'trusted-idp': ['http://127.0.0.1:5556'], 'allow-insecure-idp': true }, SCOPES).allowInsecureIssuers, true);
    assert.throws(() => jwtBearerOptions({ 'trusted-idp': ['https://idp.example/?tenant=1'] }, SCOPES), /no query or fragment/);
  });
});
