/**
 * The resolved configuration is plain data: what acts (the store, the clock, the log, the
 * client's address, the document cache, the upstream providers, the box that seals their tokens,
 * a policy's hook) is built beside it, in the server's services (context.ts). And the server keeps both to
 * itself: its public face is its endpoints, keys, revocations and metadata.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveConfig } from '../../src/authorization-server/config.js';
import { createServerContext } from '../../src/authorization-server/context.js';
import { createAuthorizationServer, type AuthorizationServerOptions } from '../../src/authorization-server/index.js';
import { generateSecretKey, parseSecretKeys, SecretBox } from '../../src/core/secret-box.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { ISSUER, RESOURCE } from '../helpers/harness.js';

const offline = (): never => {
  throw new Error('no network in this test');
};

/** Every option that is a service or a function, set. */
function everyOption(): AuthorizationServerOptions {
  return {
    issuer: ISSUER,
    store: createMemoryStore(),
    resources: [RESOURCE],
    now: () => 1_800_000_000,
    log: () => {},
    clientAddress: () => '10.0.0.1',
    trustProxy: ['10.0.0.0/8'],
    rateLimits: { token: false },
    clientIdMetadataDocuments: { allowHosts: ['apps.example'], request: offline },
    upstream: {
      providers: [{ kind: 'oidc', id: 'corp', name: 'Corp SSO', issuer: 'https://idp.example', clientId: 'context-auth', clientSecret: 'secret' }],
      secretBox: new SecretBox(parseSecretKeys(generateSecretKey(), 'test')),
      policy: { allowDomains: ['example.com'], allow: () => true },
      fetch: offline,
    },
  };
}

/** Where in `value` something is not plain data (a function, a class instance), as paths. */
function notData(value: unknown, path: string): string[] {
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) return [];
  if (Array.isArray(value)) return value.flatMap((item, i) => notData(item, `${path}[${i}]`));
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.entries(value).flatMap(([key, item]) => notData(item, `${path}.${key}`));
  }
  return [path];
}

describe('the resolved configuration', () => {
  it('is plain data, with every service and hook set', () => {
    const config = resolveConfig(everyOption());
    assert.deepEqual(notData(config, 'config'), []);
    assert.deepEqual(JSON.parse(JSON.stringify(config)), config);
    assert.deepEqual(config.upstream, { localUsers: true, sessionTtl: 24 * 3600, callbackUrl: `${ISSUER}/upstream/callback` });
    assert.deepEqual(config.clientIdMetadataDocuments, { enabled: true });
  });

  it("names every endpoint's URL under the issuer, the ones the metadata advertises", () => {
    const issuer = 'https://as.example/tenant';
    const options = { ...everyOption(), issuer };
    const { endpoints } = resolveConfig(options);
    assert.deepEqual(endpoints, {
      authorization: `${issuer}/authorize`,
      token: `${issuer}/token`,
      registration: `${issuer}/register`,
      revocation: `${issuer}/revoke`,
      introspection: `${issuer}/introspect`,
      jwks: `${issuer}/jwks`,
      deviceAuthorization: `${issuer}/device_authorization`,
      userinfo: `${issuer}/userinfo`,
    });
    const { metadata } = createAuthorizationServer(options);
    assert.equal(metadata.authorization_endpoint, endpoints.authorization);
    assert.equal(metadata.token_endpoint, endpoints.token);
    assert.equal(metadata.registration_endpoint, endpoints.registration);
    assert.equal(metadata.revocation_endpoint, endpoints.revocation);
    assert.equal(metadata.introspection_endpoint, endpoints.introspection);
    assert.equal(metadata.jwks_uri, endpoints.jwks);
    assert.equal(metadata.userinfo_endpoint, endpoints.userinfo);
  });

  it('has its services beside it in the context, as the options gave them', () => {
    const options = everyOption();
    const ctx = createServerContext(options);
    assert.equal(ctx.store, options.store);
    // The log option gets each event stamped (audit.ts).
    const logged: unknown[] = [];
    createServerContext({ ...options, log: (record) => logged.push(record) }).log({ event: 'login', user_id: 'u1' });
    assert.deepEqual(logged, [{ time: '2027-01-15T08:00:00.000Z', event: 'login', outcome: 'success', user_id: 'u1' }]);
    assert.equal(ctx.now(), 1_800_000_000);
    assert.equal(ctx.nowMs(), 1_800_000_000_000);
    assert.equal(ctx.upstream?.secretBox, options.upstream!.secretBox);
    assert.equal(ctx.upstream?.policy, options.upstream!.policy);
    assert.deepEqual(ctx.upstream?.providers.list(), [{ id: 'corp', name: 'Corp SSO' }]);
    assert.equal(ctx.upstream?.callbackUrl, ctx.config.upstream?.callbackUrl);
    assert.equal(ctx.clientDocuments.enabled, true);
  });

  it('is not part of the server a caller gets', () => {
    const server = createAuthorizationServer(everyOption());
    assert.equal('config' in server, false);
  });
});
