/**
 * RFC 9700 §4.5 (authorization code injection). A code is bound to the client, the redirect URI
 * and the PKCE challenge of the request it answers, and is single use: a stolen code redeemed
 * without the verifier, by another client or at another redirect URI yields nothing, and a code
 * replayed after its redemption revokes what it issued — the refresh token at /token and the
 * access token at the co-hosted /mcp, on the very next request.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { authorize, expectOAuthError, pkcePair, redeemCode, registerClient, REVISIONS, type Harness, type TestClient } from '../helpers/harness.js';
import { assertUnchanged, expectRefused, expectServed, onEveryStore, USER, whoami } from './setup.js';

const revision = REVISIONS[1];

async function codeFor(h: Harness, client: TestClient): Promise<{ code: string; verifier: string }> {
  const { location, verifier } = await authorize(h, { client, user: USER, resource: revision.resource });
  const code = location.searchParams.get('code');
  assert.ok(code, String(location));
  return { code, verifier };
}

onEveryStore('§4.5 authorization code injection', (env) => {
  it("a stolen code redeemed with the attacker's own verifier is refused and issues nothing", async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const { code } = await codeFor(h, client);
    const before = await env.counts();
    await expectOAuthError(await redeemCode(h, client, code, pkcePair().verifier, { resource: revision.resource }), 400, 'invalid_grant');
    assertUnchanged(before, await env.counts(), ['refresh_tokens', 'grants'], 'wrong verifier');
  });

  it('a code issued to one client is refused to another, and issues nothing', async () => {
    const h = await env.target();
    const victim = await registerClient(h);
    const attacker = await registerClient(h, { client_name: 'Attacker' });
    const { code, verifier } = await codeFor(h, victim);
    const before = await env.counts();
    const body = await expectOAuthError(await redeemCode(h, attacker, code, verifier, { resource: revision.resource }), 400, 'invalid_grant');
    assert.match(body.error_description ?? '', /another client/);
    assertUnchanged(before, await env.counts(), ['refresh_tokens', 'grants'], 'other client');
  });

  it('a code redeemed at another redirect URI than it was issued for is refused', async () => {
    const h = await env.target();
    const client = await registerClient(h, { redirect_uris: ['http://127.0.0.1:33333/callback', 'http://127.0.0.1:33333/other'] });
    const { code, verifier } = await codeFor(h, client);
    const before = await env.counts();
    await expectOAuthError(
      await redeemCode(h, client, code, verifier, { resource: revision.resource, redirect_uri: 'http://127.0.0.1:33333/other' }),
      400,
      'invalid_grant',
    );
    assertUnchanged(before, await env.counts(), ['refresh_tokens'], 'other redirect URI');
  });

  it('a replayed code is refused and revokes the tokens of its first redemption, at /token and at /mcp at once', async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const { code, verifier } = await codeFor(h, client);
    const first = await redeemCode(h, client, code, verifier, { resource: revision.resource });
    assert.equal(first.status, 200);
    const tokens = (await first.json()) as { access_token: string; refresh_token: string };
    await expectServed(await whoami(h, `Bearer ${tokens.access_token}`));

    await expectOAuthError(await redeemCode(h, client, code, verifier, { resource: revision.resource }), 400, 'invalid_grant');
    await expectRefused(await whoami(h, `Bearer ${tokens.access_token}`), 401, 'invalid_token', /revoked/);
    const refresh = await h.request('/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id }),
    });
    await expectOAuthError(refresh, 400, 'invalid_grant');
  });
});
