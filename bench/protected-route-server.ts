/**
 * The server side of bench/protected-route.ts, run as its own process so the load generator
 * does not share its event loop. Three routes with the same light JSON-RPC handler:
 * /open (no guard), /mcp (bearer guard, JWT verifier). Prints the port and a valid token.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { createAuthorizationServer, registerClient, validateClientMetadata } from '../src/authorization-server/index.js';
import { honoBearerAuth, jwtVerifier, protectedResource } from '../src/resource-server/index.js';
import { createMemoryStore } from '../src/store/index.js';

const issuer = 'http://127.0.0.1:1';
const resource = `${issuer}/mcp`;
const store = createMemoryStore();
const as = createAuthorizationServer({ issuer, store, resources: [resource] });
const protection = protectedResource({
  resource,
  authorizationServers: [issuer],
  requiredScopes: ['mcp:tools'],
  verifier: jwtVerifier({ authorizationServers: [issuer], fetch: (input, init) => as.handle(new Request(input, init)) }),
});

const handler = async (c: { req: { json(): Promise<unknown> } }) => {
  const message = (await c.req.json()) as { id?: unknown };
  return Response.json({ jsonrpc: '2.0', id: message.id ?? null, result: {} });
};
const app = new Hono();
// CPU time spent by this process, read by the load generator around each measurement: a cost per
// request that the other load on the machine disturbs far less than throughput does.
app.get('/cpu', () => Response.json(process.cpuUsage()));
app.post('/open', (c) => handler(c));
app.post('/mcp', honoBearerAuth(protection), (c) => handler(c));

const metadata = validateClientMetadata({ client_name: 'bench', grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic' }, ['mcp:tools']);
const { client, clientSecret } = await registerClient(store, metadata, Math.floor(Date.now() / 1000), { registeredBy: 'admin' });
const tokenResponse = await as.handle(
  new Request(`${issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${client.clientId}:${clientSecret}`).toString('base64')}` },
    body: 'grant_type=client_credentials&scope=mcp:tools',
  }),
);
const { access_token: token } = (await tokenResponse.json()) as { access_token: string };

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
  process.stdout.write(`${JSON.stringify({ port: info.port, token })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
