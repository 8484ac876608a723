import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { resolveConfig } from '../../src/authorization-server/config.js';
import {
  addUser,
  authorize,
  createHarness,
  expectOAuthError,
  ISSUER,
  obtainTokens,
  OTHER_RESOURCE,
  redeemCode,
  registerClient,
  RESOURCE,
  REVISIONS,
  type Harness,
} from '../helpers/harness.js';

/** Verifies an access token the way a resource server would: signature against /jwks, RFC 9068 checks. */
async function verify(h: Harness, token: unknown, audience = RESOURCE): Promise<Record<string, unknown>> {
  const jwks = (await (await h.request('/jwks')).json()) as JSONWebKeySet;
  const { payload } = await jwtVerify(String(token), createLocalJWKSet(jwks), {
    issuer: ISSUER,
    audience,
    typ: 'at+jwt',
    algorithms: ['ES256'],
    currentDate: new Date(h.clock.now * 1000),
  });
  return payload as Record<string, unknown>;
}

/** A whole Revision B flow with `resource` spelled as given, at authorization and token requests. */
async function tokensFor(h: Harness, resource: string): Promise<Response> {
  const client = await registerClient(h);
  const { location, verifier } = await authorize(h, { client, user: await addUser(h), resource });
  return redeemCode(h, client, location.searchParams.get('code')!, verifier, { resource });
}

for (const revision of REVISIONS) {
  describe(`access tokens (RFC 9068) — ${revision.name}`, () => {
    it('is an ES256 at+jwt whose kid is published, carrying iss, sub, aud, client_id, scope, jti, iat and exp', async () => {
      const h = createHarness();
      const { client, tokens } = await obtainTokens(h, revision);
      const header = decodeProtectedHeader(String(tokens.access_token));
      assert.equal(header.typ, 'at+jwt');
      assert.equal(header.alg, 'ES256');
      const jwks = (await (await h.request('/jwks')).json()) as JSONWebKeySet;
      assert.ok(
        jwks.keys.some((key) => key.kid === header.kid),
        'kid is in /jwks',
      );

      const claims = await verify(h, tokens.access_token);
      assert.equal(claims.iss, ISSUER);
      assert.equal(claims.sub, 'user-alice');
      assert.equal(claims.aud, RESOURCE);
      assert.equal(claims.client_id, client.client_id);
      assert.equal(claims.scope, 'mcp:tools');
      assert.equal(typeof claims.jti, 'string');
      assert.equal(claims.iat, h.clock.now);
      assert.equal((claims.exp as number) - (claims.iat as number), 600);
      assert.ok(resolveConfig(h.options).accessTokenTtl <= 900, 'the default lifetime is short');
    });

    it('lives exactly the configured accessTokenTtl', async () => {
      const h = createHarness({ accessTokenTtl: 120 });
      const { tokens } = await obtainTokens(h, revision);
      assert.equal(tokens.expires_in, 120);
      const claims = await verify(h, tokens.access_token);
      assert.equal((claims.exp as number) - (claims.iat as number), 120);
    });

    it('gives every token its own jti', async () => {
      const h = createHarness();
      const first = await obtainTokens(h, revision);
      const second = await obtainTokens(h, revision, { client: first.client });
      assert.notEqual((await verify(h, first.tokens.access_token)).jti, (await verify(h, second.tokens.access_token)).jti);
    });
  });
}

describe('access token audience (Revision A)', () => {
  it('is the configured default resource when the client names none', async () => {
    const h = createHarness({ defaultResource: OTHER_RESOURCE });
    const { tokens } = await obtainTokens(h, REVISIONS[0]);
    assert.equal((await verify(h, tokens.access_token, OTHER_RESOURCE)).aud, OTHER_RESOURCE);
  });
});

describe('access token audience (Revision B)', () => {
  for (const resource of ['HTTP://127.0.0.1:9999/mcp', 'http://127.0.0.1:9999/mcp/', 'http://127.0.0.1:9999/mcp']) {
    it(`is the canonical resource URI when the client asks for ${resource}`, async () => {
      const h = createHarness();
      const response = await tokensFor(h, resource);
      assert.equal(response.status, 200);
      const { access_token } = (await response.json()) as Record<string, string>;
      assert.equal((await verify(h, access_token)).aud, RESOURCE);
    });
  }

  it('lowercases an uppercase host', async () => {
    const h = createHarness({ resources: ['https://mcp.example.com/api'] });
    const response = await tokensFor(h, 'https://MCP.Example.COM/api/');
    const { access_token } = (await response.json()) as Record<string, string>;
    assert.equal((await verify(h, access_token, 'https://mcp.example.com/api')).aud, 'https://mcp.example.com/api');
  });

  it('names the one resource requested, and no other', async () => {
    const h = createHarness();
    const { access_token } = (await (await tokensFor(h, OTHER_RESOURCE)).json()) as Record<string, string>;
    assert.equal((await verify(h, access_token, OTHER_RESOURCE)).aud, OTHER_RESOURCE);
    await assert.rejects(verify(h, access_token, RESOURCE), /aud/);
  });

  it('is never issued for a resource the server does not serve (invalid_target)', async () => {
    const h = createHarness();
    const client = await registerClient(h);
    const { location } = await authorize(h, { client, user: await addUser(h), resource: 'https://not-served.example.com/mcp' });
    assert.equal(location.searchParams.get('error'), 'invalid_target');
    assert.equal(location.searchParams.get('code'), null);

    const { location: ok, verifier } = await authorize(h, { client, user: { username: 'alice', password: 'correct horse battery' }, resource: RESOURCE });
    const response = await redeemCode(h, client, ok.searchParams.get('code')!, verifier, { resource: 'https://not-served.example.com/mcp' });
    await expectOAuthError(response, 400, 'invalid_target');
  });
});
