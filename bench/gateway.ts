/**
 * npm run bench: the gateway's cost. The same light upstream (a JSON-RPC answer from a plain Node
 * server) reached directly, and through `context-auth serve --gateway` with one valid token (the
 * guard's cached path plus one proxy hop): requests per second and p99 latency, medians of rounds
 * that alternate the two so that machine noise falls on both alike.
 *
 *   node --import tsx bench/gateway.ts      (BENCH_ROUNDS, default 3; BENCH_SECONDS, default 2)
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const CONNECTIONS = 32;
const CLI = resolve(import.meta.dirname, '../dist/cli/main.js');
const BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
const ANSWER = JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} });

const upstream = createServer((request, response) => {
  request.resume();
  request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER));
});
upstream.listen(0, '127.0.0.1');
await once(upstream, 'listening');
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`;

const data = mkdtempSync(join(tmpdir(), 'ca-bench-gateway-'));
const serve = spawn(
  process.execPath,
  [CLI, 'serve', '--port', '0', '--data', data, '--quiet', '--rate-limit', 'token=off', '--rate-limit', 'gateway=off', '--gateway', `/up=${upstreamUrl}`],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
let banner = '';
const issuer = await new Promise<string>((resolveIssuer, reject) => {
  serve.stdout.on('data', (chunk: Buffer) => {
    banner += chunk.toString();
    const match = /issuer\s+(\S+)/.exec(banner);
    if (match && banner.includes('Listening on')) resolveIssuer(match[1]!);
  });
  serve.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
});

try {
  const added = spawnSync(process.execPath, [CLI, 'clients', 'add', '--data', data, '--grant-type', 'client_credentials', '--name', 'bench'], {
    encoding: 'utf8',
  });
  const client = JSON.parse(added.stdout) as { client_id: string; client_secret: string };
  const tokenResponse = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource: `${issuer}/up` }),
  });
  const { access_token: token } = (await tokenResponse.json()) as { access_token: string };

  const rows = {
    'upstream alone': { url: upstreamUrl, headers: {} as Record<string, string> },
    'through the gateway': { url: `${issuer}/up`, headers: { authorization: `Bearer ${token}` } },
  };
  const results = new Map<string, { rps: number[]; p99: number[] }>(Object.keys(rows).map((name) => [name, { rps: [], p99: [] }]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, row] of Object.entries(rows)) {
      const run = await autocannon({
        url: row.url,
        method: 'POST',
        connections: CONNECTIONS,
        duration: SECONDS,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...row.headers },
        body: BODY,
      });
      if (run.non2xx > 0 || run.errors > 0) throw new Error(`${name}: ${run.non2xx} answers not 2xx, ${run.errors} errors`);
      results.get(name)!.rps.push(run.requests.average);
      results.get(name)!.p99.push(run.latency.p99);
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const alone = median(results.get('upstream alone')!.rps);
  console.log(`\nThe gateway: a light JSON-RPC request, ${CONNECTIONS} connections, medians of ${ROUNDS} rounds of ${SECONDS} s\n`);
  console.log('| route | requests/s | p99 ms | × upstream alone |\n|---|---:|---:|---:|');
  for (const [name, { rps, p99 }] of results) console.log(`| ${name} | ${Math.round(median(rps))} | ${median(p99)} | ${(median(rps) / alone).toFixed(2)} |`);
} finally {
  serve.kill('SIGTERM');
  await once(serve, 'exit');
  upstream.close();
  rmSync(data, { recursive: true, force: true });
}
