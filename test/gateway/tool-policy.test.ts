import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseToolPolicies, scopesNeeded, toolAllowed } from '../../src/gateway/tool-policy.js';

const known = { paths: ['/github', '/files'], scopes: ['mcp:tools', 'mcp:admin'] };

function policy(rules: unknown) {
  const parsed = parseToolPolicies({ '/github': rules }, known);
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.defect);
  return parsed.value.get('/github')!;
}

describe('the gateway policy: scopes per tool, resource and prompt', () => {
  it('names the scopes each message of a request needs, a batch all of them', () => {
    const rules = policy({
      tools: { delete: ['mcp:admin'] },
      prompts: { notes: ['mcp:admin'] },
      resources: { 'file:///srv/private/*': ['mcp:admin'], 'file:///srv/key': ['mcp:admin'] },
    });
    assert.deepEqual(scopesNeeded(rules, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'delete' } }), ['mcp:admin']);
    assert.deepEqual(scopesNeeded(rules, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read' } }), []);
    assert.deepEqual(scopesNeeded(rules, { jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'notes' } }), ['mcp:admin']);
    assert.deepEqual(scopesNeeded(rules, { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'file:///srv/private/a/b' } }), ['mcp:admin']);
    assert.deepEqual(scopesNeeded(rules, { jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'file:///srv/key' } }), ['mcp:admin']);
    assert.deepEqual(scopesNeeded(rules, { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'file:///srv/public' } }), []);
    assert.deepEqual(
      scopesNeeded(rules, [
        { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'delete' } },
      ]),
      ['mcp:admin'],
    );
    assert.deepEqual(
      scopesNeeded(rules, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: '__proto__' } }),
      [],
      'names are looked up in Maps, not objects',
    );
    assert.equal(toolAllowed(rules, 'delete', ['mcp:tools']), false);
    assert.equal(toolAllowed(rules, 'delete', ['mcp:tools', 'mcp:admin']), true);
    assert.equal(toolAllowed(rules, 'read', ['mcp:tools']), true);
  });

  it('refuses a file it could not apply, naming what is wrong', () => {
    const refusals: [unknown, RegExp][] = [
      [[], /must be a JSON object/],
      [{ '/other': {} }, /names \/other, which is not a --gateway path/],
      [{ '/github': { tools: { x: ['repo:write'] } } }, /names the scope repo:write, which this server does not issue/],
      [{ '/github': { tools: { x: 'mcp:admin' } } }, /must be a list of scopes/],
      [{ '/github': { tool: {} } }, /is not one of tools, resources, prompts, filterToolList/],
      [{ '/github': { filterToolList: 'yes' } }, /must be true or false/],
    ];
    for (const [json, reason] of refusals) {
      const parsed = parseToolPolicies(json, known);
      assert.equal(parsed.ok, false);
      if (!parsed.ok) assert.match(parsed.defect, reason);
    }
  });
});
