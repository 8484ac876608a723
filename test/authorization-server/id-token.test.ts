/**
 * ID tokens (OpenID Connect Core §3.1.3.3): a code granted with `openid` is redeemed for an ID
 * token beside the access token, which a relying party verifies with our JWKS as it would any
 * OpenID provider's (here with jose); the nonce of the authorization request comes back exactly.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { ID_TOKEN_LIFETIME_SECONDS } from '../../src/authorization-server/id-tokens.js';
import {
  authorizationRequest,
  authorizeUrl,
  ISSUER,
  createHarness,
  jwtClaims,
  obtainTokens,
  postForm,
  registerClient,
  REVISIONS,
  type Harness,
} from '../helpers/harness.js';

const REVISION_B = REVISIONS[1];

async function verifyAsRelyingParty(h: Harness, idToken: unknown, clientId: string) {
  const jwks = (await (await h.request('/jwks')).json()) as JSONWebKeySet;
  const { payload, protectedHeader } = await jwtVerify(String(idToken), createLocalJWKSet(jwks), {
    issuer: ISSUER,
    audience: clientId,
    currentDate: new Date(h.clock.now * 1000),
  });
  return { payload, protectedHeader };
}

describe('ID tokens', () => {
  it('come with the tokens of a code granted with openid, signed with our keys, with the nonce echoed', async () => {
    const h = createHarness();
    const signedInAt = h.clock.now;
    const { client, tokens } = await obtainTokens(h, REVISION_B, { scope: 'openid mcp:tools', nonce: 'n-0S6_WzA2Mj' });
    assert.equal(tokens.scope, 'mcp:tools openid');
    const { payload, protectedHeader } = await verifyAsRelyingParty(h, tokens.id_token, client.client_id);
    assert.equal(protectedHeader.alg, (await h.server.keys.current()).alg);
    const user = await h.store.getUser({ username: 'alice' });
    assert.equal(payload.sub, user!.id);
    assert.equal(payload.sub, jwtClaims(tokens.access_token).sub);
    assert.equal(payload.aud, client.client_id);
    assert.equal(payload.azp, client.client_id);
    assert.equal(payload.nonce, 'n-0S6_WzA2Mj');
    assert.equal(payload.auth_time, signedInAt);
    assert.equal(payload.iat, h.clock.now);
    assert.equal(payload.exp, h.clock.now + ID_TOKEN_LIFETIME_SECONDS);
  });

  it('carry no nonce when the authorization request had none', async () => {
    const h = createHarness();
    const { client, tokens } = await obtainTokens(h, REVISION_B, { scope: 'openid mcp:tools' });
    const { payload } = await verifyAsRelyingParty(h, tokens.id_token, client.client_id);
    assert.equal('nonce' in payload, false);
  });

  it('come again with a refresh granted openid, without the nonce (OpenID Connect Core §12.2)', async () => {
    const h = createHarness();
    const { client, tokens } = await obtainTokens(h, REVISION_B, { scope: 'openid mcp:tools', nonce: 'n-0S6_WzA2Mj' });
    h.clock.now += 60;
    const refreshed = await postForm(h, '/token', { grant_type: 'refresh_token', refresh_token: String(tokens.refresh_token), client_id: client.client_id });
    const body = (await refreshed.json()) as Record<string, unknown>;
    assert.equal(refreshed.status, 200, JSON.stringify(body));
    const { payload } = await verifyAsRelyingParty(h, body.id_token, client.client_id);
    assert.equal(payload.sub, jwtClaims(tokens.id_token).sub);
    assert.equal(payload.iat, h.clock.now);
    assert.equal(payload.auth_time, jwtClaims(tokens.id_token).auth_time);
    assert.equal('nonce' in payload, false);
    const narrowed = await postForm(h, '/token', {
      grant_type: 'refresh_token',
      refresh_token: String(body.refresh_token),
      client_id: client.client_id,
      scope: 'mcp:tools',
    });
    assert.equal(((await narrowed.json()) as Record<string, unknown>).id_token, undefined);
  });

  it('refuses a nonce longer than 2048 characters before anyone signs in, as it refuses such a state', async () => {
    const h = createHarness();
    const client = await registerClient(h);
    const { params } = authorizationRequest(client, REVISION_B, { scope: 'openid mcp:tools', nonce: 'n'.repeat(2049) });
    const response = await h.request(authorizeUrl(params));
    assert.equal(response.status, 303);
    const location = new URL(response.headers.get('location')!);
    assert.equal(location.searchParams.get('error'), 'invalid_request');
    assert.equal(location.searchParams.get('error_description'), 'nonce must be at most 2048 characters');
  });

  it('are not issued without openid', async () => {
    const h = createHarness();
    const { tokens } = await obtainTokens(h, REVISION_B, { scope: 'mcp:tools', nonce: 'n-1' });
    assert.equal(tokens.scope, 'mcp:tools');
    assert.equal(tokens.id_token, undefined);
  });
});
