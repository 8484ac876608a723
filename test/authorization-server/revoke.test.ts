import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  addResourceServer,
  basic,
  createHarness,
  expectOAuthError,
  introspect,
  obtainTokensAs,
  postAs,
  postForm,
  registerClient,
  registerServiceClient,
  REVISIONS,
  type Harness,
  type TestClient,
} from '../helpers/harness.js';

function revoke(h: Harness, client: TestClient, token: string, hint?: string): Promise<Response> {
  return postAs(h, '/revoke', client, { token, token_type_hint: hint });
}

async function revokeOk(h: Harness, client: TestClient, token: string, hint?: string): Promise<void> {
  const response = await revoke(h, client, token, hint);
  assert.equal(response.status, 200, await response.clone().text());
  assert.equal(response.headers.get('cache-control'), 'no-store');
}

function refresh(h: Harness, client: TestClient, refreshToken: string): Promise<Response> {
  return postAs(h, '/token', client, { grant_type: 'refresh_token', refresh_token: refreshToken });
}

for (const revision of REVISIONS) {
  describe(`revocation (RFC 7009) — ${revision.name}`, () => {
    for (const method of ['none', 'client_secret_basic'] as const) {
      it(`revokes the whole family with a refresh token (${method} client)`, async () => {
        const h = createHarness();
        const client = await registerClient(h, { token_endpoint_auth_method: method });
        const first = await obtainTokensAs(h, revision, client);
        const second = (await (await refresh(h, client, first.refresh_token!)).json()) as Record<string, string>;
        await revokeOk(h, client, second.refresh_token!);
        await expectOAuthError(await refresh(h, client, second.refresh_token!), 400, 'invalid_grant');
        const rs = await addResourceServer(h);
        assert.equal((await introspect(h, first.access_token, rs)).active, false);
        assert.equal((await introspect(h, second.access_token, rs)).active, false);
      });
    }

    it('revokes an access token, whatever the hint says', async () => {
      const h = createHarness();
      const client = await registerClient(h);
      const rs = await addResourceServer(h);
      for (const hint of [undefined, 'access_token', 'refresh_token']) {
        const tokens = await obtainTokensAs(h, revision, client);
        assert.equal((await introspect(h, tokens.access_token, rs)).active, true);
        await revokeOk(h, client, tokens.access_token!, hint);
        assert.equal((await introspect(h, tokens.access_token, rs)).active, false, `hint ${hint}`);
      }
    });

    it('revokes a client_credentials access token (a grant with no refresh token), logging it', async () => {
      const h = createHarness();
      const robot = await registerServiceClient(h);
      const rs = await addResourceServer(h);
      const response = await postAs(h, '/token', robot, { grant_type: 'client_credentials', resource: revision.resource });
      const { access_token: accessToken } = (await response.json()) as Record<string, string>;
      assert.equal((await introspect(h, accessToken, rs)).active, true);
      await revokeOk(h, robot, accessToken!, 'access_token');
      assert.equal((await introspect(h, accessToken, rs)).active, false);
      assert.deepEqual(
        h.log.filter((event) => event.event === 'token_revoked').map((event) => [event.kind, event.client_id]),
        [['access_token', robot.client_id]],
      );
    });

    it('revokes a refresh token sent with the access_token hint', async () => {
      const h = createHarness();
      const client = await registerClient(h);
      const tokens = await obtainTokensAs(h, revision, client);
      await revokeOk(h, client, tokens.refresh_token!, 'access_token');
      await expectOAuthError(await refresh(h, client, tokens.refresh_token!), 400, 'invalid_grant');
    });

    it('revokes the family with a rotated refresh token too, unless another client sends it', async () => {
      const h = createHarness();
      const client = await registerClient(h);
      const first = await obtainTokensAs(h, revision, client);
      const second = (await (await refresh(h, client, first.refresh_token!)).json()) as Record<string, string>;
      await revokeOk(h, await registerClient(h), first.refresh_token!);
      const third = (await (await refresh(h, client, second.refresh_token!)).json()) as Record<string, string>;
      assert.ok(third.refresh_token, 'another client’s revocation changed nothing');
      await revokeOk(h, client, first.refresh_token!);
      await expectOAuthError(await refresh(h, client, third.refresh_token!), 400, 'invalid_grant');
      assert.equal(h.log.filter((event) => event.event === 'refresh_token_reused').length, 0, 'a revocation is not a reuse');
    });

    it('answers 200 for an unknown token', async () => {
      const h = createHarness();
      const client = await registerClient(h);
      await revokeOk(h, client, 'no-such-token');
      await revokeOk(h, client, 'eyJhbGciOiJFUzI1NiJ9.e30.c2ln');
    });

    it('answers 200 for another client’s tokens but revokes nothing', async () => {
      const h = createHarness();
      const owner = await registerClient(h);
      const tokens = await obtainTokensAs(h, revision, owner);
      const other = await registerClient(h);
      await revokeOk(h, other, tokens.refresh_token!);
      await revokeOk(h, other, tokens.access_token!);
      assert.equal((await introspect(h, tokens.access_token, await addResourceServer(h))).active, true);
      assert.equal((await refresh(h, owner, tokens.refresh_token!)).status, 200);
    });
  });
}

describe('revocation errors', () => {
  it('refuses bad client authentication with 401 and revokes nothing', async () => {
    const h = createHarness();
    const client = await registerServiceClient(h);
    const { access_token } = (await (await postAs(h, '/token', client, { grant_type: 'client_credentials' })).json()) as Record<string, string>;
    const cases = [
      postForm(h, '/revoke', { token: access_token }, { authorization: basic(client.client_id, 'wrong') }),
      postForm(h, '/revoke', { token: access_token, client_id: client.client_id }),
      postForm(h, '/revoke', { token: access_token, client_id: 'no-such-client' }),
      postForm(h, '/revoke', { token: access_token }),
    ];
    for (const response of await Promise.all(cases)) await expectOAuthError(response, 401, 'invalid_client');
    assert.equal((await introspect(h, access_token, client)).active, true);
  });

  it('requires the token parameter (invalid_request)', async () => {
    const h = createHarness();
    await expectOAuthError(await revoke(h, await registerClient(h), ''), 400, 'invalid_request');
  });

  it('refuses an unknown token_type_hint (unsupported_token_type)', async () => {
    const h = createHarness();
    await expectOAuthError(await revoke(h, await registerClient(h), 'x', 'id_token'), 400, 'unsupported_token_type');
  });
});
