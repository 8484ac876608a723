import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { hashSecret } from '../../src/core/secrets.js';
import type { FullStore, LegacyRefreshRetryStore, RefreshRequest, RefreshResult, Store } from '../../src/store/store.js';
import { decodeProtectedHeader } from 'jose';
import { resolveConfig } from '../../src/authorization-server/config.js';
import { rotateSigningKeys } from '../../src/authorization-server/keys.js';
import { successorKeys } from '../../src/authorization-server/tokens.js';
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

    it("the new refresh token is the HMAC-SHA256 of the one presented, under a MAC key of the signing key's", async () => {
      const h = createHarness();
      const { client, tokens } = await obtainTokens(h, revision);
      const first = (tokens as Tokens).refresh_token!;
      const [key] = await successorKeys(h.server.keys);
      const second = await refreshOk(h, client, first);
      assert.equal(second.refresh_token, createHmac('sha256', key!).update(first).digest('base64url'));
      assert.equal(second.refresh_token!.length, first.length, 'as long as a random one');
      assert.deepEqual(
        await successorKeys(h.server.keys),
        await h.server.keys.macKeys('context-auth refresh token successors'),
        "the signing keys' MAC keys under a label of its own",
      );
    });

    it('revokes the whole family when a rotated token is used again after the token it was rotated to', async () => {
      const h = createHarness();
      const { client, tokens } = await obtainTokens(h, revision);
      const first = tokens as Tokens;
      const second = await refreshOk(h, client, first.refresh_token!);
      const third = await refreshOk(h, client, second.refresh_token!);
      const body = await expectOAuthError(await refresh(h, client, first.refresh_token!, { resource: revision.resource }), 400, 'invalid_grant');
      assert.match(body.error_description ?? '', /already used; the grant is revoked/);
      await expectOAuthError(await refresh(h, client, third.refresh_token!), 400, 'invalid_grant');
      const rs = await addResourceServer(h);
      for (const access of [first, second, third].map((t) => t.access_token)) assert.equal((await introspect(h, access, rs)).active, false);
    });

    describe('a retry of a refresh (its answer lost, or two sessions of one client refreshing at once)', () => {
      it('within the retry window, while the token it was rotated to is unused: that same token again, with a new access token', async () => {
        const h = createHarness();
        const { client, tokens } = await obtainTokens(h, revision);
        const first = tokens as Tokens;
        const lost = await refreshOk(h, client, first.refresh_token!);
        h.clock.now += 59;
        const retried = await refreshOk(h, client, first.refresh_token!, { resource: revision.resource });
        assert.equal(retried.refresh_token, lost.refresh_token);
        assert.notEqual(retried.access_token, lost.access_token);
        assert.equal(jwtClaims(retried.access_token).aud, RESOURCE);
        assert.ok(await h.store.getRefreshToken(hashSecret(lost.refresh_token!)), 'the token stays live');
        assert.ok(h.log.some((event) => event.event === 'token_refreshed' && event.retry === true));
        assert.equal(h.log.filter((event) => event.event === 'refresh_token_reused').length, 0);
        const next = await refreshOk(h, client, retried.refresh_token!);
        const rs = await addResourceServer(h);
        for (const access of [lost, retried, next].map((t) => t.access_token)) assert.equal((await introspect(h, access, rs)).active, true);
      });

      it('every retry gets the same token, until it is used; then the spent token revokes the family', async () => {
        const h = createHarness();
        const { client, tokens } = await obtainTokens(h, revision);
        const first = (tokens as Tokens).refresh_token!;
        const lost = await refreshOk(h, client, first);
        for (let retry = 0; retry < 3; retry++) assert.equal((await refreshOk(h, client, first)).refresh_token, lost.refresh_token);
        const next = await refreshOk(h, client, lost.refresh_token!);
        const body = await expectOAuthError(await refresh(h, client, first), 400, 'invalid_grant');
        assert.match(body.error_description ?? '', /already used; the grant is revoked/);
        await expectOAuthError(await refresh(h, client, next.refresh_token!), 400, 'invalid_grant');
        const rs = await addResourceServer(h);
        assert.equal((await introspect(h, next.access_token!, rs)).active, false);
      });

      it('once the token it was rotated to was used, revokes the family (a thief’s copy, or the victim’s after the thief used it)', async () => {
        const h = createHarness();
        const { client, tokens } = await obtainTokens(h, revision);
        const first = (tokens as Tokens).refresh_token!;
        const second = await refreshOk(h, client, first);
        const third = await refreshOk(h, client, second.refresh_token!);
        await expectOAuthError(await refresh(h, client, first), 400, 'invalid_grant');
        await expectOAuthError(await refresh(h, client, third.refresh_token!), 400, 'invalid_grant');
      });

      it('after the retry window (60 s unless configured; 0 turns retries off), revokes the family', async () => {
        for (const [options, wait] of [
          [{}, 60],
          [{ refreshRetrySeconds: 5 }, 5],
          [{ refreshRetrySeconds: 0 }, 0],
        ] as const) {
          const h = createHarness(options);
          const { client, tokens } = await obtainTokens(h, revision);
          const first = (tokens as Tokens).refresh_token!;
          const second = await refreshOk(h, client, first);
          h.clock.now += wait;
          await expectOAuthError(await refresh(h, client, first), 400, 'invalid_grant');
          await expectOAuthError(await refresh(h, client, second.refresh_token!), 400, 'invalid_grant');
        }
      });

      it('two sessions refreshing one token at once, then each refreshing the token it got, in either order: no one is signed out', async () => {
        for (const order of [
          [0, 1],
          [1, 0],
        ] as const) {
          const h = createHarness();
          const { client, tokens } = await obtainTokens(h, revision);
          const first = (tokens as Tokens).refresh_token!;
          const sessions = await Promise.all([refreshOk(h, client, first), refreshOk(h, client, first)]);
          assert.equal(sessions[0].refresh_token, sessions[1].refresh_token, 'one token for both');
          h.clock.now += 30;
          const next = [];
          for (const session of order) next.push(await refreshOk(h, client, sessions[session].refresh_token!));
          assert.equal(next[0]!.refresh_token, next[1]!.refresh_token, "the second session's refresh is itself a retry");
          assert.equal(h.log.filter((event) => event.event === 'refresh_token_reused').length, 0);
          await refreshOk(h, client, next[1]!.refresh_token!);
        }
      });

      it('after a key rotation, the token derived under the previous key; once that key is retired, a reuse', async () => {
        for (const rotations of [1, 2]) {
          const h = createHarness();
          const { client, tokens } = await obtainTokens(h, revision);
          const first = (tokens as Tokens).refresh_token!;
          const lost = await refreshOk(h, client, first);
          for (let i = 0; i < rotations; i++) await rotateSigningKeys(h.store, h.clock.now);
          // Past the key cache and the new key's activation delay: the new key signs, and derives.
          h.clock.now += 15;
          const other = (await obtainTokens(h, revision, { client })).tokens as Tokens;
          assert.notEqual(decodeProtectedHeader(other.access_token!).kid, decodeProtectedHeader(lost.access_token!).kid, 'the new key signs');
          if (rotations === 1) {
            assert.equal((await refreshOk(h, client, first)).refresh_token, lost.refresh_token);
          } else {
            const body = await expectOAuthError(await refresh(h, client, first), 400, 'invalid_grant');
            assert.match(body.error_description ?? '', /already used; the grant is revoked/);
          }
        }
      });

      it('checks scope and resource before anything is spent', async () => {
        const h = createHarness();
        const { client, tokens } = await obtainTokens(h, revision, { scope: 'mcp:tools' });
        const first = (tokens as Tokens).refresh_token!;
        const lost = await refreshOk(h, client, first);
        await expectOAuthError(await refresh(h, client, first, { scope: 'mcp:tools mcp:admin' }), 400, 'invalid_scope');
        await expectOAuthError(await refresh(h, client, first, { resource: OTHER_RESOURCE }), 400, 'invalid_target');
        assert.ok(await h.store.getRefreshToken(hashSecret(lost.refresh_token!)), 'a refused retry spends nothing');
        const retried = await refreshOk(h, client, first, { scope: 'mcp:tools', resource: RESOURCE });
        assert.equal(retried.scope, 'mcp:tools');
        assert.equal(retried.refresh_token, lost.refresh_token);
      });

      it('another client presenting the token is refused, and the retry stays the owner’s', async () => {
        const h = createHarness();
        const { client, tokens } = await obtainTokens(h, revision);
        const first = (tokens as Tokens).refresh_token!;
        await refreshOk(h, client, first);
        await expectOAuthError(await refresh(h, await registerClient(h), first), 400, 'invalid_grant');
        assert.equal(h.log.filter((event) => event.event === 'refresh_token_reused').length, 0);
        await refreshOk(h, client, first);
      });
    });

    it('within the configured grace window, a rotated token that cannot be taken for a retry is refused without revoking the family', async () => {
      for (const refreshRetrySeconds of [60, 0]) {
        const h = createHarness({ refreshReuseGraceSeconds: 10, refreshRetrySeconds });
        const { client, tokens } = await obtainTokens(h, revision);
        const first = (tokens as Tokens).refresh_token!;
        const second = await refreshOk(h, client, first);
        h.clock.now += 9;
        if (refreshRetrySeconds > 0) assert.equal((await refreshOk(h, client, first)).refresh_token, second.refresh_token, 'a retry: its successor is unused');
        else await expectOAuthError(await refresh(h, client, first), 400, 'invalid_grant');
        const third = await refreshOk(h, client, second.refresh_token!);
        const body = await expectOAuthError(await refresh(h, client, first), 400, 'invalid_grant');
        assert.match(body.error_description ?? '', /just rotated; use the new one/);
        const fourth = await refreshOk(h, client, third.refresh_token!);
        h.clock.now += 1;
        await expectOAuthError(await refresh(h, client, first), 400, 'invalid_grant');
        await expectOAuthError(await refresh(h, client, fourth.refresh_token!), 400, 'invalid_grant');
      }
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

    it('two refreshes with the same token at once: both answered with the same token, with or without a grace window', async () => {
      for (const grace of [0, 10]) {
        const h = createHarness({ refreshReuseGraceSeconds: grace });
        const { client, tokens } = await obtainTokens(h, revision);
        const token = (tokens as Tokens).refresh_token!;
        const responses = await Promise.all([refresh(h, client, token), refresh(h, client, token)]);
        assert.deepEqual(
          responses.map((r) => r.status),
          [200, 200],
          `grace ${grace}`,
        );
        assert.equal(
          h.log.some((event) => event.event === 'refresh_token_reused'),
          false,
          `grace ${grace}`,
        );
        const answered = await Promise.all(responses.map(async (r) => ((await r.json()) as Tokens).refresh_token!));
        assert.equal(answered[0], answered[1], `grace ${grace}`);
        assert.ok(await h.store.getRefreshToken(hashSecret(answered[0]!)), `grace ${grace}: live`);
        await refreshOk(h, client, answered[0]!);
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

describe('refreshRetrySeconds', () => {
  it('is a whole number of seconds from 0 to 300', () => {
    for (const refreshRetrySeconds of [-1, 1.5, 301]) {
      assert.throws(() => createHarness({ refreshRetrySeconds }), /refreshRetrySeconds must be a whole number from 0 to 300/);
    }
    for (const refreshRetrySeconds of [0, 300])
      assert.equal(resolveConfig(createHarness({ refreshRetrySeconds }).options).refreshRetrySeconds, refreshRetrySeconds);
    assert.equal(resolveConfig(createHarness().options).refreshRetrySeconds, 60);
  });
});

describe('a store written for the contract before repeatRefresh', () => {
  /**
   * Such a store's retryRefresh, as it was specified: the unused successor of a token spent within
   * the window is replaced by the request's new token, once. Built on the real store (the
   * successor's hash is the one the test was answered with).
   */
  function olderStore(store: FullStore, successorHash: () => string, withRetry: boolean): Store {
    const { repeatRefresh: _left, ...older } = store;
    if (!withRetry) return older;
    const retryRefresh = async (request: RefreshRequest, spentAfter: number): Promise<RefreshResult> => {
      const spent = await store.findSpentRefreshToken(request.tokenHash);
      if (!spent) return { status: 'missing' };
      if (spent.spentAt <= spentAfter || !spent.successorUnused) return { status: 'replayed', record: spent };
      return store.refreshGrant({ ...request, tokenHash: successorHash() });
    };
    const legacy: Store & LegacyRefreshRetryStore = { ...older, retryRefresh };
    return legacy;
  }

  it('keeps working: with retryRefresh, a retry gets a new token in the unused one’s place, as that contract says', async () => {
    const answered: Tokens[] = [];
    const h = createHarness({ serverStore: (store) => olderStore(store, () => hashSecret(answered[0]!.refresh_token!), true) });
    const { client, tokens } = await obtainTokens(h, REVISIONS[1]);
    const first = (tokens as Tokens).refresh_token!;
    const lost = await refreshOk(h, client, first);
    answered.push(lost);
    const retried = await refreshOk(h, client, first);
    assert.notEqual(retried.refresh_token, lost.refresh_token);
    assert.equal(await h.store.getRefreshToken(hashSecret(lost.refresh_token!)), undefined, 'the lost token was replaced');
    await refreshOk(h, client, retried.refresh_token!);
  });

  it('keeps working without either: a second use is a reuse', async () => {
    const h = createHarness({ serverStore: (store) => olderStore(store, () => '', false) });
    const { client, tokens } = await obtainTokens(h, REVISIONS[1]);
    const first = (tokens as Tokens).refresh_token!;
    const next = await refreshOk(h, client, first);
    const body = await expectOAuthError(await refresh(h, client, first), 400, 'invalid_grant');
    assert.match(body.error_description ?? '', /already used; the grant is revoked/);
    await expectOAuthError(await refresh(h, client, next.refresh_token!), 400, 'invalid_grant');
  });
});
