/**
 * RFC 9728 protected resource metadata (spec, Revision B discovery): `resource` is the canonical
 * URI, `authorization_servers` lists one or more, bearer in the header only; served at the
 * path-inserted well-known URL and at the root one, through Hono and through node:http.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { describe, it } from 'node:test';
import { Hono } from 'hono';
import { wellKnownUrl } from '../../src/core/uri.js';
import { findBearerChallenge } from '../../src/core/www-authenticate.js';
import { honoBearerAuth, honoProtectedResourceMetadata, type AuthVariables } from '../../src/resource-server/adapters/hono.js';
import { nodeProtectedResourceMetadata } from '../../src/resource-server/adapters/node.js';
import { protectedResource } from '../../src/resource-server/guard.js';
import { DPOP_SIGNING_ALGORITHMS } from '../../src/core/dpop.js';
import { protectedResourceMetadata, protectedResourceMetadataUrl } from '../../src/resource-server/metadata.js';
import { accessToken, bearer, close, createHarness, ISSUER, listen, METADATA_URL, OTHER_ISSUER, REVISIONS, RESOURCE, VERIFIERS } from './setup.js';

const SCOPES = ['mcp:tools', 'mcp:admin'];

function protection(resource = RESOURCE, authorizationServers = [ISSUER]) {
  return protectedResource({ resource, authorizationServers, scopesSupported: SCOPES, verifier: { verify: () => Promise.reject(new Error('unused')) } });
}

describe('protected resource metadata document', () => {
  it('has resource, authorization_servers, scopes_supported, bearer_methods_supported ["header"] and the DPoP proof algorithms', () => {
    const { metadata } = protection();
    assert.deepEqual(metadata, {
      resource: RESOURCE,
      authorization_servers: [ISSUER],
      scopes_supported: SCOPES,
      bearer_methods_supported: ['header'],
      dpop_signing_alg_values_supported: DPOP_SIGNING_ALGORITHMS,
    });
  });

  it('names no DPoP algorithms when DPoP is turned off', () => {
    const { metadata } = protectedResource({
      resource: RESOURCE,
      authorizationServers: [ISSUER],
      dpop: false,
      verifier: { verify: () => Promise.reject(new Error('unused')) },
    });
    assert.equal('dpop_signing_alg_values_supported' in metadata, false);
  });

  it('gives resource in canonical form: no trailing slash, lowercase scheme and host', () => {
    assert.equal(protection('http://127.0.0.1:9999/mcp/').metadata.resource, RESOURCE);
    assert.equal(protection('HTTP://LOCALHOST:9999/mcp').metadata.resource, 'http://localhost:9999/mcp');
    assert.equal(protection('https://mcp.example.com/').metadata.resource, 'https://mcp.example.com');
    assert.equal(protection('https://mcp.example.com:8443/a/b').metadata.resource, 'https://mcp.example.com:8443/a/b');
  });

  it('refuses a resource with a fragment, without a scheme, or not absolute', () => {
    for (const resource of ['http://127.0.0.1:9999/mcp#frag', 'http://127.0.0.1:9999/mcp#', '127.0.0.1:9999/mcp', '/mcp', '']) {
      assert.throws(() => protection(resource), Error, resource);
    }
  });

  it('lists every authorization server, and needs at least one', () => {
    assert.deepEqual(protection(RESOURCE, [ISSUER, OTHER_ISSUER]).metadata.authorization_servers, [ISSUER, OTHER_ISSUER]);
    assert.throws(() => protection(RESOURCE, []), /at least one/);
  });

  it('leaves out optional fields not configured, and adds resource_name when given', () => {
    assert.deepEqual(protectedResourceMetadata({ resource: RESOURCE, authorizationServers: [ISSUER] }), {
      resource: RESOURCE,
      authorization_servers: [ISSUER],
      bearer_methods_supported: ['header'],
    });
    const named = protectedResource({
      resource: RESOURCE,
      authorizationServers: [ISSUER],
      resourceName: 'Demo',
      verifier: { verify: () => Promise.reject(new Error()) },
    });
    assert.equal(named.metadata.resource_name, 'Demo');
  });

  it('is published at the path-inserted URL (RFC 9728 §3.1) and at the root one', () => {
    const p = protection();
    assert.equal(p.metadataUrl, METADATA_URL);
    assert.equal(protectedResourceMetadataUrl(RESOURCE), METADATA_URL);
    assert.deepEqual(p.metadataPaths, ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']);
    const root = protection('https://mcp.example.com/');
    assert.equal(root.metadataUrl, 'https://mcp.example.com/.well-known/oauth-protected-resource');
    assert.deepEqual(root.metadataPaths, ['/.well-known/oauth-protected-resource']);
    const deep = protection('https://mcp.example.com/tenants/a/mcp/');
    assert.equal(deep.metadataUrl, 'https://mcp.example.com/.well-known/oauth-protected-resource/tenants/a/mcp');
  });
});

describe('serving the metadata', () => {
  it('through Hono at both paths: 200 JSON, cacheable, readable cross-origin', async () => {
    const p = protection();
    const app = new Hono();
    honoProtectedResourceMetadata(app, p);
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const response = await app.fetch(new Request(new URL(path, ISSUER)));
      assert.equal(response.status, 200, path);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(response.headers.get('access-control-allow-origin'), '*');
      assert.match(response.headers.get('cache-control') ?? '', /max-age/);
      assert.deepEqual(await response.json(), p.metadata);
    }
    assert.equal((await app.fetch(new Request(`${ISSUER}/.well-known/oauth-protected-resource/other`))).status, 404);
  });

  it('through node:http at both paths; other requests go on to next()', async () => {
    const p = protection();
    const middleware = nodeProtectedResourceMetadata(p);
    const server = createServer((req, res) => middleware(req, res, () => res.writeHead(404).end('next')));
    const base = await listen(server);
    try {
      for (const path of [
        '/.well-known/oauth-protected-resource/mcp',
        '/.well-known/oauth-protected-resource',
        '/.well-known/oauth-protected-resource/mcp?x=1',
      ]) {
        const response = await fetch(`${base}${path}`);
        assert.equal(response.status, 200, path);
        assert.deepEqual(await response.json(), p.metadata);
      }
      const post = await fetch(`${base}/.well-known/oauth-protected-resource/mcp`, { method: 'POST' });
      assert.equal(await post.text(), 'next');
      assert.equal((await fetch(`${base}/mcp`)).status, 404);
    } finally {
      await close(server);
    }
  });
});

for (const revision of REVISIONS) {
  for (const kind of VERIFIERS) {
    describe(`discovery from the 401 — ${revision.name}, ${kind.name} verifier`, () => {
      it('the challenge leads to the metadata, its authorization server to AS metadata, and its token is accepted', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const p = protectedResource({ resource: RESOURCE, authorizationServers: [ISSUER], scopesSupported: SCOPES, requiredScopes: ['mcp:tools'], verifier });
        const app = new Hono<{ Variables: AuthVariables }>();
        app.route('/', h.server.app);
        honoProtectedResourceMetadata(app, p);
        app.use('/mcp', honoBearerAuth(p));
        app.post('/mcp', (c) => c.json({ subject: c.get('auth').subject }));

        const first = await app.fetch(new Request(RESOURCE, { method: 'POST' }));
        assert.equal(first.status, 401);
        const challenge = findBearerChallenge(first.headers.get('www-authenticate'));
        assert.ok(challenge?.resource_metadata);
        const document = (await (await app.fetch(new Request(challenge.resource_metadata))).json()) as { resource: string; authorization_servers: string[] };
        assert.equal(document.resource, RESOURCE);
        const asMetadata = await app.fetch(new Request(wellKnownUrl(document.authorization_servers[0]!, 'oauth-authorization-server')));
        assert.equal(asMetadata.status, 200);
        assert.equal(((await asMetadata.json()) as { issuer: string }).issuer, ISSUER);

        const token = await accessToken(h, revision);
        const ok = await app.fetch(new Request(document.resource, { method: 'POST', headers: { authorization: bearer(token) } }));
        assert.equal(ok.status, 200);
        assert.deepEqual(await ok.json(), { subject: 'user-alice' });
      });
    });
  }
}
