import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAuthorizationCode } from '../../src/authorization-server/authorization-codes.js';
import { createServerContext } from '../../src/authorization-server/context.js';
import {
  addResourceServer,
  addUser,
  authorize,
  createHarness,
  expectOAuthError,
  introspect,
  OTHER_RESOURCE,
  pkcePair,
  postForm,
  REDIRECT_URI,
  redeemCode,
  registerClient,
  REVISIONS,
  type Harness,
  type Revision,
  type TestClient,
} from '../helpers/harness.js';

/** Runs the browser part of the flow and returns a fresh code, unredeemed. */
async function issueCode(h: Harness, revision: Revision, client?: TestClient): Promise<{ client: TestClient; code: string; verifier: string }> {
  client ??= await registerClient(h);
  const user = (await h.store.getUser({ username: 'alice' })) ? { username: 'alice', password: 'correct horse battery' } : await addUser(h);
  const { location, verifier } = await authorize(h, { client, user, resource: revision.resource });
  const code = location.searchParams.get('code');
  assert.ok(code, `no code in ${location}`);
  return { client, code, verifier };
}

for (const revision of REVISIONS) {
  describe(`authorization_code grant — ${revision.name}`, () => {
    it('exchanges a code and its verifier for a bearer access token and a refresh token, not cached', async () => {
      const h = createHarness();
      const { client, code, verifier } = await issueCode(h, revision);
      const response = await redeemCode(h, client, code, verifier, { resource: revision.resource });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('cache-control'), 'no-store');
      const body = (await response.json()) as Record<string, unknown>;
      assert.equal(body.token_type, 'Bearer');
      assert.equal(body.expires_in, 600);
      assert.equal(body.scope, 'mcp:tools');
      assert.equal(typeof body.access_token, 'string');
      assert.equal(typeof body.refresh_token, 'string');
    });

    it('requires code_verifier (invalid_request) and refuses a wrong one (invalid_grant)', async () => {
      const h = createHarness();
      const first = await issueCode(h, revision);
      await expectOAuthError(await redeemCode(h, first.client, first.code, '', { resource: revision.resource }), 400, 'invalid_request');
      const second = await issueCode(h, revision, first.client);
      await expectOAuthError(await redeemCode(h, first.client, second.code, pkcePair().verifier, { resource: revision.resource }), 400, 'invalid_grant');
    });

    it('refuses a replayed code and revokes what the first redemption issued', async () => {
      const h = createHarness();
      const { client, code, verifier } = await issueCode(h, revision);
      const first = (await (await redeemCode(h, client, code, verifier, { resource: revision.resource })).json()) as Record<string, string>;
      await expectOAuthError(await redeemCode(h, client, code, verifier, { resource: revision.resource }), 400, 'invalid_grant');

      const refresh = await postForm(h, '/token', { grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: client.client_id });
      await expectOAuthError(refresh, 400, 'invalid_grant');
      assert.deepEqual(await introspect(h, first.access_token, await addResourceServer(h)), { active: false });
    });

    it('refuses a code whose consent was withdrawn before it was redeemed', async () => {
      const h = createHarness();
      const { client, code, verifier } = await issueCode(h, revision);
      const user = (await h.store.getUser({ username: 'alice' }))!;
      assert.equal(await h.store.revokeConsents(user.id, client.client_id, h.clock.now), 1);
      await expectOAuthError(await redeemCode(h, client, code, verifier, { resource: revision.resource }), 400, 'invalid_grant');
    });

    it('lets only one of two simultaneous redemptions of a code succeed', async () => {
      const h = createHarness();
      const { client, code, verifier } = await issueCode(h, revision);
      const responses = await Promise.all([1, 2, 3].map(() => redeemCode(h, client, code, verifier, { resource: revision.resource })));
      assert.deepEqual(responses.map((r) => r.status).sort(), [200, 400, 400]);
    });

    it('refuses a code presented by another client', async () => {
      const h = createHarness();
      const { code, verifier } = await issueCode(h, revision);
      const thief = await registerClient(h);
      await expectOAuthError(await redeemCode(h, thief, code, verifier, { resource: revision.resource }), 400, 'invalid_grant');
    });

    it('refuses a redirect_uri other than the authorization request’s, or a missing one', async () => {
      const h = createHarness();
      const client = await registerClient(h, { redirect_uris: [REDIRECT_URI, 'https://app.example.com/callback'] });
      for (const redirect_uri of ['https://app.example.com/callback', undefined]) {
        const { code, verifier } = await issueCode(h, revision, client);
        await expectOAuthError(await redeemCode(h, client, code, verifier, { resource: revision.resource, redirect_uri }), 400, 'invalid_grant');
      }
    });

    it('refuses a resource other than the code’s (invalid_target)', async () => {
      const h = createHarness();
      for (const resource of [OTHER_RESOURCE, 'https://not-served.example.com/mcp', 'not a uri']) {
        const { client, code, verifier } = await issueCode(h, revision);
        await expectOAuthError(await redeemCode(h, client, code, verifier, { resource }), 400, 'invalid_target');
      }
    });

    it('refuses an expired code', async () => {
      const h = createHarness();
      const { client, code, verifier } = await issueCode(h, revision);
      h.clock.now += 61;
      await expectOAuthError(await redeemCode(h, client, code, verifier, { resource: revision.resource }), 400, 'invalid_grant');
    });

    it('refuses an unknown code and a missing one', async () => {
      const h = createHarness();
      const client = await registerClient(h);
      const { verifier } = pkcePair();
      await expectOAuthError(await redeemCode(h, client, 'no-such-code', verifier, { resource: revision.resource }), 400, 'invalid_grant');
      await expectOAuthError(await redeemCode(h, client, '', verifier, { resource: revision.resource }), 400, 'invalid_request');
    });
  });
}

describe('authorization_code grant — redirect_uri left out of the authorization request', () => {
  it('still refuses a token request naming a different redirect_uri (RFC 6749 §4.1.3)', async () => {
    const h = createHarness();
    const client = await registerClient(h, { redirect_uris: [REDIRECT_URI] });
    const user = await addUser(h);
    const { verifier, challenge } = pkcePair();
    const ctx = { ...createServerContext(h.options), keys: h.server.keys, revocations: h.server.revocations };
    const issue = () =>
      createAuthorizationCode(
        ctx,
        {
          clientId: client.client_id,
          redirectUri: REDIRECT_URI,
          redirectUriProvided: false,
          state: null,
          scope: ['mcp:tools'],
          resource: ctx.config.defaultResource,
          codeChallenge: challenge,
          codeChallengeMethod: 'S256',
          prompt: [],
        },
        user.id,
        h.clock.now,
      );
    await expectOAuthError(await redeemCode(h, client, await issue(), verifier, { redirect_uri: 'http://127.0.0.1:33333/elsewhere' }), 400, 'invalid_grant');
    assert.equal((await redeemCode(h, client, await issue(), verifier, { redirect_uri: undefined })).status, 200);
  });
});

describe('token endpoint errors (RFC 6749 §5.2)', () => {
  const cases: [string, (h: Harness, client: TestClient) => Promise<Response>, string][] = [
    [
      'an unsupported grant type',
      (h, c) => postForm(h, '/token', { grant_type: 'password', username: 'a', password: 'b', client_id: c.client_id }),
      'unsupported_grant_type',
    ],
    ['a prototype key as grant type', (h, c) => postForm(h, '/token', { grant_type: '__proto__', client_id: c.client_id }), 'unsupported_grant_type'],
    ['no grant type', (h, c) => postForm(h, '/token', { client_id: c.client_id, code: 'x' }), 'invalid_request'],
    [
      'no code',
      (h, c) => postForm(h, '/token', { grant_type: 'authorization_code', client_id: c.client_id, code_verifier: pkcePair().verifier }),
      'invalid_request',
    ],
    [
      'a repeated parameter',
      (h, c) =>
        h.request('/token', {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `grant_type=authorization_code&code=a&code=b&client_id=${c.client_id}`,
        }),
      'invalid_request',
    ],
    [
      'a JSON body',
      (h, c) =>
        h.request('/token', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ grant_type: 'authorization_code', client_id: c.client_id }),
        }),
      'invalid_request',
    ],
    ['no content type', (h) => h.request('/token', { method: 'POST', body: new Uint8Array([1, 2, 3]) }), 'invalid_request'],
  ];
  for (const [label, send, error] of cases) {
    it(`answers ${label} with 400 ${error}, not cached`, async () => {
      const h = createHarness();
      const response = await send(h, await registerClient(h));
      assert.equal(response.headers.get('cache-control'), 'no-store');
      await expectOAuthError(response, 400, error);
    });
  }
});
