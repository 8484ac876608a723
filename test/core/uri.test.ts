import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OAuthError } from '../../src/core/errors.js';
import {
  authorizationServerMetadataUrls,
  canonicalizeResourceUri,
  isCanonicalResourceUri,
  isLoopbackHost,
  normalizeIssuer,
  wellKnownUrl,
} from '../../src/core/uri.js';

/** Asserts that `fn` throws an OAuthError with the given code (and its default 400 status). */
function assertOAuthError(fn: () => unknown, code: string): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof OAuthError, `expected an OAuthError, got ${String(error)}`);
    assert.equal(error.code, code);
    assert.equal(error.status, 400);
    return true;
  });
}

describe('canonicalizeResourceUri (spec: Canonical server URI rules, Revision B)', () => {
  const accepted: { rule: string; input: string; canonical: string }[] = [
    // Rule 2: absolute with a scheme.
    { rule: 'absolute https URI is kept', input: 'https://mcp.example.com', canonical: 'https://mcp.example.com' },
    { rule: 'absolute http URI is kept', input: 'http://mcp.example.com/mcp', canonical: 'http://mcp.example.com/mcp' },
    // Rule 5: lowercase scheme and host; uppercase accepted.
    { rule: 'uppercase scheme and host are lowered, path case kept', input: 'HTTPS://MCP.Example.COM/Path', canonical: 'https://mcp.example.com/Path' },
    { rule: 'mixed-case scheme is lowered', input: 'HtTp://localhost:3000/mcp', canonical: 'http://localhost:3000/mcp' },
    { rule: 'query case is kept', input: 'https://A.example/mcp?Tenant=ABC', canonical: 'https://a.example/mcp?Tenant=ABC' },
    // Rule 3: port and path kept.
    { rule: 'non-default port is kept', input: 'https://mcp.example.com:8443', canonical: 'https://mcp.example.com:8443' },
    { rule: 'port and path are kept', input: 'https://mcp.example.com:8443/server/mcp', canonical: 'https://mcp.example.com:8443/server/mcp' },
    { rule: 'default https port 443 is dropped', input: 'https://mcp.example.com:443/mcp', canonical: 'https://mcp.example.com/mcp' },
    { rule: 'default http port 80 is dropped', input: 'http://mcp.example.com:80/mcp', canonical: 'http://mcp.example.com/mcp' },
    { rule: 'port 80 on https is kept', input: 'https://mcp.example.com:80/mcp', canonical: 'https://mcp.example.com:80/mcp' },
    { rule: 'multi-segment path is kept', input: 'https://a.example/tenants/t1/mcp', canonical: 'https://a.example/tenants/t1/mcp' },
    { rule: 'IPv6 loopback host and port', input: 'http://[::1]:8080/mcp', canonical: 'http://[::1]:8080/mcp' },
    // Rule 6: no trailing slash.
    { rule: 'trailing slash on a path is removed', input: 'https://a.example/mcp/', canonical: 'https://a.example/mcp' },
    { rule: 'lone root slash is removed', input: 'https://a.example/', canonical: 'https://a.example' },
    { rule: 'repeated trailing slashes are removed', input: 'https://a.example/mcp//', canonical: 'https://a.example/mcp' },
    { rule: 'trailing slash removed, port kept', input: 'https://a.example:8443/mcp/', canonical: 'https://a.example:8443/mcp' },
    { rule: 'trailing slash before a query is removed, query kept', input: 'https://a.example/mcp/?x=1', canonical: 'https://a.example/mcp?x=1' },
    // Query kept.
    { rule: 'query is kept', input: 'https://a.example/mcp?tenant=a&x=1', canonical: 'https://a.example/mcp?tenant=a&x=1' },
    { rule: 'an empty query is dropped', input: 'https://a.example/mcp?', canonical: 'https://a.example/mcp' },
  ];

  for (const { rule, input, canonical } of accepted) {
    it(`${rule}: ${input} → ${canonical}`, () => {
      assert.equal(canonicalizeResourceUri(input), canonical);
      // The canonical form is a fixed point.
      assert.equal(canonicalizeResourceUri(canonical), canonical);
      assert.equal(isCanonicalResourceUri(canonical), true);
    });
  }

  const refused: { rule: string; input: string }[] = [
    // Rule 2: absolute with a scheme.
    { rule: 'empty string', input: '' },
    { rule: 'relative path', input: '/mcp' },
    { rule: 'relative path without slash', input: 'mcp' },
    { rule: 'network-path reference (no scheme)', input: '//mcp.example.com/mcp' },
    { rule: 'scheme-less host', input: 'mcp.example.com' },
    { rule: 'scheme-less host and path', input: 'mcp.example.com/mcp' },
    { rule: 'scheme-less host with port', input: 'mcp.example.com:8080/mcp' },
    { rule: 'https without authority', input: 'https:mcp.example.com/mcp' },
    { rule: 'https with one slash', input: 'https:/mcp.example.com' },
    { rule: 'https with three slashes', input: 'https:///mcp.example.com' },
    { rule: 'https with an empty host', input: 'https://' },
    { rule: 'backslashes for slashes', input: 'https:\\\\mcp.example.com\\mcp' },
    // Rule 2: no fragment.
    { rule: 'fragment', input: 'https://mcp.example.com/mcp#section' },
    { rule: 'empty fragment', input: 'https://x/#' },
    { rule: 'empty fragment without path', input: 'https://mcp.example.com#' },
    { rule: 'fragment after a query', input: 'https://mcp.example.com/mcp?x=1#y' },
    // Userinfo.
    { rule: 'user in the authority', input: 'https://user@mcp.example.com/mcp' },
    { rule: 'user and password in the authority', input: 'https://user:secret@mcp.example.com/mcp' },
    { rule: 'password only in the authority', input: 'https://:secret@mcp.example.com/mcp' },
    // Schemes other than http(s).
    { rule: 'ftp scheme', input: 'ftp://mcp.example.com/mcp' },
    { rule: 'ws scheme', input: 'ws://mcp.example.com/mcp' },
    { rule: 'urn', input: 'urn:example:mcp' },
    { rule: 'javascript scheme', input: 'javascript:alert(1)' },
    { rule: 'data scheme', input: 'data:text/plain,mcp' },
    { rule: 'file scheme', input: 'file:///etc/passwd' },
    { rule: 'mailto scheme', input: 'mailto:admin@example.com' },
    // Whitespace and control characters (which `new URL` would silently strip).
    { rule: 'leading space', input: ' https://mcp.example.com/mcp' },
    { rule: 'trailing space', input: 'https://mcp.example.com/mcp ' },
    { rule: 'trailing newline', input: 'https://mcp.example.com/mcp\n' },
    { rule: 'leading tab', input: '\thttps://mcp.example.com/mcp' },
    { rule: 'inner space', input: 'https://mcp.example.com/m cp' },
    { rule: 'inner tab', input: 'https://mcp.example.com/m\tcp' },
    { rule: 'NUL character', input: 'https://mcp.example.com/mcp\u0000' },
    { rule: 'DEL character', input: 'https://mcp.example.com/mcp\u007f' },
    { rule: 'whitespace only', input: '   ' },
  ];

  for (const { rule, input } of refused) {
    it(`refuses ${rule}: ${JSON.stringify(input)} → invalid_target`, () => {
      assertOAuthError(() => canonicalizeResourceUri(input), 'invalid_target');
      assert.equal(isCanonicalResourceUri(input), false);
    });
  }
});

describe('isCanonicalResourceUri', () => {
  const cases: { input: string; expected: boolean }[] = [
    { input: 'https://mcp.example.com/mcp', expected: true },
    { input: 'https://mcp.example.com', expected: true },
    { input: 'https://mcp.example.com/', expected: false },
    { input: 'https://mcp.example.com/mcp/', expected: false },
    { input: 'HTTPS://mcp.example.com', expected: false },
    { input: 'https://MCP.example.com', expected: false },
    { input: 'https://mcp.example.com:443', expected: false },
    { input: 'https://mcp.example.com#x', expected: false },
    { input: 'not a uri', expected: false },
  ];
  for (const { input, expected } of cases) {
    it(`${JSON.stringify(input)} → ${expected}`, () => {
      assert.equal(isCanonicalResourceUri(input), expected);
    });
  }
});

describe('normalizeIssuer', () => {
  const accepted: { name: string; input: string; issuer: string }[] = [
    { name: 'https root', input: 'https://as.example', issuer: 'https://as.example' },
    { name: 'https root with slash: slash dropped', input: 'https://as.example/', issuer: 'https://as.example' },
    { name: 'https with path', input: 'https://as.example/tenant', issuer: 'https://as.example/tenant' },
    { name: 'https with path and trailing slash', input: 'https://as.example/tenant/', issuer: 'https://as.example/tenant' },
    { name: 'uppercase host lowered', input: 'HTTPS://AS.Example/Tenant', issuer: 'https://as.example/Tenant' },
    { name: 'https with port', input: 'https://as.example:8443/', issuer: 'https://as.example:8443' },
    { name: 'default port dropped', input: 'https://as.example:443', issuer: 'https://as.example' },
    { name: 'http on localhost', input: 'http://localhost:3000', issuer: 'http://localhost:3000' },
    { name: 'http on localhost with slash', input: 'http://localhost:3000/', issuer: 'http://localhost:3000' },
    { name: 'http on 127.0.0.1', input: 'http://127.0.0.1:9000/auth', issuer: 'http://127.0.0.1:9000/auth' },
    { name: 'http on [::1]', input: 'http://[::1]:8080/', issuer: 'http://[::1]:8080' },
  ];
  for (const { name, input, issuer } of accepted) {
    it(`accepts ${name}: ${input} → ${issuer}`, () => {
      assert.equal(normalizeIssuer(input), issuer);
    });
  }

  const refused: { name: string; input: string; message: RegExp }[] = [
    { name: 'http on a public host', input: 'http://as.example', message: /https/ },
    { name: 'http on a look-alike of localhost', input: 'http://localhost.evil.com', message: /https/ },
    { name: 'query', input: 'https://as.example?tenant=a', message: /query or fragment/ },
    { name: 'empty query', input: 'https://as.example/?', message: /query or fragment/ },
    { name: 'fragment', input: 'https://as.example/#top', message: /query or fragment/ },
    { name: 'empty fragment', input: 'https://as.example/#', message: /query or fragment/ },
    { name: 'credentials', input: 'https://admin:pw@as.example', message: /credentials/ },
    { name: 'relative', input: '/as', message: /absolute/ },
    { name: 'scheme-less', input: 'as.example', message: /absolute/ },
    { name: 'https without authority', input: 'https:as.example', message: /absolute/ },
    { name: 'non-http scheme', input: 'ftp://as.example', message: /absolute/ },
    { name: 'empty', input: '', message: /absolute/ },
    { name: 'surrounding whitespace', input: ' https://as.example ', message: /absolute/ },
  ];
  for (const { name, input, message } of refused) {
    it(`refuses ${name}: ${JSON.stringify(input)}`, () => {
      assert.throws(() => normalizeIssuer(input), message);
    });
  }
});

describe('wellKnownUrl', () => {
  const cases: { identifier: string; suffix: string; expected: string }[] = [
    {
      identifier: 'https://as.example/tenant',
      suffix: 'oauth-authorization-server',
      expected: 'https://as.example/.well-known/oauth-authorization-server/tenant',
    },
    {
      identifier: 'https://as.example',
      suffix: 'oauth-authorization-server',
      expected: 'https://as.example/.well-known/oauth-authorization-server',
    },
    {
      identifier: 'https://as.example/',
      suffix: 'oauth-authorization-server',
      expected: 'https://as.example/.well-known/oauth-authorization-server',
    },
    {
      identifier: 'https://as.example/tenant/',
      suffix: 'oauth-authorization-server',
      expected: 'https://as.example/.well-known/oauth-authorization-server/tenant',
    },
    {
      identifier: 'https://as.example/a/b',
      suffix: 'openid-configuration',
      expected: 'https://as.example/.well-known/openid-configuration/a/b',
    },
    {
      identifier: 'http://localhost:3000',
      suffix: 'oauth-authorization-server',
      expected: 'http://localhost:3000/.well-known/oauth-authorization-server',
    },
    {
      identifier: 'https://mcp.example.com:8443/mcp',
      suffix: 'oauth-protected-resource',
      expected: 'https://mcp.example.com:8443/.well-known/oauth-protected-resource/mcp',
    },
    {
      // RFC 9728 §3.1: inserted between the host and the path and/or query.
      identifier: 'https://mcp.example.com/mcp?tenant=a',
      suffix: 'oauth-protected-resource',
      expected: 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp?tenant=a',
    },
  ];
  for (const { identifier, suffix, expected } of cases) {
    it(`${identifier} + ${suffix} → ${expected}`, () => {
      assert.equal(wellKnownUrl(identifier, suffix), expected);
    });
  }
});

describe('isLoopbackHost', () => {
  const cases: { host: string; expected: boolean }[] = [
    { host: 'localhost', expected: true },
    { host: 'LOCALHOST', expected: true },
    { host: 'LocalHost', expected: true },
    { host: '127.0.0.1', expected: true },
    { host: '[::1]', expected: true },
    { host: '::1', expected: true },
    { host: 'localhost.evil.com', expected: false },
    { host: 'evil-localhost', expected: false },
    { host: '127.0.0.1.nip.io', expected: false },
    { host: '127.0.0.2', expected: false },
    { host: '0.0.0.0', expected: false },
    { host: '[::]', expected: false },
    { host: 'example.com', expected: false },
    { host: '', expected: false },
  ];
  for (const { host, expected } of cases) {
    it(`${JSON.stringify(host)} → ${expected}`, () => {
      assert.equal(isLoopbackHost(host), expected);
    });
  }
});

describe('authorizationServerMetadataUrls', () => {
  it('tries RFC 8414 path insertion, then OpenID discovery inserted and appended', () => {
    assert.deepEqual(authorizationServerMetadataUrls('https://as.example/tenant1'), [
      'https://as.example/.well-known/oauth-authorization-server/tenant1',
      'https://as.example/.well-known/openid-configuration/tenant1',
      'https://as.example/tenant1/.well-known/openid-configuration',
    ]);
  });

  it('has no appended form for an issuer at the root', () => {
    assert.deepEqual(authorizationServerMetadataUrls('https://as.example'), [
      'https://as.example/.well-known/oauth-authorization-server',
      'https://as.example/.well-known/openid-configuration',
    ]);
  });
});
