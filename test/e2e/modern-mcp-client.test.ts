/**
 * The 2026-07-28 lifecycle against `context-auth serve`: the official SDK v2 client
 * (`@modelcontextprotocol/client`, version negotiation on) with our `ContextClient.fetch` as its
 * fetch. Such a client sends no `initialize`: its first request is the `server/discover` probe
 * (version, client info and capabilities in `_meta`, MCP-Protocol-Version and Mcp-Method headers).
 * Without a token that probe is what meets the 401, so discovery, registration and authorization
 * happen there, and the probe is repeated with the token. Beside it, a 2025-era client (the SDK
 * 1.32 one, which opens with `initialize`) on the same server, so neither era crowds out the other.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ContextClient, MemoryTokenStore } from '../../src/client/index.js';
import { Browser, signInAndConsent } from '../helpers/harness.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const USER = { username: 'alice', password: 'correct horse battery staple' };

/** One request that reached the server, as sent (after ContextClient added or left out the token). */
interface Sent {
  method: string;
  path: string;
  status: number;
  authorized: boolean;
  headers: Headers;
  rpc?: { method?: string; params?: { _meta?: Record<string, unknown>; name?: string } };
}

describe('a 2026-07-28 client and a 2025 client, each with ContextClient.fetch, against serve', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  let server: RunningServer;
  let issuer: string;

  before(async () => {
    const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet']);
    issuer = server.issuer;
  });

  after(async () => {
    await server?.stop();
  });

  /** A ContextClient whose requests are recorded as they leave, and whose "person" approves at our pages. */
  function signedInClient(): { context: ContextClient; sent: Sent[]; authorizations: URL[] } {
    const sent: Sent[] = [];
    const authorizations: URL[] = [];
    const browser = new Browser((path, init) => fetch(new URL(path, issuer), init));
    const context = new ContextClient({
      serverUrl: `${issuer}/mcp`,
      store: new MemoryTokenStore(),
      clientName: 'modern transport test',
      authorizationTimeoutMs: 20_000,
      fetch: async (input, init) => {
        const request = new Request(input, init);
        const body = request.method === 'POST' ? await request.clone().text() : '';
        const response = await fetch(request);
        const url = new URL(request.url);
        let rpc: Sent['rpc'];
        try {
          rpc = url.pathname === '/mcp' && body ? (JSON.parse(body) as Sent['rpc']) : undefined;
        } catch {
          rpc = undefined;
        }
        sent.push({
          method: request.method,
          path: url.pathname,
          status: response.status,
          authorized: request.headers.has('authorization'),
          headers: request.headers,
          ...(rpc ? { rpc } : {}),
        });
        return response;
      },
      openAuthorizationUrl: async (url) => {
        const authorizationUrl = new URL(url);
        authorizations.push(authorizationUrl);
        const callback = await signInAndConsent(browser, await browser.fetch(authorizationUrl.pathname + authorizationUrl.search), USER, 'approve', issuer);
        await fetch(callback);
      },
    });
    return { context, sent, authorizations };
  }

  const toMcp = (sent: Sent[]) => sent.filter((s) => s.path === '/mcp');
  const structured = (result: unknown) => (result as { structuredContent?: Record<string, unknown> }).structuredContent;

  it('the modern client: its first request, server/discover, gets the 401; sign-in; then tools incl. the admin step-up, never an initialize', async () => {
    const { context, sent, authorizations } = signedInClient();
    const client = new ModernClient({ name: 'modern-e2e', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    const transport = new ModernTransport(new URL(`${issuer}/mcp`), { fetch: context.fetch });
    try {
      await client.connect(transport);
      assert.equal(client.getProtocolEra(), 'modern');
      assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');

      // The first request of the 2026-07-28 client: server/discover, without a token, and 401.
      const [probe, ...rest] = sent;
      assert.ok(probe);
      assert.deepEqual([probe.method, probe.path, probe.status, probe.authorized], ['POST', '/mcp', 401, false]);
      assert.equal(probe.rpc?.method, 'server/discover');
      assert.equal(probe.headers.get('mcp-protocol-version'), '2026-07-28');
      assert.equal(probe.headers.get('mcp-method'), 'server/discover');
      assert.equal(probe.rpc?.params?._meta?.['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
      assert.deepEqual(probe.rpc?.params?._meta?.['io.modelcontextprotocol/clientInfo'], { name: 'modern-e2e', version: '1.0.0' });
      // Then discovery from the challenge, registration, the token, and the same probe again with it.
      assert.deepEqual(
        rest.map((s) => `${s.method} ${s.path} ${s.status}`),
        [
          'GET /.well-known/oauth-protected-resource/mcp 200',
          'GET /.well-known/oauth-authorization-server 200',
          'POST /register 201',
          'POST /token 200',
          'POST /mcp 200',
        ],
      );
      assert.equal(rest.at(-1)!.rpc?.method, 'server/discover');
      assert.ok(rest.at(-1)!.authorized);
      assert.equal(authorizations.length, 1);
      assert.equal(authorizations[0]!.searchParams.get('resource'), `${issuer}/mcp`);

      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((tool) => tool.name).sort(), ['admin_report', 'whoami']);
      const identity = structured(await client.callTool({ name: 'whoami', arguments: {} }));
      assert.deepEqual(identity?.scopes, ['mcp:tools']);

      // admin_report needs mcp:admin: 403 insufficient_scope, our fetch authorizes again for the
      // union of scopes and repeats the call, which the modern client never sees fail.
      const mark = sent.length;
      const report = structured(await client.callTool({ name: 'admin_report', arguments: {} }));
      assert.equal(report?.node, process.version);
      assert.equal(authorizations.length, 2);
      assert.deepEqual(authorizations[1]!.searchParams.get('scope')?.split(' ').sort(), ['mcp:admin', 'mcp:tools']);
      const stepUp = toMcp(sent.slice(mark));
      assert.deepEqual(
        stepUp.map((s) => s.status),
        [403, 200],
      );
      assert.equal(stepUp[0]!.headers.get('mcp-name'), 'admin_report');

      // Every request to /mcp was a 2026-07-28 one: no initialize, and each said its version.
      for (const request of toMcp(sent)) {
        assert.notEqual(request.rpc?.method, 'initialize');
        assert.equal(request.headers.get('mcp-protocol-version'), '2026-07-28');
        assert.equal(request.rpc?.params?._meta?.['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
      }
    } finally {
      await client.close().catch(() => {});
    }
  });

  it('a 2025 client (SDK 1.32, initialize first) on the same server: sign-in from its initialize, then the tools and the step-up', async () => {
    const { context, sent, authorizations } = signedInClient();
    const client = new LegacyClient({ name: 'legacy-e2e', version: '1.0.0' });
    const transport = new LegacyTransport(new URL(`${issuer}/mcp`), { fetch: context.fetch });
    try {
      await client.connect(transport);
      const [first] = toMcp(sent);
      assert.equal(first?.rpc?.method, 'initialize');
      assert.deepEqual([first.status, first.authorized], [401, false]);
      assert.equal(client.getServerVersion()?.name, 'context-auth-demo');
      assert.deepEqual(structured(await client.callTool({ name: 'whoami', arguments: {} }))?.scopes, ['mcp:tools']);
      const report = structured(await client.callTool({ name: 'admin_report', arguments: {} }));
      assert.equal(report?.node, process.version);
      assert.equal(authorizations.length, 2);
      for (const request of toMcp(sent)) assert.equal(request.rpc?.params?._meta?.['io.modelcontextprotocol/protocolVersion'], undefined);
    } finally {
      await client.close().catch(() => {});
    }
  });
});
