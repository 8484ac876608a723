import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeProtectedHeader, importJWK, SignJWT, type JWK } from 'jose';
import { generateSigningKey } from '../../src/authorization-server/keys.js';
import {
  addResourceServer,
  basic,
  createHarness,
  expectOAuthError,
  introspect,
  ISSUER,
  jwtClaims,
  obtainTokens,
  postAs,
  postForm,
  registerClient,
  registerServiceClient,
  RESOURCE,
  REVISIONS,
  type Harness,
  type TestClient,
} from '../helpers/harness.js';

async function serviceToken(h: Harness, client: TestClient): Promise<string> {
  const response = await postAs(h, '/token', client, { grant_type: 'client_credentials' });
  return ((await response.json()) as Record<string, string>).access_token!;
}

for (const revision of REVISIONS) {
  describe(`introspection (RFC 7662) — ${revision.name}`, () => {
    it('describes an active access token to a resource server', async () => {
      const h = createHarness();
      const { client, tokens } = await obtainTokens(h, revision);
      const response = await postAs(h, '/introspect', await addResourceServer(h), { token: String(tokens.access_token) });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('cache-control'), 'no-store');
      const body = (await response.json()) as Record<string, unknown>;
      const claims = jwtClaims(tokens.access_token);
      assert.equal(body.active, true);
      assert.equal(body.client_id, client.client_id);
      assert.equal(body.scope, 'mcp:tools');
      assert.equal(body.sub, 'user-alice');
      assert.equal(body.aud, RESOURCE);
      assert.equal(body.iss, ISSUER);
      assert.equal(body.token_type, 'Bearer');
      assert.equal(body.jti, claims.jti);
      assert.equal(body.exp, claims.exp);
      assert.equal(body.iat, claims.iat);
    });

    it('answers inactive once the token expires', async () => {
      const h = createHarness();
      const { tokens } = await obtainTokens(h, revision);
      const rs = await addResourceServer(h);
      h.clock.now += 599;
      assert.equal((await introspect(h, tokens.access_token, rs)).active, true);
      h.clock.now += 1;
      assert.deepEqual(await introspect(h, tokens.access_token, rs), { active: false });
    });

    it('answers inactive for a refresh token, garbage and a token signed by another key under our kid', async () => {
      const h = createHarness();
      const { client, tokens } = await obtainTokens(h, revision);
      const rs = await addResourceServer(h);
      const foreign = await generateSigningKey(h.clock.now);
      const forged = await new SignJWT({ ...jwtClaims(tokens.access_token), client_id: client.client_id })
        .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: decodeProtectedHeader(String(tokens.access_token)).kid! })
        .sign(await importJWK(JSON.parse(foreign.privateJwk) as JWK, 'ES256'));
      for (const token of [tokens.refresh_token, 'garbage', 'a.b.c', forged]) {
        assert.deepEqual(await introspect(h, token, rs), { active: false });
      }
    });
  });
}

describe('introspection callers', () => {
  it('lets a confidential client introspect its own tokens but not other clients’ tokens', async () => {
    const h = createHarness();
    const caller = await registerServiceClient(h, 'client_secret_post');
    const other = await registerServiceClient(h);
    assert.equal((await introspect(h, await serviceToken(h, caller), caller)).active, true);
    assert.deepEqual(await introspect(h, await serviceToken(h, other), caller), { active: false });
    assert.equal((await introspect(h, await serviceToken(h, other), await addResourceServer(h))).active, true);
  });

  it('refuses public clients and unauthenticated callers with 401', async () => {
    const h = createHarness();
    const client = await registerServiceClient(h);
    const token = await serviceToken(h, client);
    const publicClient = await registerClient(h);
    await expectOAuthError(await postAs(h, '/introspect', publicClient, { token }), 401, 'invalid_client');
    await expectOAuthError(await postForm(h, '/introspect', { token }), 401, 'invalid_client');
    await expectOAuthError(await postForm(h, '/introspect', { token }, { authorization: basic(client.client_id, 'wrong') }), 401, 'invalid_client');
    await expectOAuthError(await postForm(h, '/introspect', { token }, { authorization: `Bearer ${token}` }), 401, 'invalid_client');
  });

  it('requires the token parameter (invalid_request)', async () => {
    const h = createHarness();
    await expectOAuthError(await postAs(h, '/introspect', await addResourceServer(h), {}), 400, 'invalid_request');
  });
});
