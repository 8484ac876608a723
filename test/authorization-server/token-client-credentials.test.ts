import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient as createClient } from '../../src/authorization-server/clients.js';
import {
  createHarness,
  expectOAuthError,
  jwtClaims,
  OTHER_RESOURCE,
  postAs,
  registerClient,
  registerServiceClient,
  RESOURCE,
  REVISIONS,
  type Harness,
  type TestClient,
} from '../helpers/harness.js';

/** A client_credentials client an operator created with a `scope` limit (a dynamic client's scope is no limit). */
async function adminServiceClient(h: Harness, scope: string): Promise<TestClient> {
  const metadata = validateClientMetadata({ grant_types: ['client_credentials'], scope }, h.server.metadata.scopes_supported);
  const { client, clientSecret } = await createClient(h.store, metadata, h.clock.now, { registeredBy: 'admin' });
  return { client_id: client.clientId, client_secret: clientSecret!, token_endpoint_auth_method: 'client_secret_basic' };
}

function clientCredentials(h: Harness, client: TestClient, extra: Record<string, string | undefined> = {}): Promise<Response> {
  return postAs(h, '/token', client, { grant_type: 'client_credentials', ...extra });
}

for (const revision of REVISIONS) {
  describe(`client_credentials grant — ${revision.name}`, () => {
    for (const method of ['client_secret_basic', 'client_secret_post'] as const) {
      it(`issues an access token for the client itself and no refresh token (${method})`, async () => {
        const h = createHarness();
        const client = await registerServiceClient(h, method);
        const response = await clientCredentials(h, client, { resource: revision.resource });
        assert.equal(response.status, 200);
        assert.equal(response.headers.get('cache-control'), 'no-store');
        const body = (await response.json()) as Record<string, string>;
        assert.equal(body.refresh_token, undefined);
        assert.equal(body.token_type, 'Bearer');
        assert.equal(body.scope, 'mcp:tools');
        const claims = jwtClaims(body.access_token);
        assert.equal(claims.sub, client.client_id);
        assert.equal(claims.client_id, client.client_id);
        assert.equal(claims.aud, RESOURCE);
      });
    }

    it('refuses public clients (unauthorized_client)', async () => {
      const h = createHarness();
      const client = await registerClient(h);
      await expectOAuthError(await clientCredentials(h, client, { resource: revision.resource }), 400, 'unauthorized_client');
    });

    it('refuses a confidential client not registered for the grant (unauthorized_client)', async () => {
      const h = createHarness();
      const client = await registerClient(h, { token_endpoint_auth_method: 'client_secret_basic' });
      await expectOAuthError(await clientCredentials(h, client, { resource: revision.resource }), 400, 'unauthorized_client');
    });

    it('grants requested scopes within an operator’s limit and refuses others (invalid_scope)', async () => {
      const h = createHarness();
      const client = await adminServiceClient(h, 'mcp:tools');
      const ok = (await (await clientCredentials(h, client, { scope: 'mcp:tools', resource: revision.resource })).json()) as Record<string, string>;
      assert.equal(ok.scope, 'mcp:tools');
      await expectOAuthError(await clientCredentials(h, client, { scope: 'mcp:admin', resource: revision.resource }), 400, 'invalid_scope');
      await expectOAuthError(await clientCredentials(h, client, { scope: 'unknown', resource: revision.resource }), 400, 'invalid_scope');
    });

    it('holds a client registered with no scope list (by an earlier version, or in code) to the default scopes', async () => {
      const h = createHarness();
      const client = await registerServiceClient(h);
      assert.equal((await h.store.getClient(client.client_id))?.scope, null);
      const body = await expectOAuthError(
        await clientCredentials(h, client, { scope: 'mcp:tools mcp:admin', resource: revision.resource }),
        400,
        'invalid_scope',
      );
      assert.match(
        body.error_description ?? '',
        /scope not allowed: mcp:admin \(the client has no scope list, so it may have only the default scopes \(mcp:tools\)\)/,
      );
      const ok = (await (await clientCredentials(h, client, { scope: 'mcp:tools', resource: revision.resource })).json()) as Record<string, string>;
      assert.equal(ok.scope, 'mcp:tools');
    });

    it('refuses a wrong secret with 401 invalid_client', async () => {
      const h = createHarness();
      const client = await registerServiceClient(h);
      await expectOAuthError(await clientCredentials(h, { ...client, client_secret: `${client.client_secret}x` }), 401, 'invalid_client');
    });
  });
}

describe('client_credentials grant — resource (Revision B)', () => {
  it('binds the token to the requested resource and refuses one not served (invalid_target)', async () => {
    const h = createHarness();
    const client = await registerServiceClient(h);
    const other = (await (await clientCredentials(h, client, { resource: OTHER_RESOURCE })).json()) as Record<string, string>;
    assert.equal(jwtClaims(other.access_token).aud, OTHER_RESOURCE);
    await expectOAuthError(await clientCredentials(h, client, { resource: 'https://not-served.example.com/mcp' }), 400, 'invalid_target');
  });
});
