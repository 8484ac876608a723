import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  basic,
  createHarness,
  expectOAuthError,
  jwtClaims,
  obtainTokensAs,
  postForm,
  registerClient,
  registerServiceClient,
  REVISIONS,
  type Harness,
  type TestClient,
} from '../helpers/harness.js';

const CC = { grant_type: 'client_credentials' };
const b64 = (text: string): string => Buffer.from(text).toString('base64');

for (const revision of REVISIONS) {
  describe(`client authentication at the token endpoint — ${revision.name}`, () => {
    for (const method of ['none', 'client_secret_basic', 'client_secret_post'] as const) {
      it(`redeems a code for a ${method} client`, async () => {
        const h = createHarness();
        const client = await registerClient(h, { token_endpoint_auth_method: method });
        const tokens = await obtainTokensAs(h, revision, client);
        assert.equal(jwtClaims(tokens.access_token).client_id, client.client_id);
      });
    }
  });
}

describe('client authentication failures', () => {
  interface Clients {
    basicClient: TestClient;
    postClient: TestClient;
    publicClient: TestClient;
  }
  async function setup(): Promise<{ h: Harness } & Clients> {
    const h = createHarness();
    return {
      h,
      basicClient: await registerServiceClient(h, 'client_secret_basic'),
      postClient: await registerServiceClient(h, 'client_secret_post'),
      publicClient: await registerClient(h),
    };
  }
  const viaBasic = (h: Harness, id: string, secret: string, extra: Record<string, string> = {}) =>
    postForm(h, '/token', { ...CC, ...extra }, { authorization: basic(id, secret) });
  const viaPost = (h: Harness, id: string, secret: string | undefined) => postForm(h, '/token', { ...CC, client_id: id, client_secret: secret });

  // [label, request, expected status, error, Basic challenge expected]
  const cases: [string, (h: Harness, c: Clients) => Promise<Response>, number, string, boolean][] = [
    ['a wrong secret with Basic', (h, c) => viaBasic(h, c.basicClient.client_id, 'wrong-secret'), 401, 'invalid_client', true],
    [
      'the secret with one character more, with Basic',
      (h, c) => viaBasic(h, c.basicClient.client_id, `${c.basicClient.client_secret}x`),
      401,
      'invalid_client',
      true,
    ],
    [
      'a prefix of the secret, with Basic',
      (h, c) => viaBasic(h, c.basicClient.client_id, c.basicClient.client_secret!.slice(0, 20)),
      401,
      'invalid_client',
      true,
    ],
    ['an unknown client with Basic', (h) => viaBasic(h, 'no-such-client', 'secret'), 401, 'invalid_client', true],
    ['a wrong secret in the form', (h, c) => viaPost(h, c.postClient.client_id, 'wrong-secret'), 401, 'invalid_client', false],
    ['an unknown client in the form', (h) => viaPost(h, 'no-such-client', 'secret'), 401, 'invalid_client', false],
    ['a Basic client using the form', (h, c) => viaPost(h, c.basicClient.client_id, c.basicClient.client_secret), 401, 'invalid_client', false],
    ['a post client using Basic', (h, c) => viaBasic(h, c.postClient.client_id, c.postClient.client_secret!), 401, 'invalid_client', true],
    ['a confidential client sending only its id', (h, c) => viaPost(h, c.basicClient.client_id, undefined), 401, 'invalid_client', false],
    ['a confidential client sending an empty secret', (h, c) => viaPost(h, c.postClient.client_id, ''), 401, 'invalid_client', false],
    ['a public client sending a secret', (h, c) => viaPost(h, c.publicClient.client_id, 'made-up'), 401, 'invalid_client', false],
    ['a public client using Basic with an empty secret', (h, c) => viaBasic(h, c.publicClient.client_id, ''), 401, 'invalid_client', true],
    ['no client at all', (h) => postForm(h, '/token', CC), 401, 'invalid_client', false],
    [
      'Basic and client_secret at once',
      (h, c) => viaBasic(h, c.basicClient.client_id, c.basicClient.client_secret!, { client_secret: c.basicClient.client_secret! }),
      400,
      'invalid_request',
      false,
    ],
    [
      'a client_id that differs from the Basic one',
      (h, c) => viaBasic(h, c.basicClient.client_id, c.basicClient.client_secret!, { client_id: c.postClient.client_id }),
      400,
      'invalid_request',
      false,
    ],
    ['an empty Basic header', (h) => postForm(h, '/token', CC, { authorization: 'Basic ' }), 401, 'invalid_client', true],
    ['Basic without a colon', (h, c) => postForm(h, '/token', CC, { authorization: `Basic ${b64(c.basicClient.client_id)}` }), 401, 'invalid_client', true],
    ['Basic that is not base64', (h) => postForm(h, '/token', CC, { authorization: 'Basic !!!***' }), 401, 'invalid_client', true],
    ['Basic with broken percent-encoding', (h) => postForm(h, '/token', CC, { authorization: `Basic ${b64('%zz:%zz')}` }), 401, 'invalid_client', true],
    ['a Bearer header', (h) => postForm(h, '/token', CC, { authorization: 'Bearer some-token' }), 401, 'invalid_client', false],
  ];
  for (const [label, send, status, error, challenge] of cases) {
    it(`answers ${label} with ${status} ${error}`, async () => {
      const { h, ...clients } = await setup();
      const response = await send(h, clients);
      assert.equal(response.headers.get('cache-control'), 'no-store');
      if (challenge) assert.match(response.headers.get('www-authenticate') ?? '', /^Basic /);
      await expectOAuthError(response, status, error);
    });
  }

  it('accepts Basic together with a matching client_id in the form', async () => {
    const { h, basicClient } = await setup();
    const response = await viaBasic(h, basicClient.client_id, basicClient.client_secret!, { client_id: basicClient.client_id });
    assert.equal(response.status, 200);
  });

  for (const path of ['/token', '/revoke', '/introspect']) {
    it(`refuses a wrong Basic secret at ${path} with 401 and a Basic challenge`, async () => {
      const { h, basicClient } = await setup();
      const response = await postForm(h, path, { ...CC, token: 'x' }, { authorization: basic(basicClient.client_id, 'wrong') });
      assert.match(response.headers.get('www-authenticate') ?? '', /^Basic /);
      await expectOAuthError(response, 401, 'invalid_client');
    });
  }
});
