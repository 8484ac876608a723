/**
 * npm run bench: the gateway's cost, side by side in one run, on one light JSON-RPC request:
 *  - the upstream alone (a plain Node server in a process of its own, gateway-upstream.ts);
 *  - serve's own /mcp: the guard and the demo MCP server, no hop (what the guard costs, and a
 *    context server's work);
 *  - through `context-auth serve --gateway /up=<the upstream>`: the guard plus one proxy hop; and
 *    through /events, to the same upstream answering with an event stream of the one message, as
 *    the MCP SDKs' servers answer a POST by default.
 * Requests/s, p99, and the CPU per request of the process that answers (serve's user + system
 * time over the measured window, both its threads, from /proc/<pid>/stat; the upstream's own on
 * its row), medians of rounds that rotate the rows so that machine noise falls on all alike, each
 * measurement after BENCH_WARM_UP_SECONDS of the same load, unmeasured.
 *
 * BENCH_BASELINE=<another build's cli/main.js> runs a second serve from that build beside this
 * one, with its own /mcp and gateway rows: a change against the code before it, in one run.
 *
 *   node --import tsx bench/gateway.ts   (BENCH_ROUNDS, default 3; BENCH_SECONDS, default 2)
 */
import { spawn, spawnSync, type ChildProcessByStdio } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import autocannon from 'autocannon';
import { processCpuSeconds } from './process-cpu.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const WARM_UP_SECONDS = Number(process.env.BENCH_WARM_UP_SECONDS ?? 1);
const CONNECTIONS = 32;
const CLI = resolve(import.meta.dirname, '../dist/cli/main.js');
const BASELINE = process.env.BENCH_BASELINE ? resolve(process.env.BENCH_BASELINE) : undefined;
const BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });

type Child = ChildProcessByStdio<null, Readable, null>;

interface Row {
  name: string;
  /** The build whose serve answers ('' for this one), and what the row is of it. */
  build?: string;
  kind?: 'mcp' | 'gateway' | 'events';
  url: string;
  authorization?: string;
  /** The process whose CPU the row reports: the one that answers. */
  pid: number;
}

interface Serve {
  child: Child;
  issuer: string;
  data: string;
  /** A client_credentials token of this server for `path`'s resource. */
  token(path: string): Promise<string>;
}

const children: Child[] = [];
const folders: string[] = [];

const upstream = spawn(process.execPath, ['--import', 'tsx', resolve(import.meta.dirname, 'gateway-upstream.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
children.push(upstream);
const [portLine] = (await once(upstream.stdout, 'data')) as [Buffer];
const upstreamOrigin = `http://127.0.0.1:${portLine.toString().trim()}`;
const upstreamUrl = `${upstreamOrigin}/mcp`;

/** `context-auth serve` of the build at `cli`, with two gateway paths to the upstream, /up (JSON) and /events; rate limits off (one token's subject sends every request). */
async function startServe(cli: string): Promise<Serve> {
  const data = mkdtempSync(join(tmpdir(), 'ca-bench-gateway-'));
  folders.push(data);
  const args = [cli, 'serve', '--port', '0', '--data', data, '--quiet', '--rate-limit', 'token=off', '--rate-limit', 'gateway=off'];
  const child = spawn(process.execPath, [...args, '--gateway', `/up=${upstreamUrl}`, '--gateway', `/events=${upstreamOrigin}/events`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  let banner = '';
  const issuer = await new Promise<string>((resolveIssuer, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      banner += chunk.toString();
      const match = /issuer\s+(\S+)/.exec(banner);
      if (match && banner.includes('Listening on')) resolveIssuer(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`serve (${cli}) exited with ${code}`)));
  });
  const added = spawnSync(process.execPath, [cli, 'clients', 'add', '--data', data, '--grant-type', 'client_credentials', '--name', 'bench'], {
    encoding: 'utf8',
  });
  const client = JSON.parse(added.stdout) as { client_id: string; client_secret: string };
  const token = async (path: string): Promise<string> => {
    const answer = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', resource: `${issuer}${path}` }),
    });
    const body = (await answer.json()) as { access_token?: string };
    if (!body.access_token) throw new Error(`no token for ${path}: ${JSON.stringify(body)}`);
    return body.access_token;
  };
  return { child, issuer, data, token };
}

function load(row: Row, seconds: number): Promise<autocannon.Result> {
  return autocannon({
    url: row.url,
    method: 'POST',
    connections: CONNECTIONS,
    duration: seconds,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(row.authorization ? { authorization: row.authorization } : {}),
    },
    body: BODY,
  });
}

async function measure(row: Row): Promise<{ rps: number; p99: number; cpuPerRequest: number }> {
  await load(row, WARM_UP_SECONDS);
  const cpuBefore = processCpuSeconds(row.pid);
  const run = await load(row, SECONDS);
  const cpu = processCpuSeconds(row.pid) - cpuBefore;
  if (run.non2xx > 0 || run.errors > 0) throw new Error(`${row.name}: ${run.non2xx} answers not 2xx, ${run.errors} errors`);
  return { rps: run.requests.average, p99: run.latency.p99, cpuPerRequest: (cpu * 1e6) / run.requests.total };
}

try {
  const builds: [string, string][] = [['', CLI], ...(BASELINE ? [['baseline: ', BASELINE] as [string, string]] : [])];
  const rows: Row[] = [{ name: 'upstream alone', url: upstreamUrl, pid: upstream.pid! }];
  for (const [label, cli] of builds) {
    const serve = await startServe(cli);
    const pid = serve.child.pid!;
    const row = async (kind: 'mcp' | 'gateway' | 'events', name: string, path: string): Promise<Row> => ({
      name: `${label}${name}`,
      build: label,
      kind,
      url: `${serve.issuer}${path}`,
      authorization: `Bearer ${await serve.token(path)}`,
      pid,
    });
    rows.push(
      await row('mcp', 'serve /mcp (guard + demo server, no hop)', '/mcp'),
      await row('gateway', 'through the gateway (guard + one hop)', '/up'),
      await row('events', 'through the gateway, answered as an event stream', '/events'),
    );
  }
  // Every row once before the rounds: the JIT, the verifier's JWKS and the upstream connections are warm when they start.
  for (const row of rows) await load(row, WARM_UP_SECONDS);
  const samples = new Map(rows.map((row) => [row.name, { rps: [] as number[], p99: [] as number[], cpu: [] as number[] }]));
  for (let round = 0; round < ROUNDS; round++) {
    // Rotated each round, so that no row always runs first or last.
    for (let i = 0; i < rows.length; i++) {
      const row = rows[(i + round) % rows.length]!;
      const { rps, p99, cpuPerRequest } = await measure(row);
      const sample = samples.get(row.name)!;
      sample.rps.push(rps);
      sample.p99.push(p99);
      sample.cpu.push(cpuPerRequest);
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const figures = new Map(
    rows.map((row) => [
      row.name,
      { rps: median(samples.get(row.name)!.rps), p99: median(samples.get(row.name)!.p99), cpu: median(samples.get(row.name)!.cpu) },
    ]),
  );
  console.log(`\nThe gateway: a light JSON-RPC request, ${CONNECTIONS} connections, medians of ${ROUNDS} rounds of ${SECONDS} s\n`);
  console.log('| route | requests/s | p99 ms | CPU µs/request (the process answering) |\n|---|---:|---:|---:|');
  for (const row of rows) {
    const { rps, p99, cpu } = figures.get(row.name)!;
    console.log(`| ${row.name} | ${Math.round(rps)} | ${p99} | ${cpu.toFixed(0)} |`);
  }
  const of = (build: string, kind: Row['kind']) => figures.get(rows.find((row) => row.build === build && row.kind === kind)!.name)!;
  const signed = (micros: number) => `${micros >= 0 ? '+' : '−'}${Math.abs(micros).toFixed(0)} µs`;
  console.log('');
  for (const [label] of builds) {
    const mcp = of(label, 'mcp');
    for (const kind of ['gateway', 'events'] as const) {
      const gateway = of(label, kind);
      console.log(
        `${label || 'this build: '}${kind === 'gateway' ? 'the gateway' : 'the gateway, an event stream,'} against /mcp: ${(gateway.rps / mcp.rps).toFixed(2)} × the requests/s, ${(gateway.cpu / mcp.cpu).toFixed(2)} × serve's CPU per request (${signed(gateway.cpu - mcp.cpu)}).`,
      );
    }
  }
  if (BASELINE) {
    for (const kind of ['mcp', 'gateway', 'events'] as const) {
      const [now, before] = [of('', kind), of('baseline: ', kind)];
      console.log(
        `this build against the baseline, ${kind === 'mcp' ? '/mcp' : kind === 'gateway' ? 'through the gateway' : 'an event stream through the gateway'}: ${(now.rps / before.rps).toFixed(2)} × the requests/s, ${(now.cpu / before.cpu).toFixed(2)} × the CPU per request.`,
      );
    }
  }
} finally {
  for (const child of children.reverse()) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
}
