/**
 * serve's app with gateway paths, in-process (co-hosted.ts), on the in-memory store and the
 * harness clock: the paths are made by serve's own flag reader (`gatewayOptions`), and /readyz
 * reports them as serve has it do. Machine clients get tokens for a path as `serve`'s would.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import type { AuthorizationServerOptions } from '../../src/authorization-server/index.js';
import { gatewayOptions, type GatewayFlags, type GatewaySettings } from '../../src/cli/gateway-options.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { coHostedServer, PEER_HEADER, type CoHosted } from './co-hosted.js';
import { ISSUER, RESOURCE, postAs, registerServiceClient, type TestClient } from './harness.js';

export interface GatewayHarness extends CoHosted {
  settings: GatewaySettings;
  /** A client_credentials client of the server, with `scope` if given. */
  client(scope?: string): Promise<TestClient>;
  token(client: TestClient, path: string): Promise<string>;
  /** A POST of MCP JSON-RPC to a gateway path, with the token. */
  post(path: string, token: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  /** The Prometheus text at /metrics, as this machine asks for it. */
  metricsText(): Promise<string>;
}

/** The SDK's stdio server of the gateway's tests (stdio-server.ts), as `--gateway PATH=stdio:…` names it. */
export const STDIO_COMMAND = `stdio:${process.execPath} --import tsx ${resolve(import.meta.dirname, 'stdio-server.ts')}`;

/** An http URL on loopback where nothing listens: a port just freed. */
export async function nobodyListening(): Promise<string> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return `http://127.0.0.1:${port}/mcp`;
}

export const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

export function initialize(id: number): unknown {
  return {
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'gateway-test', version: '1.0.0' } },
  };
}

export function toolCall(id: number, name: string, args: Record<string, unknown>): unknown {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } };
}

export function gatewayHarness(flags: GatewayFlags, overrides: Partial<AuthorizationServerOptions> = {}, environment: NodeJS.ProcessEnv = {}): GatewayHarness {
  const settings = gatewayOptions(flags, ['mcp:tools', 'mcp:admin'], { issuer: ISSUER, host: '127.0.0.1', port: 9999 }, environment);
  const h = coHostedServer(
    createMemoryStore(),
    {
      resources: [RESOURCE, ...settings.gateways.map((gateway) => `${ISSUER}${gateway.path}`)],
      readinessReports: { upstreams: settings.readiness },
      ...overrides,
    },
    { gateways: settings.gateways },
  );
  return {
    ...h,
    settings,
    client: (scope) => registerServiceClient(h, 'client_secret_basic', scope === undefined ? {} : { scope }),
    token: async (client, path) => {
      const answer = await postAs(h, '/token', client, { grant_type: 'client_credentials', resource: `${ISSUER}${path}` });
      const body = (await answer.json()) as { access_token?: string };
      assert.equal(answer.status, 200, JSON.stringify(body));
      return body.access_token!;
    },
    post: (path, token, body, headers = {}) =>
      h.request(path, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, ...headers }, body: JSON.stringify(body) }),
    metricsText: async () => {
      const answer = await h.request('/metrics', { headers: { [PEER_HEADER]: '127.0.0.1' } });
      assert.equal(answer.status, 200);
      return answer.text();
    },
  };
}
