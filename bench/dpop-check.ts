/**
 * What checking a DPoP proof costs, step by step, beside its floor: the P-256 signature check
 * alone (crypto.verify with the key object at hand). CPU µs per operation, every row in this one
 * process, the rows taking turns a few dozen operations at a time (so the machine's other load
 * falls on all alike), medians of the rounds:
 *  - the whole check: DpopProofVerifier.check as the token endpoint calls it (htu, no ath) and as
 *    the guard does (htu and ath), with a known key and with a key not seen before;
 *  - the guard's whole answer to a request with a bound token verified before (checkKnown, as the
 *    Hono middleware calls it), with its proof, beside the same answer to a Bearer token: what
 *    DPoP adds at the guard, replay record and key binding included; and with nonces required;
 *  - the token endpoint's whole answer to a refresh grant on SQLite (its handler, no HTTP), with a
 *    proof and without, 16 at once as concurrent requests come: what DPoP adds to a refresh, the
 *    proof's replay record (kept in the rotation's transaction) included;
 *  - each step on its own: the parse, a new key's import and thumbprint, the target URI, `ath`, the
 *    replay key, the guard's replay record, a nonce, and the token endpoint's replay record (in
 *    SQLite, 16 proofs in one turn as concurrent token requests share a commit).
 * Proofs are made beforehand, every one with a `jti` of its own.
 *
 *   node --import tsx bench/dpop-check.ts   (BENCH_ROUNDS, default 7; BENCH_OPS, operations per row and round, default 2000)
 */
import { createPublicKey, verify, type JsonWebKey } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAuthorizationServer } from '../src/authorization-server/index.js';
import {
  DpopNonces,
  DpopProofVerifier,
  ReplayCache,
  accessTokenHash,
  dpopProofSigner,
  dpopTargetUri,
  generateDpopKeyPair,
  hashSecret,
  jwkThumbprint,
  randomToken,
} from '../src/core/index.js';
import { jwtVerifier, protectedResource, type ProtectedResource } from '../src/resource-server/index.js';
import { createMemoryStore } from '../src/store/index.js';
import { openSqliteStore } from '../src/store/sqlite.js';
import { tokenIssuer } from './peers/issue-tokens.js';
import { grantWithRefreshToken } from './seed-grant.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
/** Operations of one row before the next row takes its turn (a multiple of TURN). */
const CHUNK = 80;
const OPS = Math.ceil(Number(process.env.BENCH_OPS ?? 2000) / CHUNK) * CHUNK;
/** Clients at work, each with a key of its own and a token bound to it. */
const CLIENTS = 64;
/** Token requests in one turn of the event loop, whose replay records share a commit. */
const TURN = 16;
/** One clock for every proof and check, so that no proof made at the start is too old by the end. */
const NOW = Math.floor(Date.now() / 1000);
const NONCE_KEY = Buffer.alloc(32, 7);

const issuer = 'http://127.0.0.1:1';
const resource = `${issuer}/mcp`;
const tokenEndpoint = `${issuer}/token`;
const store = createMemoryStore();
const as = createAuthorizationServer({ issuer, store, resources: [resource] });
const verifier = jwtVerifier({ authorizationServers: [issuer], fetch: (input, init) => as.handle(new Request(input, init)) });
const guardOptions = { resource, authorizationServers: [issuer], requiredScopes: ['mcp:tools'], verifier, now: () => NOW };
const guard = protectedResource(guardOptions);
const nonceGuard = protectedResource({ ...guardOptions, dpop: { nonces: { key: NONCE_KEY } } });
const nonce = new DpopNonces(NONCE_KEY).issue(NOW);

// Each client's key, and a token bound to it: a token the server issued, its claims given cnf.jkt.
const issue = await tokenIssuer(as, store, issuer, resource);
const template = JSON.parse(Buffer.from((await issue()).split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
const signingKey = await as.keys.current();
const clients = Array.from({ length: CLIENTS }, () => {
  const pair = generateDpopKeyPair('ES256');
  const signer = dpopProofSigner(pair);
  const token = signingKey.sign({ ...template, jti: randomToken(16), exp: NOW + 3600, cnf: { jkt: signer.jkt } });
  return { pair, signer, token, key: createPublicKey({ key: pair.publicJwk, format: 'jwk' }), bearer: '' };
});
for (const client of clients) client.bearer = await issue();

/** `count` proofs, client after client; `make` says what each names. */
function proofs(count: number, make: (client: (typeof clients)[number]) => Parameters<(typeof clients)[number]['signer']['sign']>[0]) {
  return Array.from({ length: count }, (_, i) => {
    const client = clients[i % CLIENTS]!;
    return { client, proof: client.signer.sign(make(client)) };
  });
}
const WARM_UP = OPS;
const total = WARM_UP + ROUNDS * OPS;
// Proofs checked without a replay record may be checked again each round; those the guard sees must each be new.
const atToken = proofs(OPS, () => ({ method: 'POST', url: tokenEndpoint, now: NOW }));
const atGuard = proofs(OPS, (client) => ({ method: 'POST', url: resource, accessToken: client.token, now: NOW }));
const toGuard = proofs(total, (client) => ({ method: 'POST', url: resource, accessToken: client.token, now: NOW }));
const toNonceGuard = proofs(total, (client) => ({ method: 'POST', url: resource, accessToken: client.token, nonce, now: NOW }));
const signed = atGuard.map(({ client, proof }) => {
  const dot = proof.lastIndexOf('.');
  return { key: client.key, data: Buffer.from(proof.slice(0, dot), 'latin1'), signature: Buffer.from(proof.slice(dot + 1), 'base64url') };
});

// Every token verified once before (the guard's cache), and every key known to the verifiers that keep keys.
for (const client of clients) {
  for (const [protection, make] of [
    [guard, {}],
    [nonceGuard, { nonce }],
  ] as const) {
    const proof = client.signer.sign({ method: 'POST', url: resource, accessToken: client.token, now: NOW - 1, ...make });
    const result = await protection.check({ authorization: `DPoP ${client.token}`, dpop: proof, method: 'POST', target: '/mcp', request: {} });
    if (!result.ok) throw new Error(`the guard refused a bound token: ${result.body.error_description}`);
  }
  const bearer = await guard.check(`Bearer ${client.bearer}`);
  if (!bearer.ok) throw new Error(`the guard refused a bearer token: ${bearer.body.error_description}`);
}
const known = new DpopProofVerifier();
for (const { proof } of atGuard.slice(0, CLIENTS)) known.check({ proof, method: 'POST', url: resource, now: NOW });
/** Keeps one key: a proof of each next client's key is one it has not seen. */
const forgetful = new DpopProofVerifier({ maxKeys: 1 });

const dir = mkdtempSync(join(tmpdir(), 'context-auth-dpop-bench-'));
const sqlite = openSqliteStore({ path: join(dir, 'store.db') });
const replays = new ReplayCache();

// Refresh grants at a token endpoint on SQLite: TURN chains of a public client's refresh tokens,
// and TURN more bound to one client's key, each refreshed with a new proof by it.
const refreshStore = openSqliteStore({ path: join(dir, 'refresh.db') });
const refreshServer = createAuthorizationServer({ issuer, store: refreshStore, resources: [resource], rateLimits: { token: false } });
await refreshStore.createClient({
  clientId: 'bench-public',
  clientSecretHash: null,
  tokenEndpointAuthMethod: 'none',
  redirectUris: ['http://127.0.0.1:9/cb'],
  grantTypes: ['authorization_code', 'refresh_token'],
  responseTypes: ['code'],
  clientName: 'bench',
  scope: null,
  metadata: {},
  canIntrospect: false,
  registeredBy: 'admin',
  createdAt: NOW,
  lastUsedAt: null,
});
await refreshStore.createUser({ id: 'bench-user', username: 'bench', passwordHash: null, createdAt: NOW });
const refresher = clients[0]!.signer;
async function refreshChains(bound: boolean): Promise<string[]> {
  return Promise.all(
    Array.from({ length: TURN }, async (_, chain) => {
      const grant = { id: `${bound ? 'bound' : 'plain'}-${chain}`, clientId: 'bench-public', userId: 'bench-user', scope: ['mcp:tools'] };
      const token = bound ? `${randomToken(32)}.${refresher.jkt}` : randomToken(32);
      const record = { ...grant, resource, authTime: NOW, createdAt: NOW, revokedAt: null, upstreamSessionId: null, accessExpiresAt: null };
      await grantWithRefreshToken(refreshStore, record, { tokenHash: hashSecret(token), createdAt: NOW, expiresAt: NOW + 86_400 }, NOW);
      return token;
    }),
  );
}
const plainChains = await refreshChains(false);
const boundChains = await refreshChains(true);
const refreshProofs = Array.from({ length: total }, () => refresher.sign({ method: 'POST', url: tokenEndpoint }));
let refreshProof = 0;
/** One turn: every chain refreshed at once, each keeping the token it gets back. */
async function refreshTurn(chains: string[], withProof: boolean): Promise<void> {
  await Promise.all(
    chains.map(async (token, chain) => {
      const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
      if (withProof) headers.dpop = refreshProofs[refreshProof++]!;
      const body = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token, client_id: 'bench-public' });
      const response = await refreshServer.handle(new Request(tokenEndpoint, { method: 'POST', headers, body }));
      const answer = (await response.json()) as { refresh_token?: string };
      if (!answer.refresh_token) throw new Error(`the refresh was refused: ${JSON.stringify(answer)}`);
      chains[chain] = answer.refresh_token;
    }),
  );
}
const nonces = new DpopNonces(NONCE_KEY);
const jwks = clients.map((client) => client.pair.publicJwk as Record<string, unknown>);

function passed(result: { ok: boolean }): void {
  if (!result.ok) throw new Error(`refused: ${JSON.stringify(result)}`);
}
function checkKnown(protection: ProtectedResource, authorization: string, dpop?: string): void {
  const result = protection.checkKnown!({ authorization, dpop, method: 'POST', target: '/mcp', request: {} });
  if (!result?.ok) throw new Error(`the guard did not take a token it verified before: ${JSON.stringify(result)}`);
}

interface Row {
  name: string;
  /** Operation `i` of the row's `n`-th use (fresh proofs go on from where the last use stopped). */
  run(i: number): void | Promise<void>;
  /** `run` does TURN operations at once, in one turn, and is called for every TURN-th `i`. */
  turns?: boolean;
}
let fresh = 0;
let freshNonce = 0;
const FLOOR = "floor: crypto.verify of the proof's ES256 signature, the key object at hand";
const TOKEN_CHECK = 'DpopProofVerifier.check as the token endpoint calls it (htu), a known key';
const GUARD_CHECK = 'DpopProofVerifier.check as the guard calls it (htu, ath), a known key';
const GUARD_DPOP = 'guard: a bound token verified before, with a new proof (checkKnown)';
const GUARD_BEARER = 'guard: a Bearer token verified before (checkKnown)';
const GUARD_NONCE = 'guard with nonces required: a bound token verified before, with a new proof';
const STORE_RECORD = `token endpoint's replay record: useAssertionId on SQLite, ${TURN} in one turn (a commit of their own)`;
const REFRESH_PLAIN = `token endpoint: a refresh grant on SQLite, ${TURN} in one turn (its handler, no HTTP)`;
const REFRESH_DPOP = 'token endpoint: the same with DPoP (a new proof; the token bound to its key)';
const rows: Row[] = [
  { name: FLOOR, run: (i) => void verify('sha256', signed[i]!.data, { key: signed[i]!.key, dsaEncoding: 'ieee-p1363' }, signed[i]!.signature) },
  { name: TOKEN_CHECK, run: (i) => passed(known.check({ proof: atToken[i]!.proof, method: 'POST', url: tokenEndpoint, now: NOW })) },
  {
    name: GUARD_CHECK,
    run: (i) => passed(known.check({ proof: atGuard[i]!.proof, method: 'POST', url: resource, now: NOW, accessToken: atGuard[i]!.client.token })),
  },
  {
    name: 'DpopProofVerifier.check, a key not seen before (imported, thumbprinted)',
    run: (i) => passed(forgetful.check({ proof: atToken[i]!.proof, method: 'POST', url: tokenEndpoint, now: NOW })),
  },
  {
    name: GUARD_DPOP,
    run: () => {
      const { client, proof } = toGuard[fresh++]!;
      checkKnown(guard, `DPoP ${client.token}`, proof);
    },
  },
  { name: GUARD_BEARER, run: (i) => checkKnown(guard, `Bearer ${clients[i % CLIENTS]!.bearer}`) },
  {
    name: GUARD_NONCE,
    run: () => {
      const { client, proof } = toNonceGuard[freshNonce++]!;
      checkKnown(nonceGuard, `DPoP ${client.token}`, proof);
    },
  },
  { name: REFRESH_PLAIN, turns: true, run: () => refreshTurn(plainChains, false) },
  { name: REFRESH_DPOP, turns: true, run: () => refreshTurn(boundChains, true) },
  { name: 'step: parse the proof (DpopProofVerifier.unverifiedClaims, a known header)', run: (i) => void known.unverifiedClaims(atGuard[i]!.proof) },
  {
    name: "step, a new key only: import the proof's JWK (createPublicKey)",
    run: (i) => void createPublicKey({ key: jwks[i % CLIENTS] as JsonWebKey, format: 'jwk' }),
  },
  { name: 'step, a new key only: its thumbprint (jwkThumbprint)', run: (i) => void jwkThumbprint(jwks[i % CLIENTS]!) },
  { name: 'step, a new URL only: its target URI (dpopTargetUri)', run: () => void dpopTargetUri(resource) },
  { name: "step: ath, the token's SHA-256 (accessTokenHash)", run: (i) => void accessTokenHash(clients[i % CLIENTS]!.token) },
  { name: 'step: the replay key, SHA-256 of jkt and jti (hashSecret)', run: (i) => void hashSecret(`dpop.${clients[i % CLIENTS]!.signer.jkt}.${i}`) },
  { name: "step: the guard's replay record (ReplayCache.use)", run: () => void replays.use(randomToken(32), NOW, NOW + 360, NOW) },
  { name: 'step: a nonce (DpopNonces.check)', run: () => void nonces.check(nonce, NOW) },
  {
    name: STORE_RECORD,
    turns: true,
    run: async () => {
      const used = await Promise.all(Array.from({ length: TURN }, () => sqlite.useAssertionId(randomToken(32), NOW + 360, NOW)));
      if (!used.every(Boolean)) throw new Error('a fresh replay record was refused');
    },
  },
];

/** CPU µs of operations `from` to `from + CHUNK` of one row. */
async function measure(row: Row, from: number): Promise<number> {
  const before = process.cpuUsage();
  if (row.turns) for (let i = from; i < from + CHUNK; i += TURN) await row.run(i);
  else for (let i = from; i < from + CHUNK; i++) void row.run(i);
  const spent = process.cpuUsage(before);
  return spent.user + spent.system;
}

// A round goes through the rows a chunk at a time, so that every row meets the same moments of
// the machine's other load; each row's µs per operation is its total over the round.
for (const row of rows) for (let from = 0; from < OPS; from += CHUNK) await measure(row, from);
const samples = new Map(rows.map((row) => [row.name, [] as number[]]));
for (let round = 0; round < ROUNDS; round++) {
  const spent = new Map(rows.map((row) => [row.name, 0]));
  for (let from = 0, turn = round; from < OPS; from += CHUNK, turn++) {
    for (let i = 0; i < rows.length; i++) {
      const row = rows[(i + turn) % rows.length]!;
      spent.set(row.name, spent.get(row.name)! + (await measure(row, from)));
    }
  }
  for (const [name, micros] of spent) samples.get(name)!.push(micros / OPS);
}
await sqlite.close();
await refreshStore.close();
rmSync(dir, { recursive: true, force: true });

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const cpu = (name: string) => median(samples.get(name)!);
/** The median over the rounds of `row` minus `base` in the same round. */
const above = (row: string, base: string) => median(samples.get(row)!.map((value, round) => value - samples.get(base)![round]!));
console.log(
  `\nDPoP proof checks: CPU µs per operation (${ROUNDS} rounds of ${OPS} operations per row, the rows taking turns ${CHUNK} at a time; medians, and the rounds' range)\n`,
);
console.log('| operation | µs | range |');
console.log('|---|---:|---:|');
for (const row of rows) {
  const values = samples.get(row.name)!;
  console.log(`| ${row.name} | ${cpu(row.name).toFixed(1)} | ${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)} |`);
}
// Above the floor: what a DPoP check costs beside the one P-256 verification it cannot do without.
const guardAdds = median(samples.get(GUARD_DPOP)!.map((value, round) => value - samples.get(GUARD_BEARER)![round]! - samples.get(FLOOR)![round]!));
const refreshAdds = median(samples.get(REFRESH_DPOP)!.map((value, round) => value - samples.get(REFRESH_PLAIN)![round]! - samples.get(FLOOR)![round]!));
const nonceAdds = median(samples.get(GUARD_NONCE)!.map((value, round) => value - samples.get(GUARD_BEARER)![round]! - samples.get(FLOOR)![round]!));
console.log(`
The floor: ${cpu(FLOOR).toFixed(1)} µs. Above it (medians of each round's difference):
- the token endpoint's check: ${above(TOKEN_CHECK, FLOOR).toFixed(1)} µs, and its replay record in SQLite ${cpu(STORE_RECORD).toFixed(1)} µs more with a commit of its own;
- a refresh grant with DPoP against one without: ${above(REFRESH_DPOP, REFRESH_PLAIN).toFixed(1)} µs more, ${refreshAdds.toFixed(1)} µs above the floor (the proof's check, its replay record in the rotation's commit, the rest);
- the guard's check: ${above(GUARD_CHECK, FLOOR).toFixed(1)} µs;
- the guard's whole answer, DPoP against Bearer: ${guardAdds.toFixed(1)} µs above the floor (target < 20); with nonces required ${nonceAdds.toFixed(1)} µs.`);
