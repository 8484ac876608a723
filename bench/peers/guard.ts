/**
 * The bearer guard's cost per verification, in a process of its own (pinned like the servers):
 * our `protectedResource` with the JWT verifier, beside our authorization server in memory. The
 * tokens are issued first, untimed; then each is checked once (a first verification: signature,
 * claims, audience, scope — what a new token costs) and one token many times (a cache hit). The
 * guard is given the Authorization header's value, as the HTTP layer hands it over (building the
 * Request is the HTTP layer's cost, paid alike by unprotected routes). For the floor, the same
 * tokens' signatures alone through crypto.verify. Prints one marked line of JSON: CPU µs each.
 *
 *   node --import tsx bench/peers/guard.ts <tokens>
 */
import { verify } from 'node:crypto';
import { createAuthorizationServer } from '../../src/authorization-server/index.js';
import { parseCompactJwt, verificationKeyFromJwk } from '../../src/core/jwt.js';
import { jwtVerifier, protectedResource } from '../../src/resource-server/index.js';
import { createMemoryStore } from '../../src/store/index.js';
import { READY } from './child.js';
import { tokenIssuer } from './issue-tokens.js';

const TOKENS = Number(process.argv[2] ?? 2000);
const issuer = 'http://127.0.0.1:1';
const resource = `${issuer}/mcp`;
const store = createMemoryStore();
const as = createAuthorizationServer({ issuer, store, resources: [resource] });
const guard = protectedResource({
  resource,
  authorizationServers: [issuer],
  requiredScopes: ['mcp:tools'],
  verifier: jwtVerifier({ authorizationServers: [issuer], fetch: (input, init) => as.handle(new Request(input, init)) }),
});

const issue = await tokenIssuer(as, store, issuer, resource);
const tokens: string[] = [];
for (let i = 0; i < TOKENS; i++) tokens.push(await issue());
// V8 goes on optimizing the verifier's code through the first several thousand checks; a
// warm-up of 1,000 measured part of that compilation (bench/README.md, "Bearer guard").
const WARM_UP_TOKENS = 8000;
const warmUp: string[] = [];
for (let i = 0; i < WARM_UP_TOKENS; i++) warmUp.push(await issue());

async function check(token: string): Promise<void> {
  const result = await guard.check(`Bearer ${token}`);
  if (!result.ok) throw new Error(`guard refused a valid token: ${result.status}`);
}

/** CPU µs per check, sequential, one process: nothing else is counted. */
async function cpuPerCheck(list: string[]): Promise<number> {
  const before = process.cpuUsage();
  for (const token of list) await check(token);
  const spent = process.cpuUsage(before);
  return (spent.user + spent.system) / list.length;
}

/** CPU µs of crypto.verify alone on these tokens' signatures: the floor under a first verification. */
async function cpuPerSignature(list: string[]): Promise<number> {
  const { keys } = (await (await as.handle(new Request(`${issuer}/jwks`))).json()) as { keys: Record<string, unknown>[] };
  const key = verificationKeyFromJwk(keys[0]!, 'ES256');
  const inputs = list.map((token) => {
    const jwt = parseCompactJwt(token)!;
    return { data: Buffer.from(jwt.signingInput, 'latin1'), signature: jwt.signature };
  });
  const before = process.cpuUsage();
  for (const { data, signature } of inputs) if (!verify(key.hash, data, key.options, signature)) throw new Error('bad signature');
  const spent = process.cpuUsage(before);
  return (spent.user + spent.system) / list.length;
}

for (const token of warmUp) await check(token); // JWKS fetched, code warm
await cpuPerCheck(Array.from({ length: 200 }, () => warmUp[0]!));
await cpuPerSignature(warmUp);
const signatureOnly = await cpuPerSignature(tokens);
const first = await cpuPerCheck(tokens);
const hit = await cpuPerCheck(Array.from({ length: TOKENS }, () => tokens[0]!));
process.stdout.write(
  `${READY}${JSON.stringify({ tokens: TOKENS, firstMicros: first, cachedMicros: hit, signatureMicros: signatureOnly, rss: process.memoryUsage().rss })}\n`,
);
