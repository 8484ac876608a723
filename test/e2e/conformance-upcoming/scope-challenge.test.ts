/**
 * The MCP conformance suite's request-time scope challenge scenario for servers (SEP-2350), not in
 * a release yet: `sep-2350-server-scope-challenge` of
 * https://github.com/modelcontextprotocol/conformance/pull/481
 * (src/scenarios/server/scope-challenge.ts at commit 69035234136e4a0b9b10b1194d03c26f66f08cfc).
 * The server is the official MCP SDK behind our guard, each operation asking for its own scopes
 * (per tool, per resource, per prompt); the scenario's fixture tokens are opaque, so a verifier
 * of ours knows them: `mcp-conformance-scope-low` has only `mcp:conformance:baseline`,
 * `mcp-conformance-scope-full` every scope below. For each operation, with the low token: HTTP
 * 403, a Bearer challenge with error="insufficient_scope" and a usable resource_metadata URL,
 * naming every scope the operation needs in that one challenge; with the full token, the
 * operation's normal result.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseWwwAuthenticate } from '../../../src/core/www-authenticate.js';
import { tokenRefused, type TokenVerifier } from '../../../src/resource-server/index.js';
import { startProtectedMcpServer, type McpCall, type ProtectedMcpServer } from './protected-mcp-server.js';

const LOW = 'mcp-conformance-scope-low';
const FULL = 'mcp-conformance-scope-full';

const FIXTURES = [
  { key: 'tool', method: 'tools/call', params: { name: 'test_simple_text' }, scopes: ['mcp:conformance:tools:call', 'mcp:conformance:tools:test_simple_text'] },
  {
    key: 'static-resource',
    method: 'resources/read',
    params: { uri: 'test://static-text' },
    scopes: ['mcp:conformance:resources:read', 'mcp:conformance:resources:static'],
  },
  {
    key: 'template-resource',
    method: 'resources/read',
    params: { uri: 'test://template/123/data' },
    scopes: ['mcp:conformance:resources:read', 'mcp:conformance:resources:template:123'],
  },
  {
    key: 'prompt',
    method: 'prompts/get',
    params: { name: 'test_simple_prompt' },
    scopes: ['mcp:conformance:prompts:get', 'mcp:conformance:prompts:test_simple_prompt'],
  },
] as const;

/** The scopes each operation needs, as the server's author declares them. */
function scopesFor(call: McpCall): string[] {
  if (call.method === 'tools/call') return ['mcp:conformance:tools:call', `mcp:conformance:tools:${String(call.params.name)}`];
  if (call.method === 'prompts/get') return ['mcp:conformance:prompts:get', `mcp:conformance:prompts:${String(call.params.name)}`];
  if (call.method === 'resources/read') {
    const uri = String(call.params.uri);
    const template = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
    return ['mcp:conformance:resources:read', template ? `mcp:conformance:resources:template:${template[1]}` : 'mcp:conformance:resources:static'];
  }
  return [];
}

describe('upcoming conformance: sep-2350-server-scope-challenge against our guard', { timeout: 300_000 }, () => {
  let server: ProtectedMcpServer;

  before(async () => {
    const opaque: TokenVerifier = {
      verify: async (token) => {
        const scopes = token === LOW ? ['mcp:conformance:baseline'] : token === FULL ? FIXTURES.flatMap((fixture) => fixture.scopes) : undefined;
        if (!scopes) return tokenRefused('invalid_token', 'unknown token');
        return {
          ok: true,
          value: {
            token,
            subject: 'conformance',
            clientId: 'conformance',
            scopes,
            audience: [server.url],
            issuer: 'https://as.example',
            expiresAt: Math.floor(Date.now() / 1000) + 600,
            claims: {},
          },
        };
      },
    };
    server = await startProtectedMcpServer({ authorizationServers: ['https://as.example'], verifier: opaque, dpop: false }, { scopesFor });
  });

  after(async () => {
    await server?.close();
  });

  const call = (token: string, fixture: (typeof FIXTURES)[number]) =>
    fetch(server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: `scope-challenge-${fixture.key}`, method: fixture.method, params: fixture.params }),
    });

  for (const fixture of FIXTURES) {
    it(`${fixture.key}: server-scope-challenge-http-403, -www-authenticate, sep-2350-server-single-challenge`, async () => {
      const response = await call(LOW, fixture);
      assert.equal(response.status, 403);
      const header = response.headers.get('www-authenticate');
      const bearer = parseWwwAuthenticate(header ?? '').find((challenge) => challenge.scheme === 'bearer');
      assert.ok(bearer, `a Bearer challenge: ${header}`);
      assert.equal(bearer.params.error, 'insufficient_scope');
      // The scenario's rules for resource_metadata: absolute, no user info or fragment, https or same-origin http.
      const metadata = new URL(bearer.params.resource_metadata ?? '');
      assert.equal(metadata.username + metadata.password + metadata.hash, '');
      assert.ok(metadata.protocol === 'https:' || metadata.origin === new URL(server.url).origin, metadata.href);
      const challenged = (bearer.params.scope ?? '').split(/\s+/).filter(Boolean);
      for (const scope of fixture.scopes) assert.ok(challenged.includes(scope), `${scope} in "${bearer.params.scope}"`);
    });

    it(`${fixture.key}: server-scope-challenge-upgraded-retry`, async () => {
      const response = await call(FULL, fixture);
      assert.equal(response.status, 200);
      const body = (await response.json()) as { result?: Record<string, unknown>; error?: unknown };
      assert.equal(body.error, undefined);
      const first = ((body.result?.content ?? body.result?.contents ?? body.result?.messages) as Record<string, unknown>[] | undefined)?.[0];
      if (fixture.key === 'tool') assert.ok(first?.type === 'text' && typeof first.text === 'string', JSON.stringify(body));
      if (fixture.key === 'static-resource') assert.ok(first?.uri === 'test://static-text' && typeof first.text === 'string', JSON.stringify(body));
      if (fixture.key === 'template-resource') assert.ok(first?.uri === 'test://template/123/data' && String(first.text).includes('123'), JSON.stringify(body));
      if (fixture.key === 'prompt') assert.ok(first?.role === 'user' && typeof first.content === 'object' && first.content !== null, JSON.stringify(body));
    });
  }
});
