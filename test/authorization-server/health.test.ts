import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { StoreError, type Store } from '../../src/store/store.js';
import { createHarness } from '../helpers/harness.js';
import { SQLITE, type OpenedStore } from '../helpers/stores.js';

const opened: OpenedStore[] = [];
after(() => Promise.all(opened.map((store) => store.close())));

async function sqliteStore(): Promise<OpenedStore> {
  const store = await SQLITE.open();
  opened.push(store);
  return store;
}

/** The store as the server sees it, its database gone: every call throws as a real store's does, with its connection details in the message. */
function down(store: Store): Store {
  const failing = Object.create(store) as Store;
  failing.listSigningKeys = () => Promise.reject(new StoreError('unavailable', 'connect ECONNREFUSED db.internal:5432 user=secret-user'));
  return failing;
}

describe('health endpoints', () => {
  it('/healthz answers 200 {"status":"ok"}, never cached', async () => {
    const h = createHarness();
    const response = await h.request('/healthz');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.deepEqual(await response.json(), { status: 'ok' });
  });

  it('/readyz answers 200 once the store answers and a signing key is loaded (a real SQLite store)', async () => {
    const { store } = await sqliteStore();
    const h = createHarness({ store });
    const response = await h.request('/readyz');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.deepEqual(await response.json(), { status: 'ready', checks: { store: 'ok', signing_key: 'ok' } });
  });

  it("/readyz answers 503 naming the store when it is down, without the store's message", async () => {
    const { store } = await sqliteStore();
    const h = createHarness({ store, serverStore: down });
    const response = await h.request('/readyz');
    assert.equal(response.status, 503);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    const text = await response.text();
    assert.deepEqual(JSON.parse(text), { status: 'not_ready', checks: { store: 'unreachable', signing_key: 'unknown' } });
    assert.doesNotMatch(text, /secret-user|ECONNREFUSED|db\.internal/);
    // The process itself still serves: an orchestrator must not restart it for the database.
    assert.equal((await h.request('/healthz')).status, 200);
  });

  it('/readyz answers 503 when the signing key cannot be loaded', async () => {
    const h = createHarness({
      serverStore: (store) => {
        const noKeys = Object.create(store) as Store;
        let calls = 0;
        // The probe's own call answers; the key's load fails.
        noKeys.listSigningKeys = () => (calls++ === 0 ? store.listSigningKeys() : Promise.reject(new StoreError('unavailable', 'gone')));
        return noKeys;
      },
    });
    const response = await h.request('/readyz');
    assert.equal(response.status, 503);
    assert.deepEqual(await response.json(), { status: 'not_ready', checks: { store: 'ok', signing_key: 'not loaded' } });
  });

  it('/readyz adds what readinessReports tell, each under its name, without failing for them; one that fails reads unknown', async () => {
    const h = createHarness({
      readinessReports: {
        upstreams: async () => ({ '/github': 'ok', '/files': 'not_found' }),
        broken: () => Promise.reject(new Error('connect ECONNREFUSED with a detail')),
      },
    });
    const response = await h.request('/readyz');
    assert.equal(response.status, 200);
    const text = await response.text();
    assert.deepEqual(JSON.parse(text), {
      status: 'ready',
      checks: { store: 'ok', signing_key: 'ok' },
      upstreams: { '/github': 'ok', '/files': 'not_found' },
      broken: 'unknown',
    });
    assert.doesNotMatch(text, /ECONNREFUSED/);
    assert.throws(() => createHarness({ readinessReports: { checks: async () => ({}) } }), /readinessReports\.checks would replace \/readyz's own checks/);
  });

  it('probes are not rate-limited', async () => {
    const h = createHarness({
      clientAddress: () => '203.0.113.7',
      rateLimits: { token: { perMinute: 1, burst: 1 }, signIn: { perMinute: 1, burst: 1 }, register: { perMinute: 1, burst: 1 } },
    });
    for (let i = 0; i < 5; i++) {
      assert.equal((await h.request('/healthz')).status, 200);
      assert.equal((await h.request('/readyz')).status, 200);
    }
  });
});
