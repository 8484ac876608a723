/**
 * An authorization server on a store with the core contract alone, as a store written for another
 * database may be: every flow works, and what needs a capability the store lacks is done without
 * it (no sweep, no record of client use, rate limits in this process's memory, no revocation list
 * and nothing for `Revocations` to follow, no account page or console, no device grant, no retry
 * of a refresh answered with its token, no word on whether the store has users).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAuthorizationServer } from '../../src/authorization-server/index.js';
import { resolveConfig } from '../../src/authorization-server/config.js';
import { createMemoryStore } from '../../src/store/index.js';
import { withoutCapabilities } from '../helpers/core-store.js';
import {
  addResourceServer,
  authorizeUrl,
  Browser,
  createHarness,
  introspect,
  ISSUER,
  jwtClaims,
  obtainTokens,
  parseForm,
  pkcePair,
  postAs,
  postForm,
  REDIRECT_URI,
  registerClient,
  RESOURCE,
  REVISIONS,
} from '../helpers/harness.js';

const DAY = 24 * 3600;

describe('an authorization server on a store with the core contract only', () => {
  it('serves a whole flow: registration, sign-in and consent, code, refresh, revocation and introspection', async () => {
    const h = createHarness({ serverStore: (store) => withoutCapabilities(store) });
    const { client, tokens } = await obtainTokens(h, REVISIONS[1]);
    const refreshed = await postForm(h, '/token', { grant_type: 'refresh_token', refresh_token: String(tokens.refresh_token), client_id: client.client_id });
    assert.equal(refreshed.status, 200, await refreshed.clone().text());
    const next = (await refreshed.json()) as Record<string, string>;
    const resourceServer = await addResourceServer(h);
    assert.equal((await introspect(h, next.access_token, resourceServer)).active, true);

    assert.equal((await postForm(h, '/revoke', { token: next.refresh_token, client_id: client.client_id })).status, 200);
    assert.equal((await introspect(h, next.access_token, resourceServer)).active, false);
    assert.equal(h.server.revocations.isRevoked({ claims: jwtClaims(next.access_token) }), true, 'known in this process at once');
    // Nothing sweeps unused clients on such a store: their use is not recorded.
    assert.equal((await h.store.getClient(client.client_id))?.lastUsedAt, null);
  });

  it('serves no account page and no console, and says so in `pages`', async () => {
    const h = createHarness({ serverStore: (store) => withoutCapabilities(store) });
    assert.deepEqual(h.server.pages, { account: null, admin: null });
    for (const path of ['/account', '/admin']) assert.equal((await new Browser(h).fetch(path)).status, 404, path);
    // With what each page needs: the account page alone, then both, at the URLs `pages` names.
    const administered = createHarness({ serverStore: (store) => withoutCapabilities(store, ['console']) });
    assert.deepEqual(administered.server.pages, { account: `${ISSUER}/account`, admin: null });
    // Both pages have a sign-out button: a store that cannot end a session serves neither.
    const noSignOut = createHarness({ serverStore: (store) => withoutCapabilities(store, ['signOut']) });
    assert.deepEqual(noSignOut.server.pages, { account: null, admin: null });
    for (const path of ['/account', '/admin']) assert.equal((await new Browser(noSignOut).fetch(path)).status, 404, path);
    const full = createHarness();
    assert.deepEqual(full.server.pages, { account: `${ISSUER}/account`, admin: `${ISSUER}/admin` });
    for (const path of ['/account', '/admin']) assert.equal((await new Browser(full).fetch(path)).status, 200, path);
  });

  it('sweeps nothing', async () => {
    const h = createHarness({ serverStore: (store) => withoutCapabilities(store) });
    await obtainTokens(h, REVISIONS[0]);
    h.clock.now += 30 * DAY;
    assert.equal(await h.server.sweep(), 0);
    assert.ok((await h.store.sweepExpired(h.clock.now)) > 0, 'there was something a store with upkeep would have swept');
  });

  it('serves no revocation list, and Revocations has nothing to follow', async () => {
    const h = createHarness({ serverStore: (store) => withoutCapabilities(store) });
    const resourceServer = await addResourceServer(h);
    const response = await postAs(h, '/revocations', resourceServer, {});
    assert.equal(response.status, 404);
    await h.server.revocations.start({ pollMs: 10 });
    await h.server.revocations.sync();
    await h.server.revocations.stop();

    // The same with a revocation feed: the list is served.
    const fed = createHarness({ serverStore: (store) => withoutCapabilities(store, ['upkeep', 'rateBuckets', 'administration']) });
    assert.equal((await postAs(fed, '/revocations', await addResourceServer(fed), {})).status, 200);
  });

  it('keeps rate limits in memory when the store, though shared by replicas, keeps no rate buckets; sharing them is refused', async () => {
    const shared = (store: ReturnType<typeof createMemoryStore>) => ({ ...withoutCapabilities(store, ['rateBuckets']), sharedByReplicas: true });
    const h = createHarness({ serverStore: shared, clientAddress: () => '192.0.2.1', rateLimits: { register: { burst: 1, perMinute: 1 } } });
    assert.equal(resolveConfig(h.options).rateLimits.shared, false);
    await registerClient(h);
    const refused = await h.request('/register', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' }),
    });
    assert.equal(refused.status, 429);

    const store = shared(createMemoryStore());
    assert.throws(
      () => createAuthorizationServer({ issuer: ISSUER, store, resources: [RESOURCE], rateLimits: { shared: true } }),
      /rateLimits\.shared needs a store that keeps rate-limit buckets/,
    );
  });

  it('a failed sign-in says nothing of whether the store has users (it is not administered here)', async () => {
    const h = createHarness({ serverStore: (store) => withoutCapabilities(store) });
    const client = await registerClient(h);
    const browser = new Browser(h);
    const { challenge } = pkcePair();
    const started = await browser.fetch(
      authorizeUrl({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT_URI,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: 's',
      }),
    );
    const page = parseForm(await (await browser.fetch(new URL(started.headers.get('location')!, ISSUER).pathname)).text());
    const failed = await browser.submit(page.action, { csrf: page.csrf, step: 'login', username: 'alice', password: 'wrong' });
    assert.equal(failed.status, 401);
    const logged = h.log.filter((event) => event.event === 'login_failed');
    assert.equal(logged.length, 1);
    assert.equal(logged[0]?.reason, undefined);
  });
});
