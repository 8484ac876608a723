/**
 * RFC 9700 §4.14 (refresh token protection), §4.14.2 (rotation). Refresh tokens are rotated at
 * every use and bound to their client: a rotated token presented again (a thief's copy, or the
 * victim's after the thief used it) revokes the whole family — the newest refresh token, and its
 * access token at the co-hosted /mcp at once. A rotated token presented again soon, while the
 * token it was rotated to is unused, is taken for a retry of its rotation and answered with that
 * same token: a thief who does so holds the victim's token, and whichever of the two refreshes
 * second, after the other used the token or after the retry window, presents a spent token and
 * revokes the family. A token presented by another client is refused without being spent; of
 * concurrent uses of one token one rotates it and the others are its retries, all answered with
 * one token, whose holders are caught the same way.
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

  it('a stolen token presented soon after the victim’s refresh gets the victim’s token; whichever of the two refreshes it second, later, revokes the family', async () => {
    const h = await env.target();
    const { client, tokens } = await obtainTokens(h, revision);
    const stolen = tokens as Tokens;
    const victim = await refreshOk(h, client, stolen.refresh_token);
    h.clock.now += 30;
    const thief = await refreshOk(h, client, stolen.refresh_token);
    assert.equal(thief.refresh_token, victim.refresh_token, "a retry: the thief holds the victim's token");
    await expectServed(await whoami(h, `Bearer ${thief.access_token}`));

    // Two holders' next refreshes are apart: the first rotates the token, the later one is a reuse.
    h.clock.now += 100;
    const ahead = await refreshOk(h, client, victim.refresh_token);
    h.clock.now += 100;
    const body = await expectOAuthError(await refresh(h, client, thief.refresh_token), 400, 'invalid_grant');
    assert.match(body.error_description ?? '', /already used; the grant is revoked/);
    await expectOAuthError(await refresh(h, client, ahead.refresh_token), 400, 'invalid_grant');
    for (const access of [ahead, thief, victim].map((t) => t.access_token))
      await expectRefused(await whoami(h, `Bearer ${access}`), 401, 'invalid_token', /revoked/);
  });

  it('a thief who uses the stolen token first is caught either way: the victim’s retry gets the thief’s token, or revokes', async () => {
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
        assert.equal(victim.status, 200, 'the victim passes for a retry');
        const held = (await victim.json()) as Tokens;
        assert.equal(held.refresh_token, thief.refresh_token, "and holds the thief's token");
        // The thief refreshes it at its next turn; the victim's own refresh of it, later, is a reuse.
        h.clock.now += 100;
        thief = await refreshOk(h, client, thief.refresh_token);
        h.clock.now += 100;
        const body = await expectOAuthError(await refresh(h, client, held.refresh_token), 400, 'invalid_grant');
        assert.match(body.error_description ?? '', /already used; the grant is revoked/);
        await expectRefused(await whoami(h, `Bearer ${held.access_token}`), 401, 'invalid_token', /revoked/);
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

  it("another client presenting a refresh token is refused, and the token stays the owner's to use", async () => {
    const h = await env.target();
    const { client, tokens } = await obtainTokens(h, revision);
    const attacker = await registerClient(h, { client_name: 'Attacker' });
    const before = await env.counts();
    await expectOAuthError(await refresh(h, attacker, String(tokens.refresh_token)), 400, 'invalid_grant');
    assertUnchanged(before, await env.counts(), ['refresh_tokens', 'spent_refresh_tokens', 'revocations'], 'foreign client');
    await refreshOk(h, client, String(tokens.refresh_token));
  });

  it('of eight concurrent uses of one refresh token one rotates it and the rest are its retries, all answered with one token; once its successor is used, any holder’s copy revokes the family', async () => {
    const h = await env.target();
    const { client, tokens } = await obtainTokens(h, revision);
    const responses = await Promise.all(Array.from({ length: 8 }, () => refresh(h, client, String(tokens.refresh_token))));
    assert.deepEqual(
      responses.map((response) => response.status),
      Array(8).fill(200),
    );
    const answers = await Promise.all(responses.map(async (response) => (await response.json()) as Tokens));
    const shared = answers[0]!.refresh_token;
    assert.ok(
      answers.every((answer) => answer.refresh_token === shared),
      'one token for all eight',
    );
    // One holder refreshes twice: the shared token's successor is used.
    const next = await refreshOk(h, client, shared);
    const newest = await refreshOk(h, client, next.refresh_token);
    const body = await expectOAuthError(await refresh(h, client, shared), 400, 'invalid_grant');
    assert.match(body.error_description ?? '', /already used; the grant is revoked/);
    await expectOAuthError(await refresh(h, client, newest.refresh_token), 400, 'invalid_grant');
    for (const { access_token } of [...answers, newest]) await expectRefused(await whoami(h, `Bearer ${access_token}`), 401, 'invalid_token', /revoked/);
  });
});
