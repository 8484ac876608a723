/**
 * What `serve` runs, in-process, on any store: the authorization server and the demo MCP server
 * at /mcp in one Hono app, /mcp protected by the JWT verifier (reaching the JWKS through the same
 * app) and by the server's revocations, as src/cli/serve.ts wires them, and any gateway paths. The result is a harness
 * (helpers/harness.ts), so every harness helper drives it; requests go through the whole app.
 */
import type { Hono } from 'hono';
import { createAuthorizationServer, type AuthorizationServerOptions } from '../../src/authorization-server/index.js';
import type { FullStore } from '../../src/store/store.js';
import { coHostedApp, type CoHostedGateway } from '../../src/cli/co-hosted-app.js';
import type { DpopOptions } from '../../src/resource-server/index.js';
import { ISSUER, OTHER_RESOURCE, RESOURCE, type Harness } from './harness.js';

/** The header a test sets to say which address a request comes from (the socket's peer in `serve`). */
export const PEER_HEADER = 'x-test-peer';

export interface CoHosted extends Harness {
  app: Hono;
}

/** What a test may set of /mcp's guard, and the gateway paths beside it (their resources must be among the server's). */
export interface CoHostedOptions {
  dpop?: DpopOptions;
  gateways?: CoHostedGateway[];
}

export function coHostedServer(store: FullStore, overrides: Partial<AuthorizationServerOptions> = {}, mcp: CoHostedOptions = {}): CoHosted {
  const clock = { now: 1_800_000_000 };
  const log: Record<string, unknown>[] = [];
  const options: AuthorizationServerOptions = {
    issuer: ISSUER,
    store,
    resources: [RESOURCE, OTHER_RESOURCE],
    now: () => clock.now,
    log: (event) => log.push(event),
    clientAddress: (request) => request.headers.get(PEER_HEADER) ?? undefined,
    ...overrides,
  };
  const server = createAuthorizationServer(options);
  const app = coHostedApp(server, { resource: RESOURCE, resourceName: 'demo', now: () => clock.now, ...mcp });
  return {
    app,
    server,
    options,
    store,
    clock,
    log,
    request: async (path, init) => app.fetch(new Request(new URL(path, ISSUER), init)),
  };
}
