/**
 * The demo MCP server (`mountDemoMcpServer`) co-hosted with the authorization server in one Hono
 * app, as `serve` wires it: whoami shows the token's identity, admin_report needs mcp:admin
 * (403 insufficient_scope otherwise), and a Revision A client finds the AS metadata and default
 * paths at the base URL while its first token-less request gets the Revision B challenge. A
 * 2026-07-28 request (no initialize; version and client in `_meta` and headers) is served as well,
 * behind the same guard and step-up.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Hono } from 'hono';
import { ADMIN_SCOPE, BASE_SCOPE, mountDemoMcpServer, type DemoOptions } from '../../src/demo/mcp-server.js';
import { dpopProofSigner, generateDpopKeyPair } from '../../src/core/dpop.js';
import { findBearerChallenge } from '../../src/core/www-authenticate.js';
import { honoProtectedResourceMetadata } from '../../src/resource-server/adapters/hono.js';
import { protectedResource, type ProtectedResource, type ProtectedResourceOptions } from '../../src/resource-server/guard.js';
import { jwtVerifier } from '../../src/resource-server/verify-jwt.js';
import type { TokenVerifier } from '../../src/resource-server/types.js';
import { obtainTokens } from '../helpers/harness.js';
import {
  accessToken,
  bearer,
  createHarness,
  expectDenied,
  ISSUER,
  METADATA_URL,
  mintToken,
  RESOURCE,
  REVISIONS,
  toolCall,
  toolResult,
  VERIFIERS,
  type Harness,
} from './setup.js';

/** One app at ISSUER: the AS, the resource metadata and the demo at /mcp (as `serve` builds it). */
function coHosted(
  h: Harness,
  verifier?: TokenVerifier,
  options: DemoOptions = {},
  guard: Partial<ProtectedResourceOptions> = {},
): { app: Hono; protection: ProtectedResource; send(path: string, init?: RequestInit): Promise<Response> } {
  const app = new Hono();
  app.route('/', h.server.app);
  const protection = protectedResource({
    ...guard,
    resource: RESOURCE,
    authorizationServers: [ISSUER],
    scopesSupported: h.server.metadata.scopes_supported,
    resourceName: 'demo',
    // serve's own wiring: the JWT verifier reaching the JWKS in-process through the same app.
    verifier:
      verifier ??
      jwtVerifier({ authorizationServers: [ISSUER], now: () => h.clock.now, fetch: (input, init) => Promise.resolve(app.fetch(new Request(input, init))) }),
  });
  honoProtectedResourceMetadata(app, protection);
  mountDemoMcpServer(app, '/mcp', protection, options);
  app.notFound(() => Response.json({ error: 'not_found', error_description: 'no such endpoint' }, { status: 404 }));
  return { app, protection, send: async (path, init) => app.fetch(new Request(new URL(path, ISSUER), init)) };
}

function rpc(method: string, authorization?: string, params: Record<string, unknown> = {}): RequestInit {
  const init = toolCall('x', authorization);
  return { ...init, body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }) };
}

for (const revision of REVISIONS) {
  for (const kind of VERIFIERS) {
    describe(`demo MCP server — ${revision.name}, ${kind.name} verifier`, () => {
      it('whoami returns the subject, client id and scopes of the token', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const { send } = coHosted(h, verifier);
        const { client, tokens } = await obtainTokens(h, revision);
        const identity = await toolResult(await send('/mcp', toolCall('whoami', bearer(String(tokens.access_token)))));
        assert.deepEqual(identity, { subject: 'user-alice', client_id: client.client_id, scopes: [BASE_SCOPE], resource: RESOURCE });
      });

      it('whoami names the person (username, display name) when told how, as serve does', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const { send } = coHosted(h, verifier, {
          user: async (subject) => {
            const user = await h.store.getUser({ id: subject });
            return user ? { username: user.username, name: null } : null;
          },
        });
        const { client, tokens } = await obtainTokens(h, revision);
        const identity = await toolResult(await send('/mcp', toolCall('whoami', bearer(String(tokens.access_token)))));
        assert.deepEqual(identity, {
          username: 'alice',
          name: null,
          subject: 'user-alice',
          client_id: client.client_id,
          scopes: [BASE_SCOPE],
          resource: RESOURCE,
        });
      });

      it('admin_report without mcp:admin → HTTP 403 insufficient_scope naming mcp:admin; with it → the report', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const { send } = coHosted(h, verifier);
        const narrow = await accessToken(h, revision);
        const challenge = await expectDenied(await send('/mcp', toolCall('admin_report', bearer(narrow))), 403, 'insufficient_scope');
        assert.ok(challenge.scope?.split(' ').includes(ADMIN_SCOPE), challenge.scope);
        // Also when the call hides in a batch.
        const batch = {
          ...toolCall('x', bearer(narrow)),
          body: JSON.stringify([
            { jsonrpc: '2.0', id: 1, method: 'tools/list' },
            { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'admin_report', arguments: {} } },
          ]),
        };
        await expectDenied(await send('/mcp', batch), 403, 'insufficient_scope');

        const wide = await accessToken(h, revision, { scope: `${BASE_SCOPE} ${ADMIN_SCOPE}` });
        const report = await toolResult(await send('/mcp', toolCall('admin_report', bearer(wide))));
        assert.equal(typeof report.uptime_seconds, 'number');
        assert.equal(report.node, process.version);
        const identity = await toolResult(await send('/mcp', toolCall('whoami', bearer(wide))));
        assert.deepEqual(identity.scopes, [ADMIN_SCOPE, BASE_SCOPE]);
      });

      it('every request needs mcp:tools: a token with mcp:admin alone → 403 naming mcp:tools', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const { send } = coHosted(h, verifier);
        const adminOnly = await accessToken(h, revision, { scope: ADMIN_SCOPE });
        const challenge = await expectDenied(await send('/mcp', rpc('tools/list', bearer(adminOnly))), 403, 'insufficient_scope');
        assert.equal(challenge.scope, BASE_SCOPE);
      });

      it('lists its tools to a valid token; refuses one in the query string', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const { send } = coHosted(h, verifier);
        const token = await accessToken(h, revision);
        const response = await send('/mcp', rpc('tools/list', bearer(token)));
        assert.equal(response.status, 200);
        const { result } = (await response.json()) as { result: { tools: { name: string }[] } };
        assert.deepEqual(result.tools.map((tool) => tool.name).sort(), ['admin_report', 'whoami']);
        await expectDenied(await send(`/mcp?access_token=${token}`, rpc('tools/list')), 401, 'unauthorized');
      });

      it('an expired token → 401 invalid_token before the body is looked at', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const { send } = coHosted(h, verifier);
        const token = await accessToken(h, revision);
        h.clock.now += 611;
        await expectDenied(await send('/mcp', { ...rpc('tools/list', bearer(token)), body: 'not json' }), 401, 'invalid_token');
      });
    });
  }

  describe(`Revision A co-hosting — ${revision.name} client`, () => {
    it('AS metadata and the default paths at the base URL; the first token-less /mcp request gets the Revision B challenge', async () => {
      const h = createHarness();
      const { send } = coHosted(h);
      const metadata = await send('/.well-known/oauth-authorization-server', { headers: { 'Context-Protocol-Version': '2025-03-26' } });
      assert.equal(metadata.status, 200);
      const document = (await metadata.json()) as Record<string, string>;
      assert.equal(document.issuer, ISSUER);
      assert.equal(document.authorization_endpoint, `${ISSUER}/authorize`);
      assert.equal(document.token_endpoint, `${ISSUER}/token`);
      assert.equal(document.registration_endpoint, `${ISSUER}/register`);
      // The default paths exist (a wrong request, not a 404).
      assert.notEqual((await send('/authorize')).status, 404);
      assert.notEqual((await send('/token', { method: 'POST' })).status, 404);
      assert.notEqual((await send('/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status, 404);
      assert.equal((await send('/nothing-here')).status, 404);

      const first = await send(
        '/mcp',
        rpc('initialize', undefined, { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '1' } }),
      );
      const challenge = await expectDenied(first, 401, 'unauthorized');
      assert.equal(challenge.resource_metadata, METADATA_URL);
      assert.equal(challenge.scope, BASE_SCOPE);
      const resourceMetadata = (await (await send(challenge.resource_metadata!)).json()) as Record<string, unknown>;
      assert.deepEqual(resourceMetadata.authorization_servers, [ISSUER]);
      assert.equal(resourceMetadata.resource, RESOURCE);

      // Whichever way the client found the AS, its token works here.
      const token = await accessToken(h, revision);
      assert.equal((await send('/mcp', rpc('tools/list', bearer(token)))).status, 200);
    });

    it('browsers can read the challenge: CORS exposes WWW-Authenticate, and the preflight allows Authorization', async () => {
      const h = createHarness();
      const { send } = coHosted(h);
      const denied = await send('/mcp', {
        ...rpc('tools/list'),
        headers: { ...(rpc('tools/list').headers as Record<string, string>), origin: 'https://app.example' },
      });
      assert.equal(denied.status, 401);
      assert.match(denied.headers.get('access-control-expose-headers') ?? '', /WWW-Authenticate/i);
      const preflight = await send('/mcp', {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
      });
      assert.ok(preflight.status === 204 || preflight.status === 200);
      assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /Authorization/i);
      assert.ok(findBearerChallenge(denied.headers.get('www-authenticate')));
    });

    it('browsers may send DPoP proofs and read DPoP-Nonce: the preflight allows DPoP, answers expose DPoP-Nonce', async () => {
      const h = createHarness();
      const { send } = coHosted(h);
      const denied = await send('/mcp', {
        ...rpc('tools/list'),
        headers: { ...(rpc('tools/list').headers as Record<string, string>), origin: 'https://app.example' },
      });
      assert.match(denied.headers.get('access-control-expose-headers') ?? '', /DPoP-Nonce/i);
      const preflight = await send('/mcp', {
        method: 'OPTIONS',
        headers: {
          origin: 'https://app.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, dpop, content-type',
        },
      });
      const allowed = (preflight.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/\s*,\s*/);
      assert.ok(allowed.includes('dpop'), allowed.join(','));
    });

    it('a DPoP-bound token: whoami and the admin_report step-up with one proof each, a replayed proof refused', async () => {
      const h = createHarness();
      const { send } = coHosted(h, undefined, {}, { now: () => h.clock.now });
      const signer = dpopProofSigner(generateDpopKeyPair());
      const token = await mintToken(h.server, h.clock.now, { cnf: { jkt: signer.jkt }, scope: `${BASE_SCOPE} ${ADMIN_SCOPE}` });
      const call = (tool: string, proof: string) =>
        send('/mcp', { ...toolCall(tool, `DPoP ${token}`), headers: { ...(toolCall(tool, `DPoP ${token}`).headers as Record<string, string>), dpop: proof } });
      const proof = () => signer.sign({ method: 'POST', url: RESOURCE, accessToken: token, now: h.clock.now });
      assert.equal((await toolResult(await call('whoami', proof()))).subject, 'user-alice');
      const once = proof();
      assert.equal(typeof (await toolResult(await call('admin_report', once))).uptime_seconds, 'number');
      const replayed = await call('admin_report', once);
      assert.equal(replayed.status, 401);
      assert.match(replayed.headers.get('www-authenticate') ?? '', /DPoP error="invalid_dpop_proof"/);
      assert.equal((await send('/mcp', toolCall('whoami', bearer(token)))).status, 401);
    });
  });
}

/** A 2026-07-28 request: the version in the header and in `_meta`, Mcp-Method and Mcp-Name headers. */
function modern(method: string, authorization?: string, params: Record<string, unknown> = {}): RequestInit {
  const name = typeof params.name === 'string' ? params.name : undefined;
  return {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name ? { 'mcp-name': name } : {}),
      ...(authorization === undefined ? {} : { authorization }),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 3,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'modern-test', version: '1.0.0' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  };
}

describe('demo MCP server — a 2026-07-28 client (stateless, server/discover)', () => {
  const revision = REVISIONS[REVISIONS.length - 1]!;

  it('the token-less server/discover probe gets the 401 challenge, before its body is read', async () => {
    const h = createHarness();
    const { send } = coHosted(h);
    const challenge = await expectDenied(await send('/mcp', modern('server/discover')), 401, 'unauthorized');
    assert.equal(challenge.resource_metadata, METADATA_URL);
    // The body is not looked at: not even a malformed one changes the answer.
    await expectDenied(await send('/mcp', { ...modern('server/discover'), body: '{not json' }), 401, 'unauthorized');
  });

  it('with a token: server/discover offers 2026-07-28, tools/call works without initialize, and the answer names the server', async () => {
    const h = createHarness();
    const { send } = coHosted(h);
    const { client, tokens } = await obtainTokens(h, revision);
    const token = String(tokens.access_token);
    const discovered = await send('/mcp', modern('server/discover', bearer(token)));
    const text = await discovered.text();
    assert.equal(discovered.status, 200, text);
    const { result } = JSON.parse(text) as { result: { supportedVersions?: string[]; capabilities?: Record<string, unknown> } };
    assert.ok(result.supportedVersions?.includes('2026-07-28'), text);
    assert.ok(result.capabilities?.tools, text);
    const identity = await toolResult(await send('/mcp', modern('tools/call', bearer(token), { name: 'whoami', arguments: {} })));
    assert.deepEqual(identity, { subject: 'user-alice', client_id: client.client_id, scopes: [BASE_SCOPE], resource: RESOURCE });
  });

  it('admin_report: 403 insufficient_scope naming mcp:admin without it, the report with it', async () => {
    const h = createHarness();
    const { send } = coHosted(h);
    const narrow = await accessToken(h, revision);
    const challenge = await expectDenied(
      await send('/mcp', modern('tools/call', bearer(narrow), { name: 'admin_report', arguments: {} })),
      403,
      'insufficient_scope',
    );
    assert.ok(challenge.scope?.split(' ').includes(ADMIN_SCOPE), challenge.scope);
    const wide = await accessToken(h, revision, { scope: `${BASE_SCOPE} ${ADMIN_SCOPE}` });
    const report = await toolResult(await send('/mcp', modern('tools/call', bearer(wide), { name: 'admin_report', arguments: {} })));
    assert.equal(report.node, process.version);
  });

  it('a tool named after an Object.prototype property (__proto__, constructor) is an unknown tool, not a 500', async () => {
    // Found by the fuzz run (seed 419928117): the scope lookup walked into Object.prototype.
    const h = createHarness();
    const { send } = coHosted(h);
    const token = await accessToken(h, revision);
    for (const name of ['__proto__', 'constructor', 'toString']) {
      const response = await send('/mcp', modern('tools/call', bearer(token), { name, arguments: {} }));
      assert.ok(response.status < 500, `${name}: ${response.status} ${await response.text()}`);
    }
  });

  it('a body over the cap → 413 on the modern path too', async () => {
    const h = createHarness();
    const { send } = coHosted(h);
    const token = await accessToken(h, revision);
    const init = modern('tools/call', bearer(token), { name: 'whoami', arguments: { padding: 'x'.repeat(1_100_000) } });
    assert.equal((await send('/mcp', init)).status, 413);
  });

  it('a body that breaks off (the connection dropped, or its framing was broken) → 400 invalid_request JSON, not a 500', async () => {
    // Found by the fuzz run: Transfer-Encoding "gzip, chunked" on a plain body errors the stream.
    const h = createHarness();
    const { send } = coHosted(h);
    const token = await accessToken(h, revision);
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"jsonrpc":"2.0",'));
        controller.error(new Error('aborted'));
      },
    });
    const response = await send('/mcp', { ...modern('tools/call', bearer(token), { name: 'whoami', arguments: {} }), body, duplex: 'half' } as RequestInit);
    const text = await response.text();
    assert.equal(response.status, 400, text);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal((JSON.parse(text) as { error: string }).error, 'invalid_request');
  });

  it('browsers may send the 2026-07-28 request headers: the preflight allows Mcp-Method and Mcp-Name', async () => {
    const h = createHarness();
    const { send } = coHosted(h);
    const preflight = await send('/mcp', {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, mcp-protocol-version, mcp-method, mcp-name',
      },
    });
    const allowed = (preflight.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/\s*,\s*/);
    for (const header of ['mcp-method', 'mcp-name', 'mcp-protocol-version']) assert.ok(allowed.includes(header), allowed.join(','));
  });
});
