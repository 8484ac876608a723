/**
 * RFC 9700 §4.8 (PKCE downgrade). PKCE is required and only S256 is accepted: a request without a
 * challenge, with `plain`, or without a method (which RFC 7636 would read as plain) is refused
 * before anyone signs in; and a code whose request carried a challenge is never redeemed without
 * the matching verifier — in particular not without any verifier, which is the downgrade itself.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { it } from 'node:test';
import { authorize, authorizationRequest, authorizeUrl, Browser, expectOAuthError, redeemCode, registerClient, REVISIONS } from '../helpers/harness.js';
import { assertUnchanged, onEveryStore, USER } from './setup.js';

const revision = REVISIONS[1];

const REFUSED_REQUESTS: { name: string; overrides: Record<string, string | undefined> }[] = [
  { name: 'no code_challenge', overrides: { code_challenge: undefined, code_challenge_method: undefined } },
  { name: 'code_challenge_method=plain', overrides: { code_challenge_method: 'plain', code_challenge: 'a'.repeat(43) } },
  { name: 'a challenge without a method (plain by RFC 7636 default)', overrides: { code_challenge_method: undefined } },
  { name: 'a challenge that is no S256 digest', overrides: { code_challenge: 'short' } },
];

onEveryStore('§4.8 PKCE downgrade', (env) => {
  for (const { name, overrides } of REFUSED_REQUESTS) {
    it(`an authorization request with ${name} is sent back with invalid_request, nothing started`, async () => {
      const h = await env.target();
      const client = await registerClient(h);
      const before = await env.counts();
      const { params } = authorizationRequest(client, revision, overrides);
      const response = await new Browser(h).fetch(authorizeUrl(params));
      assert.equal(response.status, 303);
      const location = new URL(response.headers.get('location')!);
      assert.equal(location.origin + location.pathname, 'http://127.0.0.1:33333/callback');
      assert.equal(location.searchParams.get('error'), 'invalid_request');
      assert.equal(location.searchParams.get('code'), null);
      assertUnchanged(before, await env.counts(), ['interactions', 'authorization_codes', 'grants'], name);
    });
  }

  it('a code is not redeemed without its code_verifier (the downgrade), and issues nothing', async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const { location } = await authorize(h, { client, user: USER, resource: revision.resource });
    const code = location.searchParams.get('code')!;
    const before = await env.counts();
    const response = await h.request('/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:33333/callback', client_id: client.client_id }),
    });
    const body = await expectOAuthError(response, 400, 'invalid_request');
    assert.match(body.error_description ?? '', /code_verifier/);
    assertUnchanged(before, await env.counts(), ['refresh_tokens'], 'no verifier');
  });

  it('the challenge itself as the verifier (plain) does not redeem an S256 code', async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const { location, verifier } = await authorize(h, { client, user: USER, resource: revision.resource });
    const code = location.searchParams.get('code')!;
    const before = await env.counts();
    // The code's own challenge: 43 characters of the verifier's alphabet, so it passes the syntax check, not the hash.
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    await expectOAuthError(await redeemCode(h, client, code, challenge, { resource: revision.resource }), 400, 'invalid_grant');
    assertUnchanged(before, await env.counts(), ['refresh_tokens'], 'plain verifier');
  });
});
