import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matchRedirectUri, privateUseSchemeProblem, redirectUriProblem } from '../../src/core/redirect-uri.js';

describe('redirectUriProblem', () => {
  const allowed: { name: string; uri: string }[] = [
    { name: 'https', uri: 'https://app.example.com/callback' },
    { name: 'https with port, path and query', uri: 'https://app.example.com:8443/oauth/callback?client=cli' },
    { name: 'https without path', uri: 'https://app.example.com' },
    { name: 'https on an IP address', uri: 'https://203.0.113.7/cb' },
    { name: 'https on localhost', uri: 'https://localhost/cb' },
    { name: 'uppercase HTTPS scheme', uri: 'HTTPS://APP.example.com/cb' },
    { name: 'http on localhost', uri: 'http://localhost/callback' },
    { name: 'http on localhost with a port', uri: 'http://localhost:8080/callback' },
    { name: 'http on localhost, no path', uri: 'http://localhost:53682' },
    { name: 'http on localhost, deep path and query', uri: 'http://localhost:3000/a/b/c?x=1&y=2' },
    { name: 'http on uppercase LOCALHOST', uri: 'http://LOCALHOST:3000/cb' },
    { name: 'http on 127.0.0.1', uri: 'http://127.0.0.1/callback' },
    { name: 'http on 127.0.0.1 with a port', uri: 'http://127.0.0.1:49152/oauth/cb' },
    { name: 'http on [::1]', uri: 'http://[::1]/callback' },
    { name: 'http on [::1] with a port', uri: 'http://[::1]:8080/callback' },
    { name: 'exactly 2000 characters', uri: 'https://app.example.com/' + 'a'.repeat(2000 - 'https://app.example.com/'.length) },
  ];
  for (const { name, uri } of allowed) {
    it(`allows ${name}: ${uri.length > 80 ? `${uri.slice(0, 40)}…` : uri}`, () => {
      assert.equal(redirectUriProblem(uri), undefined);
    });
  }

  const refused: { name: string; uri: string; reason: RegExp }[] = [
    // http outside loopback.
    { name: 'http on a public host', uri: 'http://app.example.com/callback', reason: /loopback/ },
    { name: 'http on localhost.evil.com', uri: 'http://localhost.evil.com/callback', reason: /loopback/ },
    { name: 'http on a localhost suffix', uri: 'http://evillocalhost/callback', reason: /loopback/ },
    { name: 'http on 127.0.0.1.nip.io', uri: 'http://127.0.0.1.nip.io/callback', reason: /loopback/ },
    { name: 'http on 0.0.0.0', uri: 'http://0.0.0.0:8080/callback', reason: /loopback/ },
    { name: 'http on a private address', uri: 'http://192.168.1.10/callback', reason: /loopback/ },
    { name: 'http with localhost as userinfo', uri: 'http://localhost@evil.com/callback', reason: /loopback/ },
    // Fragments.
    { name: 'fragment', uri: 'https://app.example.com/callback#frag', reason: /fragment/ },
    { name: 'empty fragment', uri: 'https://app.example.com/callback#', reason: /fragment/ },
    { name: 'fragment on loopback', uri: 'http://localhost:3000/cb#x', reason: /fragment/ },
    // Dangerous and custom schemes.
    { name: 'javascript:', uri: 'javascript:alert(document.cookie)', reason: /scheme javascript: is not allowed/ },
    { name: 'JavaScript: in mixed case', uri: 'JavaScript:alert(1)', reason: /scheme javascript: is not allowed/ },
    { name: 'data:', uri: 'data:text/html,<script>alert(1)</script>', reason: /scheme data: is not allowed/ },
    { name: 'file:', uri: 'file:///etc/passwd', reason: /scheme file: is not allowed/ },
    { name: 'custom scheme', uri: 'com.example.app:/oauth2redirect', reason: /scheme com\.example\.app: is not allowed/ },
    { name: 'custom scheme with authority', uri: 'myapp://callback', reason: /scheme myapp: is not allowed/ },
    { name: 'ftp:', uri: 'ftp://app.example.com/cb', reason: /scheme ftp: is not allowed/ },
    { name: 'ws:', uri: 'ws://localhost:3000/cb', reason: /scheme ws: is not allowed/ },
    // Not absolute.
    { name: 'empty string', uri: '', reason: /non-empty/ },
    { name: 'relative path', uri: '/callback', reason: /absolute/ },
    { name: 'relative path without slash', uri: 'callback', reason: /absolute/ },
    { name: 'network-path reference', uri: '//app.example.com/callback', reason: /absolute/ },
    { name: 'https with an empty host', uri: 'https://', reason: /absolute/ },
    // Credentials.
    { name: 'user and password', uri: 'https://user:pass@app.example.com/cb', reason: /credentials/ },
    { name: 'user only', uri: 'https://user@app.example.com/cb', reason: /credentials/ },
    { name: 'password only', uri: 'https://:pass@app.example.com/cb', reason: /credentials/ },
    { name: 'credentials on loopback', uri: 'http://user:pass@localhost:3000/cb', reason: /credentials/ },
    // Whitespace and control characters.
    { name: 'leading space', uri: ' https://app.example.com/cb', reason: /spaces or control/ },
    { name: 'trailing space', uri: 'https://app.example.com/cb ', reason: /spaces or control/ },
    { name: 'inner space', uri: 'https://app.example.com/c b', reason: /spaces or control/ },
    { name: 'tab', uri: 'https://app.example.com/c\tb', reason: /spaces or control/ },
    { name: 'newline', uri: 'https://app.example.com/cb\n', reason: /spaces or control/ },
    { name: 'carriage return + line feed', uri: 'https://app.example.com/cb\r\nSet-Cookie: x=1', reason: /spaces or control/ },
    { name: 'NUL', uri: 'https://app.example.com/cb\u0000', reason: /spaces or control/ },
    { name: 'DEL', uri: 'https://app.example.com/cb\u007f', reason: /spaces or control/ },
    // Length.
    { name: 'over 2000 characters', uri: 'https://app.example.com/' + 'a'.repeat(2001 - 'https://app.example.com/'.length), reason: /too long/ },
  ];
  for (const { name, uri, reason } of refused) {
    it(`refuses ${name}: ${JSON.stringify(uri.length > 80 ? `${uri.slice(0, 40)}…` : uri)}`, () => {
      const problem = redirectUriProblem(uri);
      assert.ok(problem !== undefined, 'expected a problem');
      assert.match(problem, reason);
    });
  }
});

describe('matchRedirectUri', () => {
  const cases: { name: string; registered: string[]; requested: string; expected: boolean }[] = [
    // Exact match.
    { name: 'exact https match', registered: ['https://app.example.com/cb'], requested: 'https://app.example.com/cb', expected: true },
    {
      name: 'exact match among several',
      registered: ['https://a.example/cb', 'https://app.example.com/cb'],
      requested: 'https://app.example.com/cb',
      expected: true,
    },
    { name: 'exact https match with query', registered: ['https://app.example.com/cb?x=1'], requested: 'https://app.example.com/cb?x=1', expected: true },
    { name: 'exact loopback match', registered: ['http://localhost:3000/cb'], requested: 'http://localhost:3000/cb', expected: true },
    { name: 'nothing registered', registered: [], requested: 'https://app.example.com/cb', expected: false },
    // RFC 8252 §7.3: loopback http may differ in port only.
    { name: 'localhost, different port', registered: ['http://localhost:3000/cb'], requested: 'http://localhost:49152/cb', expected: true },
    { name: 'localhost, registered without port', registered: ['http://localhost/cb'], requested: 'http://localhost:8080/cb', expected: true },
    { name: 'localhost, requested without port', registered: ['http://localhost:8080/cb'], requested: 'http://localhost/cb', expected: true },
    { name: '127.0.0.1, different port', registered: ['http://127.0.0.1:3000/cb'], requested: 'http://127.0.0.1:61234/cb', expected: true },
    { name: '[::1], different port', registered: ['http://[::1]:3000/cb'], requested: 'http://[::1]:4000/cb', expected: true },
    { name: 'loopback, no path, different port', registered: ['http://127.0.0.1:3000'], requested: 'http://127.0.0.1:4000', expected: true },
    { name: 'loopback, same query, different port', registered: ['http://localhost:3000/cb?x=1'], requested: 'http://localhost:4000/cb?x=1', expected: true },
    // Everything but the loopback port must match.
    { name: 'loopback, different path', registered: ['http://localhost:3000/cb'], requested: 'http://localhost:4000/other', expected: false },
    { name: 'loopback, extra path segment', registered: ['http://localhost:3000/cb'], requested: 'http://localhost:3000/cb/evil', expected: false },
    { name: 'loopback, path case differs', registered: ['http://localhost:3000/cb'], requested: 'http://localhost:3000/CB', expected: false },
    { name: 'loopback, different query', registered: ['http://localhost:3000/cb?x=1'], requested: 'http://localhost:4000/cb?x=2', expected: false },
    { name: 'loopback, added query', registered: ['http://localhost:3000/cb'], requested: 'http://localhost:3000/cb?x=1', expected: false },
    { name: 'loopback, empty query added', registered: ['http://localhost:3000/cb'], requested: 'http://localhost:4000/cb?', expected: false },
    { name: 'loopback, query removed', registered: ['http://localhost:3000/cb?x=1'], requested: 'http://localhost:3000/cb', expected: false },
    { name: '127.0.0.1 vs localhost', registered: ['http://127.0.0.1:3000/cb'], requested: 'http://localhost:3000/cb', expected: false },
    { name: 'localhost vs 127.0.0.1', registered: ['http://localhost:3000/cb'], requested: 'http://127.0.0.1:3000/cb', expected: false },
    { name: 'localhost vs [::1]', registered: ['http://localhost:3000/cb'], requested: 'http://[::1]:3000/cb', expected: false },
    { name: 'http vs https on loopback', registered: ['https://localhost:3000/cb'], requested: 'http://localhost:3000/cb', expected: false },
    { name: 'https vs http on loopback', registered: ['http://localhost:3000/cb'], requested: 'https://localhost:3000/cb', expected: false },
    { name: 'https vs http elsewhere', registered: ['https://app.example.com/cb'], requested: 'http://app.example.com/cb', expected: false },
    { name: 'https, different port', registered: ['https://app.example.com/cb'], requested: 'https://app.example.com:8443/cb', expected: false },
    { name: 'https, explicit default port', registered: ['https://app.example.com/cb'], requested: 'https://app.example.com:443/cb', expected: false },
    { name: 'https on localhost, different port', registered: ['https://localhost:3000/cb'], requested: 'https://localhost:4000/cb', expected: false },
    { name: 'https, different host', registered: ['https://app.example.com/cb'], requested: 'https://evil.example.com/cb', expected: false },
    { name: 'https, different path', registered: ['https://app.example.com/cb'], requested: 'https://app.example.com/cb2', expected: false },
    { name: 'https, host case differs', registered: ['https://app.example.com/cb'], requested: 'https://APP.example.com/cb', expected: false },
    // Trailing slashes.
    { name: 'https, trailing slash added', registered: ['https://app.example.com/cb'], requested: 'https://app.example.com/cb/', expected: false },
    { name: 'https, trailing slash removed', registered: ['https://app.example.com/cb/'], requested: 'https://app.example.com/cb', expected: false },
    { name: 'https root, trailing slash added', registered: ['https://app.example.com'], requested: 'https://app.example.com/', expected: false },
    { name: 'loopback, trailing slash added', registered: ['http://localhost:3000/cb'], requested: 'http://localhost:3000/cb/', expected: false },
    { name: 'loopback, trailing slash and port', registered: ['http://localhost:3000/cb'], requested: 'http://localhost:4000/cb/', expected: false },
    { name: 'loopback root, trailing slash and port', registered: ['http://localhost:3000'], requested: 'http://localhost:4000/', expected: false },
    // What `new URL` would normalise away must not make a match.
    { name: 'loopback, requested with a tab', registered: ['http://localhost:3000/cb'], requested: 'http://localhost:4000/c\tb', expected: false },
    { name: 'loopback, requested with a trailing newline', registered: ['http://localhost:3000/cb'], requested: 'http://localhost:4000/cb\n', expected: false },
    { name: 'loopback, requested with a leading space', registered: ['http://localhost:3000/cb'], requested: ' http://localhost:4000/cb', expected: false },
    { name: 'loopback, dot segments', registered: ['http://localhost:3000/cb'], requested: 'http://localhost:4000/x/../cb', expected: false },
    { name: 'loopback, backslash', registered: ['http://localhost:3000/cb'], requested: 'http://localhost:4000\\cb', expected: false },
    { name: 'loopback, short IPv4 form', registered: ['http://127.0.0.1:3000/cb'], requested: 'http://127.1:4000/cb', expected: false },
    // Fragments and credentials.
    { name: 'loopback, fragment added', registered: ['http://localhost:3000/cb'], requested: 'http://localhost:4000/cb#x', expected: false },
    { name: 'https, fragment added', registered: ['https://app.example.com/cb'], requested: 'https://app.example.com/cb#x', expected: false },
    { name: 'loopback, credentials added', registered: ['http://localhost:3000/cb'], requested: 'http://user:pw@localhost:4000/cb', expected: false },
    { name: 'loopback host as userinfo', registered: ['http://localhost:3000/cb'], requested: 'http://localhost:3000@evil.com/cb', expected: false },
    { name: 'look-alike host', registered: ['http://localhost:3000/cb'], requested: 'http://localhost.evil.com:3000/cb', expected: false },
    // Not URIs.
    { name: 'relative requested', registered: ['http://localhost:3000/cb'], requested: '/cb', expected: false },
    { name: 'empty requested', registered: ['http://localhost:3000/cb'], requested: '', expected: false },
  ];
  for (const { name, registered, requested, expected } of cases) {
    it(`${expected ? 'matches' : 'does not match'}: ${name}`, () => {
      assert.equal(matchRedirectUri(registered, requested), expected);
    });
  }
});

describe('redirect URIs the WHATWG parser would repair are refused (RFC 3986 first)', () => {
  for (const uri of [
    'https:///cb',
    'https:evil.example/cb',
    'https:////evil.example/cb',
    'https:\\\\evil.example/cb',
    'https:/\\evil.example/cb',
    'https://%65vil.example/cb',
  ]) {
    it(uri, () => {
      assert.notEqual(redirectUriProblem(uri), undefined);
      assert.equal(matchRedirectUri([uri], uri), false, 'never matched either');
    });
  }
  it('plain ones still pass, IPv6 literals and ports included', () => {
    for (const uri of ['https://app.example/cb', 'https://app.example', 'https://app.example:8443/cb?x=1', 'http://[::1]:8080/cb', 'http://localhost/cb'])
      assert.equal(redirectUriProblem(uri), undefined, uri);
  });
});

describe('private-use schemes an operator admits (RFC 8252 §7.1)', () => {
  const cursor = { privateUseSchemes: ['cursor'] };
  const reverseDomain = { privateUseSchemes: ['com.example.app'] };

  it('are refused unless admitted, by name', () => {
    assert.match(redirectUriProblem('cursor://anysphere.cursor-mcp/oauth/callback') ?? '', /scheme cursor: is not allowed/);
    assert.equal(redirectUriProblem('cursor://anysphere.cursor-mcp/oauth/callback', cursor), undefined);
    assert.equal(redirectUriProblem('CURSOR://anysphere.cursor-mcp/oauth/callback', cursor), undefined, 'a scheme is case-insensitive (RFC 3986 §3.1)');
    assert.match(redirectUriProblem('vscode://anysphere.cursor-mcp/oauth/callback', cursor) ?? '', /scheme vscode: is not allowed/);
    assert.match(redirectUriProblem('cursorx://a/cb', cursor) ?? '', /scheme cursorx: is not allowed/);
  });

  it("take RFC 8252's reverse-domain form, with one slash or an authority", () => {
    assert.equal(redirectUriProblem('com.example.app:/oauth2redirect/example-provider', reverseDomain), undefined);
    assert.equal(redirectUriProblem('com.example.app://callback?x=1', reverseDomain), undefined);
  });

  for (const [label, uri, reason] of [
    ['nothing after the scheme', 'cursor:', /must have a path after the scheme/],
    ['an empty authority', 'cursor:///oauth/callback', /must name its host after the \/\//],
    ['credentials', 'cursor://user:pw@anysphere.cursor-mcp/cb', /credentials/],
    ['userinfo without a password', 'cursor://user@anysphere.cursor-mcp/cb', /credentials/],
    ['a fragment', 'cursor://anysphere.cursor-mcp/cb#x', /fragment/],
    ['a backslash', 'cursor://anysphere.cursor-mcp/oauth\\cb', /backslash/],
    ['a space', 'cursor://anysphere.cursor-mcp/c b', /spaces or control/],
  ] as const) {
    it(`refuse, even admitted, a URI with ${label}`, () => {
      assert.match(redirectUriProblem(uri, cursor) ?? '', reason);
    });
  }

  it('admitting one never admits http on a public host, javascript: or data:', () => {
    assert.match(redirectUriProblem('http://evil.example/cb', cursor) ?? '', /loopback/);
    assert.match(redirectUriProblem('javascript:alert(1)', cursor) ?? '', /scheme javascript: is not allowed/);
  });

  it('are matched as exact strings: no port rule, no case folding, no trailing slash', () => {
    const registered = ['cursor://anysphere.cursor-mcp/oauth/callback'];
    assert.equal(matchRedirectUri(registered, 'cursor://anysphere.cursor-mcp/oauth/callback', cursor), true);
    for (const requested of [
      'cursor://anysphere.cursor-mcp:8080/oauth/callback',
      'cursor://anysphere.cursor-mcp/oauth/callback/',
      'cursor://Anysphere.cursor-mcp/oauth/callback',
      'CURSOR://anysphere.cursor-mcp/oauth/callback',
      'cursor://anysphere.cursor-mcp/oauth/callback?x=1',
      'cursor://evil/oauth/callback',
    ]) {
      assert.equal(matchRedirectUri(registered, requested, cursor), false, requested);
    }
  });

  it('a registered one stops matching once the scheme is no longer admitted', () => {
    assert.equal(matchRedirectUri(['cursor://anysphere.cursor-mcp/oauth/callback'], 'cursor://anysphere.cursor-mcp/oauth/callback'), false);
  });

  describe('which schemes may be admitted', () => {
    for (const scheme of ['cursor', 'com.example.app', 'vscode-insiders', 'x+y']) {
      it(`${scheme}: yes`, () => assert.equal(privateUseSchemeProblem(scheme), undefined));
    }
    for (const [scheme, reason] of [
      ['http', /meaning of its own/],
      ['HTTPS', /https is not a private-use scheme/],
      ['javascript', /meaning of its own/],
      ['data', /meaning of its own/],
      ['file', /meaning of its own/],
      ['blob', /meaning of its own/],
      ['about', /meaning of its own/],
      ['cursor:', /not a URI scheme/],
      ['1app', /not a URI scheme/],
      ['', /not a URI scheme/],
      ['my app', /not a URI scheme/],
    ] as const) {
      it(`${JSON.stringify(scheme)}: no`, () => assert.match(privateUseSchemeProblem(scheme) ?? '', reason));
    }
  });
});
