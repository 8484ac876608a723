/**
 * npm run bench: throughput of a light JSON-RPC request on the same server, side by side in one
 * run: unprotected; protected with valid tokens, each request carrying the next of 12,000
 * distinct tokens (more than the verifier's cache holds, so every check verifies a signature —
 * what new tokens cost) and, for context, one token repeated (a cache hit); and protected with an
 * invalid token (a JWT whose signature is wrong, and plain garbage). Rounds alternate the routes
 * so that machine noise falls on all of them alike; the table reports medians and ratios to the
 * unprotected route.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, rmSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import autocannon from 'autocannon';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONNECTIONS = 32;

const child = spawn(process.execPath, ['--import', 'tsx', resolve(import.meta.dirname, 'protected-route-server.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
const [line] = (await once(child.stdout, 'data')) as [Buffer];
const { port, tokensFile } = JSON.parse(line.toString()) as { port: number; tokensFile: string };
const tokens = JSON.parse(readFileSync(tokensFile, 'utf8')) as string[];
rmSync(dirname(tokensFile), { recursive: true });
const token = tokens[0]!;
const [header, payload] = token.split('.');
const forged = `${header}.${payload}.${Buffer.alloc(64, 7).toString('base64url')}`;

const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
interface Case {
  name: string;
  path: string;
  authorization: string | undefined;
  expect: number;
  /** Each request takes the next token of the list (one verification per request, no cache hit). */
  distinct?: boolean;
}
const cases: Case[] = [
  { name: 'unprotected', path: '/open', authorization: undefined, expect: 200 },
  { name: 'protected, distinct valid tokens', path: '/mcp', authorization: undefined, expect: 200, distinct: true },
  { name: 'protected, one valid token repeated (cache hit)', path: '/mcp', authorization: `Bearer ${token}`, expect: 200 },
  { name: 'protected, bad signature', path: '/mcp', authorization: `Bearer ${forged}`, expect: 401 },
  { name: 'protected, garbage token', path: '/mcp', authorization: 'Bearer not-a-jwt', expect: 401 },
];

async function serverCpuMicros(): Promise<number> {
  const usage = (await (await fetch(`http://127.0.0.1:${port}/cpu`)).json()) as { user: number; system: number };
  return usage.user + usage.system;
}

let next = 0;
async function measure(testCase: Case): Promise<{ rps: number; cpuPerRequest: number }> {
  const cpuBefore = await serverCpuMicros();
  const headers = { 'content-type': 'application/json', ...(testCase.authorization ? { authorization: testCase.authorization } : {}) };
  const result = await autocannon({
    url: `http://127.0.0.1:${port}${testCase.path}`,
    method: 'POST',
    connections: CONNECTIONS,
    duration: SECONDS,
    body,
    headers,
    ...(testCase.distinct
      ? {
          requests: [
            {
              setupRequest: (request: autocannon.Request) => {
                next = (next + 1) % tokens.length;
                return { ...request, headers: { ...headers, authorization: `Bearer ${tokens[next]}` } };
              },
            },
          ],
        }
      : {}),
  });
  const wrong = result.non2xx > 0 && testCase.expect === 200 ? result.non2xx : testCase.expect !== 200 ? result['2xx'] : 0;
  if (wrong > 0 || result.errors > 0) throw new Error(`${testCase.name}: ${wrong} unexpected statuses, ${result.errors} errors`);
  const cpu = (await serverCpuMicros()) - cpuBefore;
  return { rps: result.requests.average, cpuPerRequest: cpu / result.requests.total };
}

const samples = new Map(cases.map((c) => [c.name, [] as number[]]));
const cpuSamples = new Map(cases.map((c) => [c.name, [] as number[]]));
for (const testCase of cases) await measure(testCase); // warm-up: JIT, JWKS fetch, token cache
for (let round = 0; round < ROUNDS; round++) {
  // Rotate the order each round so no route always runs first or last.
  for (let i = 0; i < cases.length; i++) {
    const testCase = cases[(i + round) % cases.length]!;
    const { rps, cpuPerRequest } = await measure(testCase);
    samples.get(testCase.name)!.push(rps);
    cpuSamples.get(testCase.name)!.push(cpuPerRequest);
  }
}
child.kill('SIGTERM');

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const baseline = median(samples.get('unprotected')!);
const cpuBaseline = median(cpuSamples.get('unprotected')!);
console.log(`\nProtected route throughput (${ROUNDS} rounds × ${SECONDS}s, ${CONNECTIONS} connections, medians)\n`);
console.log('| route | requests/s | vs unprotected | target | server CPU µs/request | vs unprotected |');
console.log('|---|---:|---:|---|---:|---:|');
for (const testCase of cases) {
  const value = median(samples.get(testCase.name)!);
  const cpu = median(cpuSamples.get(testCase.name)!);
  const target = testCase.distinct ? '≥ 0.95' : testCase.expect === 200 ? '' : '≥ 1.00';
  console.log(`| ${testCase.name} | ${Math.round(value)} | ${(value / baseline).toFixed(2)} | ${target} | ${cpu.toFixed(0)} | ${(cpu / cpuBaseline).toFixed(2)} |`);
}
