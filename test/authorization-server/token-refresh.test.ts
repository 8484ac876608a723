import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  addResourceServer,
  createHarness,
  expectOAuthError,
  introspect,
  jwtClaims,
  obtainTokens,
  obtainTokensAs,
  OTHER_RESOURCE,
  postAs,
  registerClient,
  RESOURCE,
  REVISIONS,
  type Harness,
  type TestClient,
} from '../helpers/harness.js';

type Tokens = Record<string, string>;

function refresh(h: Harness, client: TestClient, refreshToken: string, extra: Record<string, string | undefined> = {}): Promise<Response> {
  return postAs(h, '/token', client, { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra });
}

async function refreshOk(h: Harness, client: TestClient, refreshToken: string, extra: Record<string, string | undefined> = {}): Promise<Tokens> {
  const response = await refresh(h, client, refreshToken, extra);
  assert.equal(response.status, 200, await response.clone().text());
  assert.equal(response.headers.get('cache-control'), 'no-store');
  return (await response.json()) as Tokens;
}

for (const revision of REVISIONS) {
  describe(`refresh_token grant — ${revision.name}`, () => {
    for (const method of ['none', 'client_secret_basic', 'client_secret_post'] as const) {
      it(`rotates the refresh token at every use (${method} client)`, async () => {
        const h = createHarness();
        const client = await registerClient(h, { token_endpoint_auth_method: method });
        const first = await obtainTokensAs(h, revision, client);
        const second = await refreshOk(h, client, first.refresh_token!, { resource: revision.resource });
        assert.notEqual(second.refresh_token, first.refresh_token);
        assert.notEqual(second.access_token, first.access_token);
        const third = await refreshOk(h, client, second.refresh_token!);
        assert.equal(typeof third.refresh_token, 'string');
        assert.equal(jwtClaims(third.access_token).aud, RESOURCE);
      });
    }

    it('revokes the whole family when a rotated token is used again', async () => {
      const h = createHarness();
      const { client, tokens } = await obtainTokens(h, revision);
      const first = tokens as Tokens;
      const second = await refreshOk(h, client, first.refresh_token!);
      await expectOAuthError(await refresh(h, client, first.refresh_token!), 400, 'invalid_grant');
      await expectOAuthError(await refresh(h, client, second.refresh_token!), 400, 'invalid_grant');
      const rs = await addResourceServer(h);
      assert.equal((await introspect(h, second.access_token, rs)).active, false);
      assert.equal((await introspect(h, first.access_token, rs)).active, false);
    });

    it('within the configured grace window, refuses a rotated token without revoking the family', async () => {
      const h = createHarness({ refreshReuseGraceSeconds: 10 });
      const { client, tokens } = await obtainTokens(h, revision);
      const first = (tokens as Tokens).refresh_token!;
      const second = await refreshOk(h, client, first);
      h.clock.now += 9;
      await expectOAuthError(await refresh(h, client, first), 400, 'invalid_grant');
      const third = await refreshOk(h, client, second.refresh_token!);
      h.clock.now += 1;
      await expectOAuthError(await refresh(h, client, first), 400, 'invalid_grant');
      await expectOAuthError(await refresh(h, client, third.refresh_token!), 400, 'invalid_grant');
    });

    it('a rotated token presented again by another client is refused, and revokes nothing', async () => {
      const h = createHarness();
      const { client, tokens } = await obtainTokens(h, revision);
      const first = (tokens as Tokens).refresh_token!;
      const second = await refreshOk(h, client, first);
      const other = await registerClient(h);
      await expectOAuthError(await refresh(h, other, first), 400, 'invalid_grant');
      assert.equal(h.log.filter((event) => event.event === 'refresh_token_reused').length, 0);
      await refreshOk(h, client, second.refresh_token!);
    });

    it('two refreshes with the same token at once: one wins; the other revokes the family, or within the grace window is only refused', async () => {
      for (const grace of [0, 10]) {
        const h = createHarness({ refreshReuseGraceSeconds: grace });
        const { client, tokens } = await obtainTokens(h, revision);
        const token = (tokens as Tokens).refresh_token!;
        const responses = await Promise.all([refresh(h, client, token), refresh(h, client, token)]);
        assert.deepEqual(responses.map((r) => r.status).sort(), [200, 400]);
        const winner = (await responses.find((r) => r.status === 200)!.json()) as Tokens;
        const revoked = h.log.some((event) => event.event === 'refresh_token_reused');
        assert.equal(revoked, grace === 0, `grace ${grace}`);
        const next = await refresh(h, client, winner.refresh_token!);
        assert.equal(next.status, grace === 0 ? 400 : 200, `grace ${grace}: the winner's token`);
      }
    });

    it('lets the scope narrow for one access token but never widen', async () => {
      const h = createHarness();
      const { client, tokens } = await obtainTokens(h, revision, { scope: 'mcp:tools mcp:admin' });
      const narrowed = await refreshOk(h, client, (tokens as Tokens).refresh_token!, { scope: 'mcp:tools' });
      assert.equal(narrowed.scope, 'mcp:tools');
      assert.equal(jwtClaims(narrowed.access_token).scope, 'mcp:tools');
      // The rotated refresh token keeps the grant's full scope.
      assert.equal((await refreshOk(h, client, narrowed.refresh_token!)).scope, 'mcp:admin mcp:tools');

      const small = await obtainTokens(h, revision, { client, scope: 'mcp:tools' });
      const refreshToken = (small.tokens as Tokens).refresh_token!;
      await expectOAuthError(await refresh(h, client, refreshToken, { scope: 'mcp:tools mcp:admin' }), 400, 'invalid_scope');
      await expectOAuthError(await refresh(h, client, refreshToken, { scope: 'unknown' }), 400, 'invalid_scope');
      // A refused request does not use the token up.
      assert.equal((await refreshOk(h, client, refreshToken)).scope, 'mcp:tools');
    });

    it('refuses a resource other than the grant’s (invalid_target)', async () => {
      const h = createHarness();
      const { client, tokens } = await obtainTokens(h, revision);
      const refreshToken = (tokens as Tokens).refresh_token!;
      for (const resource of [OTHER_RESOURCE, 'https://not-served.example.com/mcp', 'mcp']) {
        await expectOAuthError(await refresh(h, client, refreshToken, { resource }), 400, 'invalid_target');
      }
      const same = await refreshOk(h, client, refreshToken, { resource: `${RESOURCE}/` });
      assert.equal(jwtClaims(same.access_token).aud, RESOURCE);
    });

    it('refuses an expired refresh token; each rotation starts its lifetime again', async () => {
      const h = createHarness({ refreshTokenTtl: 3600 });
      const { client, tokens } = await obtainTokens(h, revision);
      h.clock.now += 3000;
      const rotated = await refreshOk(h, client, (tokens as Tokens).refresh_token!);
      h.clock.now += 3000;
      const again = await refreshOk(h, client, rotated.refresh_token!);
      h.clock.now += 3600;
      await expectOAuthError(await refresh(h, client, again.refresh_token!), 400, 'invalid_grant');
    });

    it('refuses another client’s refresh token without revoking it', async () => {
      const h = createHarness();
      const { client, tokens } = await obtainTokens(h, revision);
      const other = await registerClient(h);
      await expectOAuthError(await refresh(h, other, (tokens as Tokens).refresh_token!), 400, 'invalid_grant');
      await refreshOk(h, client, (tokens as Tokens).refresh_token!);
    });

    it('refuses a missing refresh token (invalid_request) and an unknown one (invalid_grant)', async () => {
      const h = createHarness();
      const client = await registerClient(h);
      await expectOAuthError(await refresh(h, client, ''), 400, 'invalid_request');
      await expectOAuthError(await refresh(h, client, 'not-a-refresh-token'), 400, 'invalid_grant');
    });
  });
}
