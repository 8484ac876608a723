import { Hono } from 'hono';
import { notFound, type AuthorizationServer } from '../authorization-server/index.js';
import { withoutOfflineAccess } from '../cli-support.js';
import { BASE_SCOPE, mountDemoMcpServer, type DemoOptions } from '../demo/mcp-server.js';
import { GatewayMetrics, UPSTREAM_TOKEN_SECONDS, mountGateway, type ToolPolicy, type Upstream } from '../gateway/index.js';
import { honoProtectedResourceMetadata, jwtVerifier, protectedResource, type DpopOptions, type VerifiedToken } from '../resource-server/index.js';

/**
 * The app `serve` runs: the authorization server, and the demo context server co-hosted at `/mcp`
 * (Revision A's shape) protected as any Revision B server. Its verifier reaches the JWKS
 * in-process, so it works behind a proxy whose public URL this machine cannot call, and it
 * consults the authorization server's revocations, so a revoked token is refused at once.
 * Each gateway path is a protected resource of its own (its own audience), forwarding to its
 * upstream. One place, so the tests that say they run serve's app (the fuzz run) do.
 */
export function coHostedApp(
  authorizationServer: AuthorizationServer,
  options: { resource: string; resourceName?: string; demo?: DemoOptions; now?: () => number; dpop?: DpopOptions | false; gateways?: CoHostedGateway[] },
): Hono {
  const { issuer } = authorizationServer.metadata;
  // The resource's scopes: offline_access is the authorization server's (a refresh token), not this server's.
  const scopesSupported = withoutOfflineAccess(authorizationServer.metadata.scopes_supported);
  const app = new Hono();
  app.route('/', authorizationServer.app);
  // One verifier (one JWKS cache) for every resource here; each guard checks its own audience.
  const verifier = jwtVerifier({
    authorizationServers: [issuer],
    ...(options.now ? { now: options.now } : {}),
    fetch: (input, init) => Promise.resolve(app.fetch(new Request(input, init))),
  });
  const protect = (resource: string, resourceName: string, requiredScopes?: string[]) =>
    protectedResource({
      resource,
      ...(requiredScopes ? { requiredScopes } : {}),
      authorizationServers: [issuer],
      scopesSupported,
      resourceName,
      revocations: authorizationServer.revocations,
      ...(options.now ? { now: options.now } : {}),
      ...(options.dpop === undefined ? {} : { dpop: options.dpop }),
      verifier,
    });
  const protection = protect(options.resource, options.resourceName ?? 'context-auth demo MCP server');
  honoProtectedResourceMetadata(app, protection);
  mountDemoMcpServer(app, '/mcp', protection, options.demo);
  const gateways = options.gateways ?? [];
  // The gateway's metrics join the server's, on its /metrics; its events go through the server's audit log.
  const gatewayMetrics = authorizationServer.metrics && gateways.length > 0 ? new GatewayMetrics(authorizationServer.metrics) : undefined;
  for (const gateway of gateways) {
    const { path, upstream, resourceName, upstreamTokenAudience, policy } = gateway;
    const resource = `${issuer}${path}`;
    mountGateway(app, {
      path,
      upstream,
      requiredScopes: [BASE_SCOPE],
      ...(policy ? { policy } : {}),
      ...(gatewayMetrics ? { metrics: gatewayMetrics } : {}),
      audit: (event) => authorizationServer.audit(event),
      auditArguments: gateway.auditArguments ?? false,
      rateLimit: (subject) => authorizationServer.gatewayRateLimit(path, subject),
      // Every request needs the base scope, as at /mcp: the challenge names it, so clients ask for it alone.
      protection: protect(resource, resourceName ?? `${gateway.path} through the context-auth gateway`, [BASE_SCOPE]),
      ...(upstreamTokenAudience === undefined
        ? {}
        : {
            // The token exchange grant's delegation, in process: the gateway acts for the token's subject at its upstream.
            upstreamToken: (auth: VerifiedToken) =>
              authorizationServer.gatewayToken({
                subjectToken: auth.token,
                proofJkt: auth.jkt,
                gateway: resource,
                audience: upstreamTokenAudience,
                maxLifetime: UPSTREAM_TOKEN_SECONDS,
              }),
          }),
    });
  }
  app.notFound(notFound);
  return app;
}

/** A gateway path of serve's app: its upstream, and the audience of the tokens it gets from us, if it gets any. */
export interface CoHostedGateway {
  path: string;
  upstream: Upstream;
  resourceName?: string;
  upstreamTokenAudience?: string;
  policy?: ToolPolicy;
  /** Each tools/call's arguments in its audit event (--gateway-audit-arguments). */
  auditArguments?: boolean;
}
