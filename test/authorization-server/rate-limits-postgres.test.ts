/**
 * With PostgreSQL the limits hold across replicas: two authorization servers (two connection
 * pools, as two `serve` processes would have) on one database share each address's budget, so
 * spreading requests over the replicas buys an attacker nothing. Kept in memory instead, each
 * replica would grant its own budget, which is what this test would then see.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createAuthorizationServer,
  type AuthorizationServer,
  type AuthorizationServerOptions,
  type RateLimitOptions,
} from '../../src/authorization-server/index.js';
import { resolveConfig } from '../../src/authorization-server/config.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import type { Store } from '../../src/store/store.js';
import { ISSUER, REDIRECT_URI, RESOURCE } from '../helpers/harness.js';
import { startPostgres, type TestDatabase } from '../helpers/postgres.js';

const PEER = 'x-test-peer';

describe('rate limits shared by replicas on one PostgreSQL database', () => {
  let database: TestDatabase;
  const stores: Store[] = [];

  before(async () => {
    database = await startPostgres();
  });
  after(async () => {
    for (const store of stores) await store.close();
    await database?.stop();
  });

  async function replicas(rateLimits: RateLimitOptions, extra: Partial<AuthorizationServerOptions> = {}): Promise<AuthorizationServer[]> {
    const servers: AuthorizationServer[] = [];
    for (let i = 0; i < 2; i++) {
      const store = await openPostgresStore({ connectionString: database.connectionString });
      stores.push(store);
      servers.push(
        createAuthorizationServer({
          issuer: ISSUER,
          store,
          resources: [RESOURCE],
          clientAddress: (request) => request.headers.get(PEER) ?? undefined,
          rateLimits,
          ...extra,
        }),
      );
    }
    return servers;
  }

  const register = (server: AuthorizationServer, peer: string) =>
    server.handle(
      new Request(`${ISSUER}/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [PEER]: peer },
        body: JSON.stringify({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' }),
      }),
    );

  const token = (server: AuthorizationServer, peer: string) =>
    server.handle(
      new Request(`${ISSUER}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', [PEER]: peer },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'not-a-token', client_id: 'nobody' }),
      }),
    );

  it('registration: 20 requests spread over two replicas, concurrently, admit exactly the one burst of 6', async () => {
    const [a, b] = await replicas({ register: { burst: 6, perMinute: 1 } });
    assert.equal(resolveConfig({ issuer: ISSUER, store: stores.at(-1)!, resources: [RESOURCE] }).rateLimits.shared, true, 'shared by default on PostgreSQL');
    const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) => register(i % 2 ? a! : b!, '203.0.113.5').then((r) => r.status)));
    assert.equal(statuses.filter((s) => s === 201).length, 6);
    assert.equal(statuses.filter((s) => s === 429).length, 14);
    // Another address has its own budget, at either replica.
    assert.equal((await register(b!, '198.51.100.7')).status, 201);
  });

  it('the token endpoint: leases keep the combined count within the burst (and at most a lease per replica short of it)', async () => {
    const burst = 60;
    const [a, b] = await replicas({ token: { burst, perMinute: 1 } });
    let admitted = 0;
    for (let round = 0; round < 10; round++) {
      const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) => token(i % 2 ? a! : b!, '203.0.113.6').then((r) => r.status)));
      admitted += statuses.filter((s) => s !== 429).length;
    }
    assert.ok(admitted <= burst, `${admitted} admitted`);
    assert.ok(admitted >= burst - 2, `${admitted} admitted: one lease (2) may sit unspent at the other replica`);
  });

  it('new client ID metadata documents: the one budget for all addresses is one across replicas too', async () => {
    const [a, b] = await replicas(
      { clientDocumentTotal: { burst: 3, perMinute: 1 / 60 } },
      { clientIdMetadataDocuments: { allowLoopbackHttp: true, timeoutMs: 500 } },
    );
    // Nothing listens there: each admitted document fails (400), each refused one is a 429 before any fetch.
    const revoke = (server: AuthorizationServer, i: number) =>
      server.handle(
        new Request(`${ISSUER}/revoke`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', [PEER]: `203.0.113.${100 + i}` },
          body: new URLSearchParams({ token: 'anything', client_id: `http://127.0.0.1:9/total-${i}.json` }),
        }),
      );
    const statuses = await Promise.all(Array.from({ length: 10 }, (_, i) => revoke(i % 2 ? a! : b!, i).then((r) => r.status)));
    assert.deepEqual(
      statuses.filter((s) => s !== 429),
      [400, 400, 400],
    );
  });

  it("a gateway path's budget per person is one across replicas, and each person's and path's its own", async () => {
    const [a, b] = await replicas({ gateway: { burst: 6, perMinute: 1 } });
    const decisions = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a! : b!).gatewayRateLimit('/github', 'alice')));
    assert.equal(decisions.filter((decision) => decision.allowed).length, 6);
    assert.ok(decisions.every((decision) => decision.allowed || decision.retryAfter >= 1));
    assert.equal((await b!.gatewayRateLimit('/github', 'bob')).allowed, true);
    assert.equal((await a!.gatewayRateLimit('/files', 'alice')).allowed, true);
  });

  it('kept in memory instead (shared: false), each replica grants its own budget: what sharing prevents', async () => {
    const [a, b] = await replicas({ register: { burst: 6, perMinute: 1 }, shared: false });
    const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) => register(i % 2 ? a! : b!, '203.0.113.8').then((r) => r.status)));
    assert.equal(statuses.filter((s) => s === 201).length, 12);
  });
});
