/**
 * An MCP server on Express and the official MCP SDK, protected by context-auth.
 *
 *   npx context-auth serve --resource http://127.0.0.1:3000/mcp     # the authorization server
 *   npx context-auth clients add --name example-server --grant-type client_credentials --introspect
 *     # prints the client_id and client_secret this server reads the revocation list with
 *   node --import tsx examples/express-server.ts                     # this server, on port 3000
 *   node --import tsx examples/client.ts http://127.0.0.1:3000/mcp   # a client: sign in, call whoami
 *
 * Settings (environment): PORT (3000), CONTEXT_AUTH_ISSUER (http://127.0.0.1:8080), RESOURCE_URL
 * (http://127.0.0.1:$PORT/mcp: the URL clients use, and the one `serve --resource` must name),
 * REVOCATIONS_CLIENT_ID and REVOCATIONS_CLIENT_SECRET (required: the client added above).
 */
// #region protect
import express from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { nodeBearerAuth, nodeProtectedResourceMetadata, protectedResource, revocationFeed } from 'context-auth/resource-server';

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
const app = express();
app.use(nodeProtectedResourceMetadata(protection)); // /.well-known/oauth-protected-resource/mcp
// The guard before the body parser: a request without a valid token is refused unread.
// It sets req.auth, the SDK's AuthInfo, which the transport hands to tools as extra.authInfo.
app.use('/mcp', nodeBearerAuth(protection), express.json());
// #endregion protect

/** A fresh MCP server per request (stateless): its tools read the token's facts from extra.authInfo. */
function createMcpServer(): McpServer {
  const server = new McpServer({ name: 'express-example', version: '1.0.0' });
  server.registerTool('whoami', { description: 'Who the access token says you are' }, (extra) => {
    const who = { subject: extra.authInfo?.extra?.subject, clientId: extra.authInfo?.clientId, scopes: extra.authInfo?.scopes };
    return { content: [{ type: 'text', text: JSON.stringify(who) }] };
  });
  server.registerTool('echo', { description: 'Says it back', inputSchema: { text: z.string() } }, ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  return server;
}

// #region mcp
app.post('/mcp', async (req, res) => {
  const server = createMcpServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => void server.close());
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
app.all('/mcp', (_req, res) => void res.status(405).set('Allow', 'POST').end()); // stateless: no SSE stream to resume
// #endregion mcp

const listener = app.listen(port, '127.0.0.1', () => {
  console.error(`MCP server (Express) at ${resource}, trusting tokens from ${issuer} and refusing revoked ones within about 5 s`);
});
process.once('SIGTERM', () => listener.close());
process.once('SIGINT', () => listener.close());
