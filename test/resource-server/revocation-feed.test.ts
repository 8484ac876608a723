/**
 * Revocations reaching resource servers without a call per request: the in-memory set's time
 * bound; a remote context server polling the authorization server's revocation list
 * (`revocationFeed`), which refuses a revoked token from its next poll on, the verified-token
 * cache notwithstanding; and who may read the list.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GRANT_ID_CLAIM, RevocationSet } from '../../src/core/revocation-set.js';
import { revocationFeed } from '../../src/resource-server/revocation-feed.js';
import { jwtVerifier } from '../../src/resource-server/verify-jwt.js';
import { basic, jwtClaims, obtainTokens, postAs, postForm, registerServiceClient } from '../helpers/harness.js';
import { addIntrospectionClient, ask, bearer, createHarness, expectDenied, ISSUER, protect, REVISIONS, routeFetch } from './setup.js';

describe('RevocationSet', () => {
  it('refuses by grant_id or by jti, and only those', () => {
    const set = new RevocationSet(10);
    set.add({ kind: 'grant', id: 'g1', expiresAt: 1000 });
    set.add({ kind: 'token', id: 'j1', expiresAt: 1000 });
    assert.equal(set.isRevoked({ [GRANT_ID_CLAIM]: 'g1', jti: 'x' }), true);
    assert.equal(set.isRevoked({ [GRANT_ID_CLAIM]: 'g2', jti: 'j1' }), true);
    assert.equal(set.isRevoked({ [GRANT_ID_CLAIM]: 'g2', jti: 'j2' }), false);
    // A grant id is never matched as a jti, nor the other way round.
    assert.equal(set.isRevoked({ jti: 'g1' }), false);
    assert.equal(set.isRevoked({ [GRANT_ID_CLAIM]: 'j1' }), false);
  });

  it('keeps an entry until its tokens expired plus the tolerance, then prune drops it', () => {
    const set = new RevocationSet(10);
    set.add({ kind: 'grant', id: 'g1', expiresAt: 1000 });
    set.add({ kind: 'grant', id: 'g2', expiresAt: 2000 });
    assert.equal(set.prune(1009), 0);
    assert.equal(set.isRevoked({ [GRANT_ID_CLAIM]: 'g1' }), true);
    assert.equal(set.prune(1010), 1);
    assert.equal(set.isRevoked({ [GRANT_ID_CLAIM]: 'g1' }), false);
    assert.equal(set.size, 1);
  });

  it('a later, longer expiry for the same grant wins; a shorter one does not shorten it', () => {
    const set = new RevocationSet(0);
    set.add({ kind: 'grant', id: 'g', expiresAt: 1000 });
    set.add({ kind: 'grant', id: 'g', expiresAt: 1500 });
    set.add({ kind: 'grant', id: 'g', expiresAt: 1200 });
    set.prune(1499);
    assert.equal(set.isRevoked({ [GRANT_ID_CLAIM]: 'g' }), true);
    set.prune(1500);
    assert.equal(set.size, 0);
  });
});

describe('a remote context server polling the revocation list', () => {
  it('refuses a revoked grant from its next poll on, though the token is cached as verified', async () => {
    const h = createHarness();
    const reader = await addIntrospectionClient(h);
    const fetch = routeFetch([h.server]);
    const feed = revocationFeed({ url: `${ISSUER}/revocations`, ...reader, fetch, now: () => h.clock.now });
    await feed.sync();
    const protection = protect(h, jwtVerifier({ authorizationServers: [ISSUER], fetch, now: () => h.clock.now }), { revocations: feed });
    const { client, tokens } = await obtainTokens(h, REVISIONS[1]);
    const access = String(tokens.access_token);
    assert.equal(typeof jwtClaims(access)[GRANT_ID_CLAIM], 'string', 'the token names its grant');
    assert.equal((await ask(protection, bearer(access))).status, 200);

    // Logout: the refresh token revoked at the AS. Until the feed polls, the remote server cannot know.
    assert.equal((await postForm(h, '/revoke', { token: String(tokens.refresh_token), client_id: client.client_id })).status, 200);
    assert.equal((await ask(protection, bearer(access))).status, 200, 'the bound: accepted until the next poll');
    await feed.sync();
    await expectDenied(await ask(protection, bearer(access)), 401, 'invalid_token');
    assert.ok(feed.lastSuccessAt !== undefined);
  });

  it('learns of a single access token revoked by jti; the cursor brings only what is new', async () => {
    const h = createHarness();
    const reader = await addIntrospectionClient(h);
    const { client, tokens } = await obtainTokens(h, REVISIONS[1]);
    const list = async (cursor?: string) => {
      const response = await postForm(h, '/revocations', cursor === undefined ? {} : { cursor }, {
        authorization: basic(reader.clientId, reader.clientSecret),
      });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('cache-control'), 'no-store');
      return (await response.json()) as { revocations: Array<Record<string, unknown>>; cursor: string };
    };
    const empty = await list();
    assert.deepEqual(empty.revocations, []);
    await postForm(h, '/revoke', { token: String(tokens.access_token), token_type_hint: 'access_token', client_id: client.client_id });
    const first = await list(empty.cursor);
    assert.deepEqual(first.revocations, [{ jti: jwtClaims(tokens.access_token).jti, exp: jwtClaims(tokens.access_token).exp }]);
    h.clock.now += 20;
    const later = await obtainTokens(h, REVISIONS[1], { client });
    await postForm(h, '/revoke', { token: String(later.tokens.refresh_token), client_id: client.client_id });
    const grantEntry = { [GRANT_ID_CLAIM]: jwtClaims(later.tokens.access_token)[GRANT_ID_CLAIM], exp: jwtClaims(later.tokens.access_token).exp };
    // Near the cursor, entries come again (a late commit is not missed); the caller's set ignores repeats.
    assert.deepEqual((await list(first.cursor)).revocations, [...first.revocations, grantEntry]);
    // A cursor well past the first revocation (more than the 15 s overlap) brings only what is new.
    const second = await list(first.cursor);
    assert.deepEqual((await list(second.cursor)).revocations, [grantEntry]);
    await expectOAuthStatus(postForm(h, '/revocations', { cursor: 'x' }, { authorization: basic(reader.clientId, reader.clientSecret) }), 400);
  });

  it('is readable only by confidential clients an operator allowed to introspect', async () => {
    const h = createHarness();
    const ordinary = await registerServiceClient(h);
    await expectOAuthStatus(postAs(h, '/revocations', ordinary, {}), 403);
    await expectOAuthStatus(postForm(h, '/revocations', { client_id: 'nobody' }), 401);
    const reader = await addIntrospectionClient(h);
    await expectOAuthStatus(postForm(h, '/revocations', {}, { authorization: basic(reader.clientId, 'wrong') }), 401);
  });
});

async function expectOAuthStatus(pending: Promise<Response>, status: number): Promise<void> {
  const response = await pending;
  assert.equal(response.status, status, await response.text());
}
