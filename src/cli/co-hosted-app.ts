import { Hono } from 'hono';
import { notFound, type AuthorizationServer } from '../authorization-server/index.js';
import { withoutOfflineAccess } from '../cli-support.js';
import { mountDemoMcpServer, type DemoOptions } from '../demo/mcp-server.js';
import { honoProtectedResourceMetadata, jwtVerifier, protectedResource, type DpopOptions } from '../resource-server/index.js';

/**
 * The app `serve` runs: the authorization server, and the demo context server co-hosted at `/mcp`
 * (Revision A's shape) protected as any Revision B server. Its verifier reaches the JWKS
 * in-process, so it works behind a proxy whose public URL this machine cannot call, and it
 * consults the authorization server's revocations, so a revoked token is refused at once.
 * One place, so the tests that say they run serve's app (the fuzz run) do.
 */
export function coHostedApp(
  authorizationServer: AuthorizationServer,
  options: { resource: string; resourceName?: string; demo?: DemoOptions; now?: () => number; dpop?: DpopOptions | false },
): Hono {
  const { issuer } = authorizationServer.metadata;
  // The resource's scopes: offline_access is the authorization server's (a refresh token), not this server's.
  const scopesSupported = withoutOfflineAccess(authorizationServer.metadata.scopes_supported);
  const app = new Hono();
  app.route('/', authorizationServer.app);
  const protection = protectedResource({
    resource: options.resource,
    authorizationServers: [issuer],
    scopesSupported,
    resourceName: options.resourceName ?? 'context-auth demo MCP server',
    revocations: authorizationServer.revocations,
    ...(options.now ? { now: options.now } : {}),
    ...(options.dpop === undefined ? {} : { dpop: options.dpop }),
    verifier: jwtVerifier({
      authorizationServers: [issuer],
      ...(options.now ? { now: options.now } : {}),
      fetch: (input, init) => Promise.resolve(app.fetch(new Request(input, init))),
    }),
  });
  honoProtectedResourceMetadata(app, protection);
  mountDemoMcpServer(app, '/mcp', protection, options.demo);
  app.notFound(notFound);
  return app;
}
