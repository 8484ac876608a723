/**
 * RFC 9700 §4.14 (refresh token protection), §4.14.2 (rotation). Refresh tokens are rotated at
 * every use and bound to their client: a rotated token presented again (a thief's copy, or the
 * victim's after the thief used it) revokes the whole family — the newest refresh token, and its
 * access token at the co-hosted /mcp at once. A rotated token presented again soon, while the
 * token it was rotated to is unused, is taken for a retry of a lost answer and answered with a
 * new pair in that token's place: a thief who does so leaves the victim (or the victim leaves
 * the thief) holding a replaced token, whose next use revokes the family. A token presented by
 * another client is refused without being spent; of concurrent uses of one token one rotates it,
 * at most one more is taken for a retry, and the others revoke the family.
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
    const next = await refreshOk(h, client, stolen.refresh_token);
    const current = await refreshOk(h, client, next.refresh_token);
    await expectServed(await whoami(h, `Bearer ${current.access_token}`));

    const body = await expectOAuthError(await refresh(h, client, stolen.refresh_token), 400, 'invalid_grant');
    assert.match(body.error_description ?? '', /already used/);
    await expectOAuthError(await refresh(h, client, current.refresh_token), 400, 'invalid_grant');
    await expectRefused(await whoami(h, `Bearer ${current.access_token}`), 401, 'invalid_token', /revoked/);
  });

  it('a stolen token presented soon after the victim’s refresh passes for a retry, and the victim’s next refresh revokes the family', async () => {
    const h = await env.target();
    const { client, tokens } = await obtainTokens(h, revision);
    const stolen = tokens as Tokens;
    const victim = await refreshOk(h, client, stolen.refresh_token);
    h.clock.now += 30;
    const thief = await refreshOk(h, client, stolen.refresh_token);
    await expectServed(await whoami(h, `Bearer ${thief.access_token}`));

    // The victim's token was replaced by the thief's: presenting it is a second holder showing itself.
    const body = await expectOAuthError(await refresh(h, client, victim.refresh_token), 400, 'invalid_grant');
    assert.match(body.error_description ?? '', /already used; the grant is revoked/);
    await expectOAuthError(await refresh(h, client, thief.refresh_token), 400, 'invalid_grant');
    await expectRefused(await whoami(h, `Bearer ${thief.access_token}`), 401, 'invalid_token', /revoked/);
    await expectRefused(await whoami(h, `Bearer ${victim.access_token}`), 401, 'invalid_token', /revoked/);
  });

  it('a thief who uses the stolen token first is caught either way: the victim’s retry replaces the thief’s token, or revokes', async () => {
    for (const thiefRefreshesAgain of [false, true]) {
      const h = await env.target();
      const { client, tokens } = await obtainTokens(h, revision);
      const stolen = tokens as Tokens;
      let thief = await refreshOk(h, client, stolen.refresh_token);
      if (thiefRefreshesAgain) thief = await refreshOk(h, client, thief.refresh_token);
      const victim = await refresh(h, client, stolen.refresh_token);
      if (thiefRefreshesAgain) {
        // The token the thief was given is used: the victim's copy can only be a reuse.
        await expectOAuthError(victim, 400, 'invalid_grant');
      } else {
        assert.equal(victim.status, 200, 'the victim passes for a retry; the thief now holds a replaced token');
        const body = await expectOAuthError(await refresh(h, client, thief.refresh_token), 400, 'invalid_grant');
        assert.match(body.error_description ?? '', /already used; the grant is revoked/);
        await expectRefused(await whoami(h, `Bearer ${((await victim.json()) as Tokens).access_token}`), 401, 'invalid_token', /revoked/);
      }
      await expectRefused(await whoami(h, `Bearer ${thief.access_token}`), 401, 'invalid_token', /revoked/);
    }
  });

  it('a stolen token presented after the retry window revokes the family, its successor unused or not', async () => {
    const h = await env.target();
    const { client, tokens } = await obtainTokens(h, revision);
    const stolen = tokens as Tokens;
    const victim = await refreshOk(h, client, stolen.refresh_token);
    h.clock.now += 60;
    await expectOAuthError(await refresh(h, client, stolen.refresh_token), 400, 'invalid_grant');
    await expectOAuthError(await refresh(h, client, victim.refresh_token), 400, 'invalid_grant');
    await expectRefused(await whoami(h, `Bearer ${victim.access_token}`), 401, 'invalid_token', /revoked/);
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

  it('of eight concurrent uses of one refresh token one rotates it, at most one more passes for a retry, and the rest revoke the family', async () => {
    const h = await env.target();
    const { client, tokens } = await obtainTokens(h, revision);
    const responses = await Promise.all(Array.from({ length: 8 }, () => refresh(h, client, String(tokens.refresh_token))));
    const statuses = responses.map((response) => response.status);
    const answered = statuses.filter((status) => status === 200).length;
    assert.ok(answered === 1 || answered === 2, `statuses: ${statuses.join(' ')}`);
    assert.deepEqual(statuses.filter((status) => status !== 200), Array(8 - answered).fill(400));
    for (const response of responses.filter((r) => r.status === 200)) {
      const { access_token, refresh_token } = (await response.json()) as Tokens;
      await expectOAuthError(await refresh(h, client, refresh_token), 400, 'invalid_grant');
      await expectRefused(await whoami(h, `Bearer ${access_token}`), 401, 'invalid_token', /revoked/);
    }
  });
});
