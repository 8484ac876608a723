/**
 * `offline_access` (OpenID Connect Core §11) asks for a refresh token. ChatGPT always asks for it,
 * and Codex and Gemini CLI do when the server lists it: the server lists it, accepts it wherever
 * a scope is asked for, and issues refresh tokens as it always does, without keeping the scope
 * in the grant or putting it on tokens.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEVICE_CODE_GRANT_TYPE } from '../../src/core/protocol.js';
import { addUser, createHarness, jwtClaims, obtainTokens, postForm, registerClient, REVISIONS } from '../helpers/harness.js';

const REVISION_B = REVISIONS[1];

describe('offline_access', () => {
  it('is listed in the authorization server metadata, and not kept among the configured scopes', async () => {
    const h = createHarness();
    const metadata = (await (await h.request('/.well-known/oauth-authorization-server')).json()) as { scopes_supported: string[] };
    assert.deepEqual(metadata.scopes_supported, ['mcp:tools', 'mcp:admin', 'offline_access', 'openid', 'profile', 'email']);
  });

  it('is accepted in an authorization request: the tokens carry the other scopes, and a refresh token comes', async () => {
    const h = createHarness();
    const { tokens } = await obtainTokens(h, REVISION_B, { scope: 'mcp:tools offline_access' });
    assert.equal(tokens.scope, 'mcp:tools');
    assert.equal(jwtClaims(tokens.access_token).scope, 'mcp:tools');
    assert.equal(typeof tokens.refresh_token, 'string');
  });

  it('is accepted on a refresh, as rmcp sends it', async () => {
    const h = createHarness();
    const { client, tokens } = await obtainTokens(h, REVISION_B, { scope: 'mcp:tools offline_access' });
    const refreshed = await postForm(h, '/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token as string,
      client_id: client.client_id,
      scope: 'mcp:tools offline_access',
    });
    const body = (await refreshed.json()) as Record<string, unknown>;
    assert.equal(refreshed.status, 200, JSON.stringify(body));
    assert.equal(body.scope, 'mcp:tools');
  });

  it('is accepted in a registration, as Gemini CLI asks for every listed scope', async () => {
    const h = createHarness();
    const client = await registerClient(h, { scope: 'mcp:tools mcp:admin offline_access' });
    assert.equal(client.scope, 'mcp:admin mcp:tools');
  });

  it('is accepted in a device authorization request', async () => {
    const h = createHarness();
    await addUser(h);
    const client = await registerClient(h, { grant_types: [DEVICE_CODE_GRANT_TYPE, 'refresh_token'], redirect_uris: [] });
    const started = await postForm(h, '/device_authorization', { client_id: client.client_id, scope: 'mcp:tools offline_access' });
    assert.equal(started.status, 200, await started.clone().text());
  });
});
