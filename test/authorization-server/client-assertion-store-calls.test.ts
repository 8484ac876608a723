/**
 * What private_key_jwt costs the store: a client_credentials grant authenticated with a client
 * assertion makes exactly the store calls of one authenticated with a secret, plus one
 * `useAssertionId` (the jti spent). Counted on the real stores, through a wrapper that records
 * every method the server calls; nothing is timed. A second store call added anywhere on the
 * assertion's path makes the two lists differ by more than that one call, and this test fail.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient as createClient } from '../../src/authorization-server/clients.js';
import { jwtSigner } from '../../src/core/jwt.js';
import type { FullStore } from '../../src/store/store.js';
import { basic, createHarness, ISSUER, postForm, RESOURCE, type Harness } from '../helpers/harness.js';
import { STORE_KINDS, type OpenedStore } from '../helpers/stores.js';

/** The store as the server sees it, every method call it makes recorded by name (calls inside the store are not). */
function counting(store: FullStore): { store: FullStore; calls: string[] } {
  const calls: string[] = [];
  const wrapped = new Proxy(store, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(String(name));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: wrapped, calls };
}

/** Calls in `more` that `fewer` does not have, by name and count: [name, how many more][]. */
function extraCalls(more: string[], fewer: string[]): [string, number][] {
  const tally = new Map<string, number>();
  for (const name of more) tally.set(name, (tally.get(name) ?? 0) + 1);
  for (const name of fewer) tally.set(name, (tally.get(name) ?? 0) - 1);
  return [...tally].filter(([, n]) => n !== 0).sort(([a], [b]) => a.localeCompare(b));
}

for (const kind of STORE_KINDS) {
  describe(`store calls of a client_credentials grant — ${kind.name}`, () => {
    let opened: OpenedStore;
    before(async () => void (opened = await kind.open()));
    after(async () => await opened.close());

    it('private_key_jwt costs exactly one store call more than a secret: useAssertionId', async () => {
      const { store, calls } = counting(opened.store);
      const h: Harness = createHarness({ store });
      const scopes = h.server.metadata.scopes_supported;

      const secretMetadata = validateClientMetadata({ token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'] }, scopes);
      const secretClient = await createClient(h.store, secretMetadata, h.clock.now, { registeredBy: 'admin' });
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const keyMetadata = validateClientMetadata(
        {
          token_endpoint_auth_method: 'private_key_jwt',
          grant_types: ['client_credentials'],
          jwks: { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', use: 'sig' }] },
        },
        scopes,
      );
      const keyClient = (await createClient(h.store, keyMetadata, h.clock.now, { registeredBy: 'admin' })).client.clientId;
      const sign = jwtSigner({ alg: 'ES256', kid: 'k1', typ: 'JWT' }, privateKey);

      const withSecret = (): Promise<Response> =>
        postForm(
          h,
          '/token',
          { grant_type: 'client_credentials', resource: RESOURCE },
          { authorization: basic(secretClient.client.clientId, secretClient.clientSecret!) },
        );
      const withAssertion = (): Promise<Response> => {
        const assertion = sign({ iss: keyClient, sub: keyClient, aud: ISSUER, jti: randomUUID(), iat: h.clock.now, exp: h.clock.now + 60 });
        return postForm(h, '/token', {
          grant_type: 'client_credentials',
          resource: RESOURCE,
          client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
          client_assertion: assertion,
        });
      };
      /** The store calls one grant makes; the grant must succeed. */
      const callsOf = async (grant: () => Promise<Response>): Promise<string[]> => {
        calls.length = 0;
        const response = await grant();
        assert.equal(response.status, 200, await response.text());
        return [...calls];
      };

      // A first grant per client, uncounted: it records the client's use of the day (one write a
      // day per client), which later grants do not repeat.
      await callsOf(withSecret);
      await callsOf(withAssertion);

      const secretCalls = await callsOf(withSecret);
      const assertionCalls = await callsOf(withAssertion);
      assert.ok(secretCalls.length > 0, 'the wrapper sees the server’s store calls');
      assert.deepEqual(
        extraCalls(assertionCalls, secretCalls),
        [['useAssertionId', 1]],
        `secret: ${secretCalls.join(', ')}; private_key_jwt: ${assertionCalls.join(', ')}`,
      );
    });
  });
}
