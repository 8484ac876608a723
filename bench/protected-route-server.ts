/**
 * The server side of bench/protected-route.ts, run as its own process so the load generator
 * does not share its event loop. Four routes with the same light JSON-RPC handler: /open (no
 * guard); /open-behind-middleware (no guard, behind a Hono middleware that does nothing); /mcp
 * (bearer guard, JWT verifier as configured by default); /mcp-uncached (the same guard with a
 * verifier that remembers one token, so a stream of distinct tokens never hits its cache: every
 * request pays a first verification). Issues BENCH_TOKENS distinct tokens, and as many
 * DPoP-bound ones, each bound to a key pair of its own (the /mcp guard takes both schemes), writes
 * them and the key pairs to a file, and prints the port, the resource and that file's path.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { createAuthorizationServer } from '../src/authorization-server/index.js';
import { dpopProofSigner, generateDpopKeyPair, randomToken } from '../src/core/index.js';
import { honoBearerAuth, jwtVerifier, protectedResource } from '../src/resource-server/index.js';
import { createMemoryStore } from '../src/store/index.js';
import { tokenIssuer } from './peers/issue-tokens.js';

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
const uncached = protectedResource({
  resource,
  authorizationServers: [issuer],
  requiredScopes: ['mcp:tools'],
  verifier: jwtVerifier({ authorizationServers: [issuer], cacheSize: 1, fetch: (input, init) => as.handle(new Request(input, init)) }),
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
// What any Hono middleware costs a route, whatever it does: the guard is one.
app.post(
  '/open-behind-middleware',
  async (_c, next) => await next(),
  (c) => handler(c),
);
app.post('/mcp', honoBearerAuth(protection), (c) => handler(c));
app.post('/mcp-uncached', honoBearerAuth(uncached), (c) => handler(c));

const issue = await tokenIssuer(as, store, issuer);
const tokens: string[] = [];
for (let i = 0; i < Number(process.env.BENCH_TOKENS ?? 12_000); i++) tokens.push(await issue());
// DPoP-bound tokens: the claims of one the server issued (so they are the same size, give or take
// cnf), each with its own jti and cnf.jkt, signed with the server's key.
const template = JSON.parse(Buffer.from(tokens[0]!.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
const signingKey = await as.keys.current();
const dpopTokens = tokens.map(() => {
  const key = generateDpopKeyPair('ES256');
  const claims = { ...template, jti: randomToken(16), exp: Math.floor(Date.now() / 1000) + 3600, cnf: { jkt: dpopProofSigner(key).jkt } };
  return { token: signingKey.sign(claims), key };
});
const tokensFile = join(mkdtempSync(join(tmpdir(), 'context-auth-bench-')), 'tokens.json');
writeFileSync(tokensFile, JSON.stringify({ tokens, dpopTokens }));

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
  process.stdout.write(`${JSON.stringify({ port: info.port, resource, tokensFile })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
