/**
 * The OpenID provider's surface beside ID tokens: discovery at /.well-known/openid-configuration,
 * and the userinfo endpoint, which answers for an access token of ours granted `openid` and
 * refuses anything else with the challenge of RFC 6750 §3.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashPassword } from '../../src/core/passwords.js';
import { parseWwwAuthenticate } from '../../src/core/www-authenticate.js';
import { dpopProofSigner, generateDpopKeyPair } from '../../src/core/dpop.js';
import {
  addUser,
  authorize,
  createHarness,
  ISSUER,
  jwtClaims,
  obtainTokens,
  postForm,
  REDIRECT_URI,
  registerClient,
  REVISIONS,
  type Harness,
} from '../helpers/harness.js';

const REVISION_B = REVISIONS[1];

function userinfo(h: Harness, token: string | undefined, method: 'GET' | 'POST' = 'GET'): Promise<Response> {
  return h.request('/userinfo', { method, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
}

async function challenged(response: Response, status: number, error: string | undefined): Promise<Record<string, string>> {
  assert.equal(response.status, status, await response.clone().text());
  const header = response.headers.get('www-authenticate');
  assert.ok(header, 'a WWW-Authenticate header');
  const [challenge] = parseWwwAuthenticate(header);
  assert.equal(challenge?.scheme, 'bearer');
  assert.equal(challenge?.params.error, error);
  return challenge!.params;
}

describe('OpenID Connect discovery', () => {
  it('serves the metadata at /.well-known/openid-configuration with the OpenID provider fields, as at the RFC 8414 path', async () => {
    const h = createHarness();
    const response = await h.request('/.well-known/openid-configuration');
    assert.equal(response.status, 200);
    const metadata = (await response.json()) as Record<string, unknown>;
    assert.equal(metadata.issuer, ISSUER);
    assert.equal(metadata.userinfo_endpoint, `${ISSUER}/userinfo`);
    assert.deepEqual(metadata.id_token_signing_alg_values_supported, [(await h.server.keys.current()).alg]);
    assert.deepEqual(metadata.subject_types_supported, ['public']);
    assert.deepEqual(metadata.response_types_supported, ['code']);
    assert.ok((metadata.scopes_supported as string[]).includes('openid'));
    for (const claim of ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'preferred_username', 'email']) {
      assert.ok((metadata.claims_supported as string[]).includes(claim), claim);
    }
    assert.deepEqual(await (await h.request('/.well-known/oauth-authorization-server')).json(), metadata);
  });

  it('is served under the path of an issuer that has one', async () => {
    const h = createHarness({ issuer: `${ISSUER}/tenant` });
    const metadata = (await (await h.request('/tenant/.well-known/openid-configuration')).json()) as Record<string, unknown>;
    assert.equal(metadata.issuer, `${ISSUER}/tenant`);
    assert.equal(metadata.userinfo_endpoint, `${ISSUER}/tenant/userinfo`);
  });
});

describe('userinfo', () => {
  it('answers GET and POST with sub for an access token granted openid, and with profile the username', async () => {
    const h = createHarness();
    const { tokens } = await obtainTokens(h, REVISION_B, { scope: 'openid profile mcp:tools' });
    for (const method of ['GET', 'POST'] as const) {
      const response = await userinfo(h, String(tokens.access_token), method);
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('cache-control'), 'no-store');
      assert.deepEqual(await response.json(), { sub: jwtClaims(tokens.access_token).sub, preferred_username: 'alice' });
    }
  });

  it('says with email the email an upstream provider gave for the person', async () => {
    const h = createHarness();
    await h.store.createUserWithIdentity(
      { id: 'user-alice', username: 'alice', passwordHash: await hashPassword('correct horse battery'), createdAt: h.clock.now },
      {
        issuer: 'https://corp.example',
        subject: 'a-1',
        provider: 'corp',
        userId: 'user-alice',
        email: 'alice@example.com',
        name: 'Alice',
        createdAt: h.clock.now,
      },
    );
    const { tokens } = await obtainTokens(h, REVISION_B, { scope: 'openid email mcp:tools' });
    assert.deepEqual(await (await userinfo(h, String(tokens.access_token))).json(), { sub: 'user-alice', email: 'alice@example.com' });
  });

  it('says only sub without profile', async () => {
    const h = createHarness();
    const { tokens } = await obtainTokens(h, REVISION_B, { scope: 'openid mcp:tools' });
    assert.deepEqual(await (await userinfo(h, String(tokens.access_token))).json(), { sub: jwtClaims(tokens.access_token).sub });
  });

  it('is readable from a browser page (CORS), as the token endpoint is', async () => {
    const h = createHarness();
    const preflight = await h.request('/userinfo', { method: 'OPTIONS' });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), '*');
    assert.equal(preflight.headers.get('access-control-allow-methods'), 'GET, POST, OPTIONS');
    assert.match(preflight.headers.get('access-control-expose-headers') ?? '', /WWW-Authenticate/);
  });

  it('asks for a token, with a bare challenge, when none is sent', async () => {
    const h = createHarness();
    const response = await userinfo(h, undefined);
    assert.equal(response.status, 401);
    assert.equal(response.headers.get('www-authenticate'), 'Bearer');
  });

  it('refuses a token that is not ours, an expired one and a revoked one (invalid_token)', async () => {
    const h = createHarness();
    const { tokens } = await obtainTokens(h, REVISION_B, { scope: 'openid mcp:tools' });
    const token = String(tokens.access_token);
    const forged = `${token.slice(0, -4)}AAAA`;
    assert.match((await challenged(await userinfo(h, forged), 401, 'invalid_token')).error_description ?? '', /not one this server issued/);
    // An ID token is no access token.
    await challenged(await userinfo(h, String(tokens.id_token)), 401, 'invalid_token');
    h.clock.now += 3600;
    assert.match((await challenged(await userinfo(h, token), 401, 'invalid_token')).error_description ?? '', /or it has expired/);
    h.clock.now -= 3600;
    assert.equal((await userinfo(h, token)).status, 200);
    await h.store.revokeGrant(String(jwtClaims(token).grant_id), h.clock.now);
    assert.match((await challenged(await userinfo(h, token), 401, 'invalid_token')).error_description ?? '', /revoked/);
  });

  it('refuses a token bound to a DPoP key (invalid_token): it takes no proof', async () => {
    const h = createHarness();
    const client = await registerClient(h);
    const { location, verifier } = await authorize(h, { client, user: await addUser(h), scope: 'openid mcp:tools', resource: REVISION_B.resource });
    const key = dpopProofSigner(generateDpopKeyPair());
    const proof = key.sign({ method: 'POST', url: `${ISSUER}/token`, now: h.clock.now });
    const code = location.searchParams.get('code')!;
    const response = await postForm(
      h,
      '/token',
      {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        redirect_uri: REDIRECT_URI,
        client_id: client.client_id,
        resource: REVISION_B.resource,
      },
      { dpop: proof },
    );
    const tokens = (await response.json()) as Record<string, string>;
    assert.equal(tokens.token_type, 'DPoP');
    const params = await challenged(await userinfo(h, tokens.access_token), 401, 'invalid_token');
    assert.match(params.error_description ?? '', /bound to a DPoP key/);
  });

  it('refuses a token not granted openid (insufficient_scope)', async () => {
    const h = createHarness();
    const { tokens } = await obtainTokens(h, REVISION_B, { scope: 'mcp:tools' });
    const params = await challenged(await userinfo(h, String(tokens.access_token)), 403, 'insufficient_scope');
    assert.equal(params.scope, 'openid');
  });
});
