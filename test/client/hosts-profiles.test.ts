/**
 * The host profiles as data: each names its public sources, each way's document or registration
 * admits the redirect URI the host sends, and the rules they name behave as the hosts' code does.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HOST_PROFILES, hostNames } from '../../src/client/hosts/profiles.js';
import { redirectUriOf, registrationBody, stateOf, type HostContext } from '../../src/client/hosts/requests.js';
import { requestedScopes, resourceMatches } from '../../src/client/hosts/rules.js';
import { matchRedirectUri } from '../../src/core/redirect-uri.js';
import { DOCTOR_HELP } from '../../src/cli/doctor.js';

const context: HostContext = {
  mcpUrl: 'https://mcp.example.com/mcp',
  port: 49152,
  discovery: {
    probeStatus: 401,
    resourceMetadata: { resource: 'https://mcp.example.com/mcp', scopes_supported: ['mcp:tools'] },
    authorizationServer: { scopes_supported: ['mcp:tools', 'offline_access'] },
  },
};

describe('host profiles', () => {
  it('each names its sources: a file of the host\u2019s own repository, or an issue or pull request that shows what it sends', () => {
    for (const profile of HOST_PROFILES) {
      assert.ok(profile.sources.length > 0, profile.id);
      for (const source of profile.sources)
        assert.match(source, /^https:\/\/github\.com\/[\w.-]+\/[\w.-]+\/(blob\/main\/.+|issues\/\d+|pull\/\d+)$/, `${profile.id}: ${source}`);
    }
  });

  it('have unique ids, and a host\u2019s ways are listed together, in the order it tries them', () => {
    assert.equal(new Set(HOST_PROFILES.map((p) => p.id)).size, HOST_PROFILES.length);
    const hosts = HOST_PROFILES.map((p) => p.host);
    for (const host of hostNames()) assert.equal(hosts.lastIndexOf(host) - hosts.indexOf(host) + 1, hosts.filter((h) => h === host).length, host);
    // Only the last way of a host may apply everywhere: a way after an unconditional one is never taken.
    for (const host of hostNames()) {
      const ways = HOST_PROFILES.filter((p) => p.host === host);
      ways.slice(0, -1).forEach((way) => assert.ok(way.when, `${way.id} has no condition, yet ${host} has a way after it`));
    }
  });

  it('doctor\u2019s help names every host', () => {
    const help = DOCTOR_HELP.replace(/\s+/g, ' ');
    for (const host of hostNames()) assert.ok(help.includes(host), host);
  });

  it('a document names itself, and its redirect URIs admit the one the host sends (any port where it picks one)', () => {
    for (const profile of HOST_PROFILES) {
      if (profile.registration.kind !== 'document') continue;
      assert.equal(profile.registration.document.client_id, profile.registration.url, profile.id);
      const registered = profile.registration.document.redirect_uris as string[];
      assert.ok(matchRedirectUri(registered, redirectUriOf(profile, context)), `${profile.id}: ${redirectUriOf(profile, context)} is not among ${registered}`);
    }
  });

  it('a registration body\u2019s redirect URIs admit the one the host sends; the scope goes in when the host sends it', () => {
    for (const profile of HOST_PROFILES) {
      if (profile.registration.kind !== 'dynamic') continue;
      const body = registrationBody(profile, context);
      assert.ok(matchRedirectUri(body.redirect_uris as string[], redirectUriOf(profile, context)) || !/^https?:/.test(profile.redirect.uri), profile.id);
      assert.equal('scope' in body, profile.registration.sendsScope !== undefined, profile.id);
    }
    const claudeCode = registrationBody(
      HOST_PROFILES.find((p) => p.id === 'claude-code-registration')!,
      { ...context, serverName: 'context-demo' },
    );
    assert.equal(claudeCode.client_name, 'Claude Code (context-demo)');
    assert.deepEqual(claudeCode.redirect_uris, ['http://localhost:49152/callback']);
  });

  it('an unknown state shape is tested as standard base64 with +, / and =', () => {
    const state = stateOf('unknown');
    for (const character of ['+', '/', '=']) assert.ok(state.includes(character), state);
    assert.match(stateOf('base64url'), /^[\w-]{22}$/);
  });
});

describe('host profile rules', () => {
  const typed = 'https://mcp.example.com/mcp';
  const cases: Array<[string, Record<string, boolean>]> = [
    ['https://mcp.example.com/mcp', { 'same-url': true, 'same-origin-and-path': true, 'url-or-parent': true, 'url-or-parent-strict': true }],
    ['https://mcp.example.com/mcp/', { 'same-url': false, 'same-origin-and-path': false, 'url-or-parent': true, 'url-or-parent-strict': false }],
    ['https://mcp.example.com', { 'same-url': false, 'same-origin-and-path': false, 'url-or-parent': true, 'url-or-parent-strict': true }],
    ['https://mcp.example.com/mc', { 'same-url': false, 'same-origin-and-path': false, 'url-or-parent': false, 'url-or-parent-strict': false }],
    ['https://other.example.com/mcp', { 'same-url': false, 'same-origin-and-path': false, 'url-or-parent': false, 'url-or-parent-strict': false }],
  ];
  for (const [resource, expected] of cases) {
    it(`resource ${resource} for ${typed}`, () => {
      for (const [rule, matches] of Object.entries(expected)) assert.equal(resourceMatches(rule as never, resource, typed), matches, rule);
      assert.equal(resourceMatches('unchecked', resource, typed), true);
    });
  }

  it('the scope each rule asks for', () => {
    const sources = { challenge: 'mcp:tools', resource: ['mcp:tools', 'mcp:admin'], server: ['mcp:tools', 'mcp:admin', 'openid', 'offline_access'] };
    assert.deepEqual(requestedScopes('resource-openid-and-offline', sources), ['mcp:tools', 'mcp:admin', 'openid', 'offline_access']);
    assert.deepEqual(requestedScopes('challenge-else-resource-plus-offline', sources), ['mcp:tools', 'offline_access']);
    assert.deepEqual(requestedScopes('challenge-else-resource', sources), ['mcp:tools']);
    assert.deepEqual(requestedScopes('resource', sources), ['mcp:tools', 'mcp:admin']);
    assert.deepEqual(requestedScopes('challenge-and-resource-else-server-plus-offline', sources), ['mcp:tools', 'mcp:admin', 'offline_access']);
    assert.deepEqual(requestedScopes('server', sources), sources.server);
    assert.deepEqual(requestedScopes('challenge-resource-server-else-openid', {}), ['openid', 'email', 'profile']);
    assert.deepEqual(requestedScopes('challenge-resource-server-else-openid', { resource: [] }), []);
    assert.deepEqual(requestedScopes('resource-else-server', { resource: [], server: ['a'] }), ['a']);
  });
});
