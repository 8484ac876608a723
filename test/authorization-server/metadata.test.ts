import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createHarness, ISSUER, OTHER_RESOURCE, RESOURCE, type Harness } from '../helpers/harness.js';

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

const WELL_KNOWN = '/.well-known/oauth-authorization-server';
const TENANT_ISSUER = 'http://127.0.0.1:9999/tenant';

async function metadata(h: Harness, path = WELL_KNOWN, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const response = await h.request(path, { headers });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  return (await response.json()) as Record<string, unknown>;
}

describe('authorization server metadata (RFC 8414)', () => {
  it('describes the server: endpoints, PKCE S256, code flow, grants, client authentication, scopes, iss parameter', async () => {
    const doc = await metadata(createHarness());
    assert.equal(doc.issuer, ISSUER);
    assert.deepEqual(doc.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(doc.response_types_supported, ['code']);
    assert.deepEqual(
      new Set(doc.grant_types_supported as string[]),
      new Set(['authorization_code', 'refresh_token', 'client_credentials', 'urn:ietf:params:oauth:grant-type:device_code']),
    );
    assert.equal(doc.device_authorization_endpoint, `${ISSUER}/device_authorization`);
    assert.deepEqual(
      new Set(doc.token_endpoint_auth_methods_supported as string[]),
      new Set(['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt']),
    );
    assert.deepEqual(
      new Set(doc.revocation_endpoint_auth_methods_supported as string[]),
      new Set(['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt']),
    );
    assert.deepEqual(
      new Set(doc.introspection_endpoint_auth_methods_supported as string[]),
      new Set(['client_secret_basic', 'client_secret_post', 'private_key_jwt']),
    );
    // The client assertion algorithms: asymmetric only, never none or HMAC (algorithm confusion).
    for (const field of [
      'token_endpoint_auth_signing_alg_values_supported',
      'revocation_endpoint_auth_signing_alg_values_supported',
      'introspection_endpoint_auth_signing_alg_values_supported',
    ]) {
      const algs = doc[field] as string[];
      assert.ok(algs.includes('ES256') && algs.includes('RS256') && algs.includes('EdDSA'), field);
      assert.ok(!algs.some((alg) => alg === 'none' || alg.startsWith('HS')), field);
    }
    assert.deepEqual(doc.scopes_supported, ['mcp:tools', 'mcp:admin', 'offline_access', 'openid', 'profile', 'email']);
    assert.equal(doc.jwks_uri, `${ISSUER}/jwks`);
    assert.equal(doc.revocation_endpoint, `${ISSUER}/revoke`);
    assert.equal(doc.introspection_endpoint, `${ISSUER}/introspect`);
    assert.equal(doc.authorization_response_iss_parameter_supported, true);
  });

  it('uses the Revision A default paths /authorize, /token and /register at the root', async () => {
    const doc = await metadata(createHarness());
    assert.equal(doc.authorization_endpoint, `${ISSUER}/authorize`);
    assert.equal(doc.token_endpoint, `${ISSUER}/token`);
    assert.equal(doc.registration_endpoint, `${ISSUER}/register`);
  });

  it('answers every protocol version header, known or not, with the same document', async () => {
    const h = createHarness();
    const plain = await metadata(h);
    const variants: Record<string, string>[] = [
      { 'Context-Protocol-Version': '2025-03-26' },
      { 'MCP-Protocol-Version': '2025-03-26' },
      { 'MCP-Protocol-Version': '2025-06-18' },
      { 'Context-Protocol-Version': '2099-01-01' },
      { 'MCP-Protocol-Version': 'not-a-date' },
    ];
    for (const headers of variants) {
      assert.deepEqual(await metadata(h, WELL_KNOWN, headers), plain, JSON.stringify(headers));
    }
  });

  it('states the issuer without a trailing slash even when configured with one', async () => {
    assert.equal((await metadata(createHarness({ issuer: `${ISSUER}/` }))).issuer, ISSUER);
  });

  it('serves an issuer with a path at the path-inserted well-known URL, with issuer equal to that URL', async () => {
    for (const configured of [TENANT_ISSUER, `${TENANT_ISSUER}/`]) {
      const h = createHarness({ issuer: configured });
      const doc = await metadata(h, `${WELL_KNOWN}/tenant`);
      assert.equal(doc.issuer, TENANT_ISSUER);
      assert.equal(doc.token_endpoint, `${TENANT_ISSUER}/token`);
      assert.equal(doc.authorization_endpoint, `${TENANT_ISSUER}/authorize`);
    }
  });

  for (const issuer of [ISSUER, TENANT_ISSUER]) {
    it(`advertises only endpoints that exist (issuer ${issuer})`, async () => {
      const h = createHarness({ issuer });
      const path = new URL(issuer).pathname.replace(/\/$/, '');
      const doc = await metadata(h, `${WELL_KNOWN}${path}`);
      for (const field of ['authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'revocation_endpoint', 'introspection_endpoint', 'jwks_uri']) {
        const url = doc[field] as string;
        assert.ok(url.startsWith(`${issuer}/`), `${field}: ${url}`);
        const response = await h.request(url, { method: field === 'jwks_uri' || field === 'authorization_endpoint' ? 'GET' : 'POST' });
        assert.notEqual(response.status, 404, `${field} ${url}`);
        assert.ok(response.status < 500, `${field} ${url}: ${response.status}`);
      }
    });
  }

  it("is the server's `metadata`, a copy: what a caller changes there is not served", async () => {
    const h = createHarness({ issuer: `${TENANT_ISSUER}/`, registration: 'closed' });
    assert.deepEqual(h.server.metadata, await metadata(h, `${WELL_KNOWN}/tenant`));
    h.server.metadata.issuer = 'https://evil.example';
    h.server.metadata.scopes_supported.push('mcp:everything');
    const served = await metadata(h, `${WELL_KNOWN}/tenant`);
    assert.equal(served.issuer, TENANT_ISSUER);
    assert.deepEqual(served.scopes_supported, ['mcp:tools', 'mcp:admin', 'offline_access', 'openid', 'profile', 'email']);
  });

  it('lists token exchange, the jwt-bearer grant and their profiles and token types exactly when they are on', async () => {
    const grants = (doc: Record<string, unknown>) => doc.grant_types_supported as string[];
    const plain = await metadata(createHarness());
    assert.ok(!grants(plain).includes(TOKEN_EXCHANGE));
    assert.ok(!grants(plain).includes(JWT_BEARER));
    assert.equal(plain.authorization_grant_profiles_supported, undefined);
    assert.equal(plain.identity_chaining_requested_token_types_supported, undefined);

    // A delegation alone: token exchange, but no ID-JAG issued (a delegated token stays in this domain).
    const delegating = await metadata(createHarness({ tokenExchange: { delegations: [{ client: 'notes', from: RESOURCE, to: OTHER_RESOURCE }] } }));
    assert.ok(grants(delegating).includes(TOKEN_EXCHANGE));
    assert.equal(delegating.identity_chaining_requested_token_types_supported, undefined);

    // An identity provider for another authorization server: token exchange, and the ID-JAG as a type it issues.
    const idp = await metadata(createHarness({ tokenExchange: { idJagAudiences: [{ issuer: 'https://auth.tools.example' }] } }));
    assert.ok(grants(idp).includes(TOKEN_EXCHANGE));
    assert.ok(!grants(idp).includes(JWT_BEARER));
    assert.deepEqual(idp.identity_chaining_requested_token_types_supported, ['urn:ietf:params:oauth:token-type:id-jag']);

    // A trusted IdP: the jwt-bearer grant and the ID-JAG profile; a workload rule: the grant alone.
    const trusting = await metadata(createHarness({ trustedIdps: ['https://corp.idp.example'] }));
    assert.ok(grants(trusting).includes(JWT_BEARER));
    assert.ok(!grants(trusting).includes(TOKEN_EXCHANGE));
    assert.deepEqual(trusting.authorization_grant_profiles_supported, ['urn:ietf:params:oauth:grant-profile:id-jag']);
    const workloads = await metadata(
      createHarness({
        workloads: [{ issuer: 'https://platform.example', subject: 'system:serviceaccount:billing:*', client: 'billing-worker', scopes: ['mcp:tools'] }],
      }),
    );
    assert.ok(grants(workloads).includes(JWT_BEARER));
    assert.equal(workloads.authorization_grant_profiles_supported, undefined);
  });

  it('leaves registration_endpoint out when registration is closed', async () => {
    const doc = await metadata(createHarness({ registration: 'closed' }));
    assert.equal(doc.registration_endpoint, undefined);
  });
});
