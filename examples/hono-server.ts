/**
 * An MCP server on Hono and the official MCP SDK, protected by context-auth.
 *
 *   npx context-auth serve --resource http://127.0.0.1:3000/mcp     # the authorization server
 *   npx context-auth clients add --name example-server --grant-type client_credentials --introspect
 *     # prints the client_id and client_secret this server reads the revocation list with
 *   node --import tsx examples/hono-server.ts                        # this server, on port 3000
 *   node --import tsx examples/client.ts http://127.0.0.1:3000/mcp   # a client: sign in, call whoami
 *
 * Settings (environment): PORT (3000), CONTEXT_AUTH_ISSUER (http://127.0.0.1:8080), RESOURCE_URL
 * (http://127.0.0.1:$PORT/mcp: the URL clients use, and the one `serve --resource` must name),
 * REVOCATIONS_CLIENT_ID and REVOCATIONS_CLIENT_SECRET (required: the client added above).
 */
// #region protect
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { z } from 'zod';
import {
  honoBearerAuth,
  honoProtectedResourceMetadata,
  protectedResource,
  revocationFeed,
  toMcpAuthInfo,
  type AuthVariables,
} from 'context-auth/resource-server';

const port = Number(process.env.PORT ?? 3000);
const issuer = process.env.CONTEXT_AUTH_ISSUER ?? 'http://127.0.0.1:8080';
const resource = process.env.RESOURCE_URL ?? `http://127.0.0.1:${port}/mcp`;
const clientId = process.env.REVOCATIONS_CLIENT_ID;
const clientSecret = process.env.REVOCATIONS_CLIENT_SECRET;
if (!clientId || !clientSecret) {
  console.error('Set REVOCATIONS_CLIENT_ID and REVOCATIONS_CLIENT_SECRET to a client allowed to read the revocation list:');
  console.error('npx context-auth clients add --name example-server --grant-type client_credentials --introspect');
  process.exit(1);
}

// The tokens revoked at the authorization server (at /account, `consents revoke`, a logout…), read
// every 5 s: a revoked token is refused here within about 5 s; without it, only once it expires.
const revocations = revocationFeed({
  url: `${issuer}/revocations`,
  clientId,
  clientSecret,
  intervalSeconds: 5,
  onError: (error) => console.error(`Reading the revocation list failed (tried again in 5 s): ${error.message}`),
});
await revocations.start(); // reads the list once now: a wrong client or secret stops the server here

const protection = protectedResource({
  resource, // this server's URL: the audience its tokens must name (serve --resource <this URL>)
  authorizationServers: [issuer], // whose tokens to trust; their keys are found through their metadata
  scopesSupported: ['mcp:tools'],
  requiredScopes: ['mcp:tools'],
  revocations, // checked after every verification, in memory
});
// AuthVariables types c.get('auth'), which the guard sets.
const app = new Hono<{ Variables: AuthVariables }>();
honoProtectedResourceMetadata(app, protection); // /.well-known/oauth-protected-resource/mcp
app.use('/mcp', honoBearerAuth(protection)); // no valid token: 401 naming the metadata; else c.get('auth')
// #endregion protect

// #region mcp
/** A fresh MCP server per request (stateless): its tools read the token's facts from extra.authInfo. */
function createMcpServer(): McpServer {
  const server = new McpServer({ name: 'hono-example', version: '1.0.0' });
  server.registerTool('whoami', { description: 'Who the access token says you are' }, (extra) => {
    const who = { subject: extra.authInfo?.extra?.subject, clientId: extra.authInfo?.clientId, scopes: extra.authInfo?.scopes };
    return { content: [{ type: 'text', text: JSON.stringify(who) }] };
  });
  server.registerTool('echo', { description: 'Says it back', inputSchema: { text: z.string() } }, ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  return server;
}

app.all('/mcp', async (c) => {
  if (c.req.method !== 'POST') return c.body(null, 405, { Allow: 'POST' }); // stateless: no SSE stream to resume
  const server = createMcpServer();
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  // The SDK's AuthInfo, from what the guard verified: tools see it as extra.authInfo.
  return transport.handleRequest(c.req.raw, { authInfo: toMcpAuthInfo(c.get('auth'), protection.resource) });
});
// #endregion mcp

const listener = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, () => {
  console.error(`MCP server (Hono) at ${resource}, trusting tokens from ${issuer} and refusing revoked ones within about 5 s`);
});
process.once('SIGTERM', () => listener.close());
process.once('SIGINT', () => listener.close());
