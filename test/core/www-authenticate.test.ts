/**
 * WWW-Authenticate (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1): clients MUST be able to parse
 * it (spec, Revision B discovery), and the challenge we build must survive the round trip.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bearerChallenge, dpopChallenge, findBearerChallenge, parseWwwAuthenticate } from '../../src/core/www-authenticate.js';

describe('parseWwwAuthenticate', () => {
  it('parses a single Bearer challenge with quoted parameters', () => {
    assert.deepEqual(parseWwwAuthenticate('Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="mcp:tools"'), [
      { scheme: 'bearer', params: { resource_metadata: 'https://mcp.example.com/.well-known/oauth-protected-resource', scope: 'mcp:tools' } },
    ]);
  });

  it('parses several challenges in one header (the RFC 9110 example)', () => {
    const challenges = parseWwwAuthenticate('Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"');
    assert.deepEqual(challenges, [
      { scheme: 'newauth', params: { realm: 'apps', type: '1', title: 'Login to "apps"' } },
      { scheme: 'basic', params: { realm: 'simple' } },
    ]);
  });

  it('finds the Bearer challenge among others, wherever it is', () => {
    const header =
      'Basic realm="x", DPoP algs="ES256 PS256", Bearer error="invalid_token", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp"';
    assert.deepEqual(findBearerChallenge(header), { error: 'invalid_token', resource_metadata: 'https://a.example/.well-known/oauth-protected-resource/mcp' });
    assert.equal(parseWwwAuthenticate(header).length, 3);
  });

  it('unescapes quoted strings: \\" and \\\\, and keeps commas and = inside quotes', () => {
    const [challenge] = parseWwwAuthenticate('Bearer error_description="a \\"quoted\\" \\\\ path, with = signs", scope="a b"');
    assert.deepEqual(challenge!.params, { error_description: 'a "quoted" \\ path, with = signs', scope: 'a b' });
  });

  it('accepts token (unquoted) values, empty quoted values and spaces around =', () => {
    const [challenge] = parseWwwAuthenticate('Bearer error=invalid_token, realm="", scope = "x y"');
    assert.deepEqual(challenge!.params, { error: 'invalid_token', realm: '', scope: 'x y' });
  });

  it('is case-insensitive in scheme and parameter names (values kept as they are)', () => {
    assert.deepEqual(parseWwwAuthenticate('BEARER Resource_Metadata="https://A.example/X", ERROR="Invalid_Token"'), [
      { scheme: 'bearer', params: { resource_metadata: 'https://A.example/X', error: 'Invalid_Token' } },
    ]);
    assert.ok(findBearerChallenge('bearer realm="x"'));
    assert.ok(findBearerChallenge('BeArEr realm="x"'));
  });

  it('reads token68 challenges, with and without padding, next to parameter challenges', () => {
    assert.deepEqual(parseWwwAuthenticate('Negotiate YIIBhwYGKwYBBQUCoIIBezCC=='), [
      { scheme: 'negotiate', params: {}, token68: 'YIIBhwYGKwYBBQUCoIIBezCC==' },
    ]);
    assert.deepEqual(parseWwwAuthenticate('Negotiate abc123, Bearer realm="x"'), [
      { scheme: 'negotiate', params: {}, token68: 'abc123' },
      { scheme: 'bearer', params: { realm: 'x' } },
    ]);
    assert.deepEqual(parseWwwAuthenticate('Negotiate abc==, Bearer realm="x"'), [
      { scheme: 'negotiate', params: {}, token68: 'abc==' },
      { scheme: 'bearer', params: { realm: 'x' } },
    ]);
    assert.deepEqual(parseWwwAuthenticate('Negotiate abc=, Bearer realm="x"'), [
      { scheme: 'negotiate', params: {}, token68: 'abc=' },
      { scheme: 'bearer', params: { realm: 'x' } },
    ]);
  });

  it('reads schemes without parameters', () => {
    assert.deepEqual(parseWwwAuthenticate('Bearer'), [{ scheme: 'bearer', params: {} }]);
    assert.deepEqual(parseWwwAuthenticate('Bearer, Basic realm="r"'), [
      { scheme: 'bearer', params: {} },
      { scheme: 'basic', params: { realm: 'r' } },
    ]);
  });

  it('gives nothing (not an exception) for empty or unparseable headers', () => {
    assert.deepEqual(parseWwwAuthenticate(''), []);
    assert.deepEqual(parseWwwAuthenticate(' , ,'), []);
    assert.doesNotThrow(() => parseWwwAuthenticate('"unterminated'));
    assert.doesNotThrow(() => parseWwwAuthenticate('Bearer realm="unterminated'));
    assert.equal(findBearerChallenge(null), undefined);
    assert.equal(findBearerChallenge(undefined), undefined);
    assert.equal(findBearerChallenge('Basic realm="x"'), undefined);
  });
});

describe('bearerChallenge', () => {
  it('builds resource_metadata, error, error_description and scope; just "Bearer" when empty', () => {
    const header = bearerChallenge({
      resourceMetadata: 'https://a.example/.well-known/oauth-protected-resource',
      error: 'insufficient_scope',
      errorDescription: 'needs more',
      scope: 'mcp:admin mcp:tools',
    });
    assert.equal(
      header,
      'Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource", error="insufficient_scope", error_description="needs more", scope="mcp:admin mcp:tools"',
    );
    assert.equal(bearerChallenge({}), 'Bearer');
    assert.equal(bearerChallenge({ scope: '' }), 'Bearer');
  });

  it('escapes quotes and backslashes, so the value parses back unchanged', () => {
    const description = 'the "token" is bad \\ really';
    const header = bearerChallenge({ errorDescription: description, realm: 'a "realm"' });
    assert.equal(header, 'Bearer realm="a \\"realm\\"", error_description="the \\"token\\" is bad \\\\ really"');
    assert.deepEqual(findBearerChallenge(header), { realm: 'a "realm"', error_description: description });
  });

  it('drops control characters: no header splitting', () => {
    const header = bearerChallenge({ errorDescription: 'bad\r\nSet-Cookie: x=1\u0000\u007f\tend' });
    // eslint-disable-next-line no-control-regex -- looking for control characters is the point
    assert.doesNotMatch(header, /[\u0000-\u001f\u007f]/);
    assert.equal(findBearerChallenge(header)?.error_description, 'badSet-Cookie: x=1end');
    assert.doesNotThrow(() => new Headers({ 'www-authenticate': header }));
  });

  it('keeps the header ASCII (non-ASCII becomes ?), so Headers and node:http accept it', () => {
    const header = bearerChallenge({ errorDescription: 'Schlüssel ✗ 🔑' });
    assert.equal(findBearerChallenge(header)?.error_description, 'Schl?ssel ? ?');
    assert.doesNotThrow(() => new Headers({ 'www-authenticate': header }));
  });

  it('round-trips through parseWwwAuthenticate next to other challenges', () => {
    const ours = bearerChallenge({
      resourceMetadata: 'https://a.example/.well-known/oauth-protected-resource/mcp?x=1',
      error: 'invalid_token',
      errorDescription: 'expired, sorry',
    });
    const parsed = findBearerChallenge(`Basic realm="legacy", ${ours}`);
    assert.deepEqual(parsed, {
      resource_metadata: 'https://a.example/.well-known/oauth-protected-resource/mcp?x=1',
      error: 'invalid_token',
      error_description: 'expired, sorry',
    });
  });
});

describe('dpopChallenge', () => {
  it('names the algorithms and the metadata, and survives the round trip after a Bearer challenge', () => {
    const dpop = dpopChallenge({ algs: ['ES256', 'EdDSA'], resourceMetadata: 'https://a.example/.well-known/oauth-protected-resource/mcp' });
    assert.equal(dpop, 'DPoP algs="ES256 EdDSA", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp"');
    const header = `${bearerChallenge({ resourceMetadata: 'https://a.example/m' })}, ${dpop}`;
    const challenges = parseWwwAuthenticate(header);
    assert.deepEqual(
      challenges.map((challenge) => challenge.scheme),
      ['bearer', 'dpop'],
    );
    assert.deepEqual(challenges[1]!.params, { algs: 'ES256 EdDSA', resource_metadata: 'https://a.example/.well-known/oauth-protected-resource/mcp' });
  });

  it('puts the error, its description and the scope first, quoted', () => {
    const header = dpopChallenge({
      algs: ['ES256'],
      error: 'invalid_dpop_proof',
      errorDescription: 'the "htu" is wrong',
      scope: 'a b',
      resourceMetadata: 'https://a.example/m',
    });
    assert.equal(
      header,
      'DPoP error="invalid_dpop_proof", error_description="the \\"htu\\" is wrong", scope="a b", algs="ES256", resource_metadata="https://a.example/m"',
    );
    assert.deepEqual(parseWwwAuthenticate(header)[0]!.params, {
      error: 'invalid_dpop_proof',
      error_description: 'the "htu" is wrong',
      scope: 'a b',
      algs: 'ES256',
      resource_metadata: 'https://a.example/m',
    });
  });
});
