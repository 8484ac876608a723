/**
 * RFC 9700 §4.10 (misuse of stolen access tokens: audience restriction, §4.10.1) with RFC 8707
 * resource indicators. Each token names one context server in `aud`; the co-hosted /mcp refuses a
 * token meant for another server, and the authorization server refuses to issue a token for a
 * server it does not know, or for another server than the code or refresh token was granted for.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { SignJWT } from 'jose';
import {
  authorize,
  authorizationRequest,
  authorizeUrl,
  Browser,
  expectOAuthError,
  jwtClaims,
  obtainTokens,
  OTHER_RESOURCE,
  postAs,
  redeemCode,
  registerClient,
  RESOURCE,
  REVISIONS,
} from '../helpers/harness.js';
import { assertUnchanged, expectRefused, expectServed, ISSUED, onEveryStore, USER, whoami } from './setup.js';

const revision = REVISIONS[1];

onEveryStore('§4.10 audience confusion (RFC 8707)', (env) => {
  it('a token issued for another context server is refused at /mcp', async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const { location, verifier } = await authorize(h, { client, user: USER, resource: OTHER_RESOURCE });
    const response = await redeemCode(h, client, location.searchParams.get('code')!, verifier, { resource: OTHER_RESOURCE });
    assert.equal(response.status, 200);
    const tokens = (await response.json()) as Record<string, unknown>;
    assert.equal(jwtClaims(tokens.access_token).aud, OTHER_RESOURCE);
    await expectRefused(await whoami(h, `Bearer ${String(tokens.access_token)}`), 401, 'invalid_token', /not issued for this server/);
  });

  it('a token we signed for a foreign audience, or none, is refused at /mcp; ours is served', async () => {
    const h = await env.target();
    const { tokens } = await obtainTokens(h, revision);
    const claims = jwtClaims(tokens.access_token);
    const { kid, alg, key } = await h.server.keys.current();
    const sign = (aud: string | string[] | undefined) => new SignJWT({ ...claims, aud }).setProtectedHeader({ alg, kid, typ: 'at+jwt' }).sign(key);
    await expectServed(await whoami(h, `Bearer ${await sign(RESOURCE)}`));
    for (const aud of ['https://evil.example/mcp', `${RESOURCE}/../other`, [OTHER_RESOURCE], undefined]) {
      await expectRefused(await whoami(h, `Bearer ${await sign(aud)}`), 401, 'invalid_token', /not issued for this server/);
    }
  });

  it('an ID token, signed with the same keys, is no access token at /mcp; its nonce came back from the store', async () => {
    const h = await env.target();
    const { tokens } = await obtainTokens(h, revision, { scope: 'openid mcp:tools', nonce: 'n-0S6_WzA2Mj' });
    assert.equal(jwtClaims(tokens.id_token).nonce, 'n-0S6_WzA2Mj');
    await expectServed(await whoami(h, `Bearer ${String(tokens.access_token)}`));
    await expectRefused(await whoami(h, `Bearer ${String(tokens.id_token)}`), 401, 'invalid_token', /the access token is invalid/);
  });

  it('/authorize for a server this authorization server does not serve is sent back with invalid_target', async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const before = await env.counts();
    for (const resource of ['https://evil.example/mcp', 'http://127.0.0.1:9999/mcp2']) {
      const { params } = authorizationRequest(client, revision, { resource });
      const response = await new Browser(h).fetch(authorizeUrl(params));
      assert.equal(response.status, 303);
      assert.equal(new URL(response.headers.get('location')!).searchParams.get('error'), 'invalid_target');
    }
    assertUnchanged(before, await env.counts(), ['interactions', ...ISSUED], 'unknown resource');
  });

  it('a code granted for one server is not redeemed for another', async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const { location, verifier } = await authorize(h, { client, user: USER, resource: RESOURCE });
    const before = await env.counts();
    await expectOAuthError(await redeemCode(h, client, location.searchParams.get('code')!, verifier, { resource: OTHER_RESOURCE }), 400, 'invalid_target');
    assertUnchanged(before, await env.counts(), ['refresh_tokens'], 'code for another resource');
  });

  it('a refresh token granted for one server does not mint a token for another, and is not spent', async () => {
    const h = await env.target();
    const { client, tokens } = await obtainTokens(h, revision);
    const before = await env.counts();
    const response = await postAs(h, '/token', client, { grant_type: 'refresh_token', refresh_token: String(tokens.refresh_token), resource: OTHER_RESOURCE });
    await expectOAuthError(response, 400, 'invalid_target');
    assertUnchanged(before, await env.counts(), ['refresh_tokens', 'spent_refresh_tokens'], 'refresh for another resource');
    const again = await postAs(h, '/token', client, { grant_type: 'refresh_token', refresh_token: String(tokens.refresh_token) });
    assert.equal(again.status, 200);
  });

  it('naming two servers in one request is refused with invalid_target', async () => {
    const h = await env.target();
    const { client, tokens } = await obtainTokens(h, revision);
    const body = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: String(tokens.refresh_token), client_id: client.client_id });
    body.append('resource', RESOURCE);
    body.append('resource', OTHER_RESOURCE);
    const response = await h.request('/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
    await expectOAuthError(response, 400, 'invalid_target');
  });
});
