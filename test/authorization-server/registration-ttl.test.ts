/**
 * Registration hygiene: dynamically registered clients nobody uses are deleted by the sweep after
 * the registration TTL (30 days by default), counted from their last visit to /authorize or /token.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createHarness, obtainTokens, postForm, registerClient, REVISIONS } from '../helpers/harness.js';

const DAY = 24 * 3600;

describe('dynamically registered clients that are never used expire', () => {
  it('swept after 30 days without use; a client in use stays; 0 keeps them all', async () => {
    const h = createHarness();
    const idle = await registerClient(h);
    const { client: busy, tokens } = await obtainTokens(h, REVISIONS[1]);
    h.clock.now += 10 * DAY;
    const refreshed = await postForm(h, '/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string, client_id: busy.client_id });
    assert.equal(refreshed.status, 200);
    h.clock.now += 21 * DAY;
    await h.server.sweep();
    assert.equal(await h.store.getClient(idle.client_id), undefined, 'never used in 31 days: gone');
    assert.ok(await h.store.getClient(busy.client_id), 'used 21 days ago: kept');

    const keep = createHarness({ registrationTtl: 0 });
    const old = await registerClient(keep);
    keep.clock.now += 365 * DAY;
    await keep.server.sweep();
    assert.ok(await keep.store.getClient(old.client_id));
  });

  it('the TTL is configurable', async () => {
    const h = createHarness({ registrationTtl: 3600 });
    const client = await registerClient(h);
    h.clock.now += 3601;
    await h.server.sweep();
    assert.equal(await h.store.getClient(client.client_id), undefined);
  });
});
