/**
 * RFC 9700 §4.14 (refresh token protection), §4.14.2 (rotation). Refresh tokens are rotated at
 * every use and bound to their client: a rotated token presented again (a thief's copy, or the
 * victim's after the thief used it) revokes the whole family — the newest refresh token, and its
 * access token at the co-hosted /mcp at once; a token presented by another client is refused
 * without being spent; of concurrent uses of one token exactly one succeeds.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { expectOAuthError, obtainTokens, postAs, registerClient, REVISIONS, type Harness, type TestClient } from '../helpers/harness.js';
import { assertUnchanged, expectRefused, expectServed, onEveryStore, whoami } from './setup.js';

const revision = REVISIONS[1];
type Tokens = { access_token: string; refresh_token: string };

function refresh(h: Harness, client: TestClient, refreshToken: string): Promise<Response> {
  return postAs(h, '/token', client, { grant_type: 'refresh_token', refresh_token: refreshToken });
}

async function refreshOk(h: Harness, client: TestClient, refreshToken: string): Promise<Tokens> {
  const response = await refresh(h, client, refreshToken);
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()) as Tokens;
}

onEveryStore('§4.14 refresh token replay', (env) => {
  it('a rotated refresh token used again revokes the family: the newest refresh token and its access token at /mcp', async () => {
    const h = await env.target();
    const { client, tokens } = await obtainTokens(h, revision);
    const stolen = tokens as Tokens;
    const current = await refreshOk(h, client, stolen.refresh_token);
    await expectServed(await whoami(h, `Bearer ${current.access_token}`));

    const body = await expectOAuthError(await refresh(h, client, stolen.refresh_token), 400, 'invalid_grant');
    assert.match(body.error_description ?? '', /already used/);
    await expectOAuthError(await refresh(h, client, current.refresh_token), 400, 'invalid_grant');
    await expectRefused(await whoami(h, `Bearer ${current.access_token}`), 401, 'invalid_token', /revoked/);
  });

  it('another client presenting a refresh token is refused, and the token stays the owner\'s to use', async () => {
    const h = await env.target();
    const { client, tokens } = await obtainTokens(h, revision);
    const attacker = await registerClient(h, { client_name: 'Attacker' });
    const before = await env.counts();
    await expectOAuthError(await refresh(h, attacker, String(tokens.refresh_token)), 400, 'invalid_grant');
    assertUnchanged(before, await env.counts(), ['refresh_tokens', 'spent_refresh_tokens', 'revocations'], 'foreign client');
    await refreshOk(h, client, String(tokens.refresh_token));
  });

  it('of eight concurrent uses of one refresh token exactly one succeeds', async () => {
    const h = await env.target();
    const { client, tokens } = await obtainTokens(h, revision);
    const responses = await Promise.all(Array.from({ length: 8 }, () => refresh(h, client, String(tokens.refresh_token))));
    const statuses = responses.map((response) => response.status);
    assert.equal(statuses.filter((status) => status === 200).length, 1, `statuses: ${statuses.join(' ')}`);
    assert.deepEqual(statuses.filter((status) => status !== 200).sort(), Array(7).fill(400));
  });
});
