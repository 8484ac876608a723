/**
 * npm run bench (observability cost): what metrics and the audit store cost a busy server. Two
 * real `context-auth serve` processes on SQLite, one with `--metrics` and the audit events kept in
 * the store (the default), one with neither (`--audit-retention 0`), both pinned to core 0 (the
 * load generator to core 1), refresh grants in closed loops, rounds interleaved with the order
 * rotated each round. Server CPU per grant is the serve process's own CPU time (all its threads,
 * from /proc) over the grants it answered; the table reports medians and the ratio on / off.
 *
 *   node --import tsx bench/observability-cost.ts [--quick]   (--quick: 3 rounds of 3 s)
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Browser, pkcePair, signInAndConsent } from '../test/helpers/harness.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from '../test/e2e/serve-process.js';
import { chains } from './peers/child.js';
import { closeConnections, refresh, type Running } from './peers/process.js';
import { interleaved, pinLoadGenerator, type Sample } from './peers/rounds.js';

const QUICK = process.argv.includes('--quick');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 3 : 7));
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 3 : 8));
const WARMUP_SECONDS = QUICK ? 2 : 3;
const USER = { username: 'bench', password: 'bench password 123' };
const CALLBACK = 'http://127.0.0.1:9/callback';
/** Every request comes from 127.0.0.1: the limits are raised out of reach, not turned off, as bench/storage.ts does. */
const RAISED_LIMITS = ['register', 'token', 'sign-in'].flatMap((name) => ['--rate-limit', `${name}=1000000/second,burst=1000000`]);
/** Linux counts a process's CPU in clock ticks, 100 per second. */
const TICK_MICROS = 10_000;

const PIN = pinLoadGenerator();

/** User + system CPU of every thread of the process, µs (serve runs on a worker thread). */
function processCpu(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MICROS;
}

/** A public client and one live refresh token per chain: one sign-in, then the remembered consent for the rest. */
async function seedGrants(server: RunningServer, count: number): Promise<{ clientId: string; refreshTokens: string[] }> {
  const origin = server.issuer;
  const registration = await fetch(`${origin}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'bench',
      redirect_uris: [CALLBACK],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
    }),
  });
  const { client_id: clientId } = (await registration.json()) as { client_id: string };
  const browser = new Browser((path, init) => fetch(new URL(path, origin), init));
  const refreshTokens: string[] = [];
  for (let i = 0; i < count; i++) {
    const { verifier, challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: CALLBACK,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 's',
    });
    const callback = await signInAndConsent(browser, await browser.fetch(`/authorize?${query}`), USER, 'approve', origin);
    const code = callback.searchParams.get('code');
    if (!code) throw new Error(`no code: ${callback}`);
    const tokens = await fetch(`${origin}/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: CALLBACK, client_id: clientId }),
    });
    if (tokens.status !== 200) throw new Error(`token: ${tokens.status} ${await tokens.text()}`);
    refreshTokens.push(((await tokens.json()) as { refresh_token: string }).refresh_token);
  }
  return { clientId, refreshTokens };
}

/** `serve` on a new SQLite data folder with `flags`, pinned to core 0, as the rounds expect a server. */
async function startServer(name: string, flags: string[]): Promise<{ running: Running; server: RunningServer }> {
  const data = tempDataFolder();
  const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
  if (added.code !== 0) throw new Error(added.stderr);
  const server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet', ...RAISED_LIMITS, ...flags]);
  const pid = server.process.pid!;
  if (PIN) execFileSync('taskset', ['-a', '-cp', '0', String(pid)], { stdio: 'ignore' });
  const { clientId, refreshTokens } = await seedGrants(server, chains());
  const port = Number(new URL(server.issuer).port);
  const running: Running = { name, port, clientId, refreshTokens, child: server.process, usage: async () => ({ cpu: processCpu(pid), rss: 0 }) };
  return { running, server };
}

const on = await startServer('metrics + audit store', ['--metrics']);
const off = await startServer('neither', ['--audit-retention', '0']);
let results: Map<string, Sample>;
try {
  results = await interleaved(
    [on.running, off.running],
    async (server, chain) => void (server.refreshTokens[chain] = await refresh(server, server.refreshTokens[chain]!)),
    { rounds: ROUNDS, seconds: SECONDS, warmupSeconds: WARMUP_SECONDS },
  );
} finally {
  closeConnections();
  await Promise.all([on.server.stop(), off.server.stop()]);
}

const withBoth = results.get(on.running.name)!;
const without = results.get(off.running.name)!;
const ratio = withBoth.cpuMs / without.cpuMs;
console.log(
  `\nObservability cost: refresh grants through \`context-auth serve\` on SQLite (${ROUNDS} rounds of ${SECONDS} s, ${chains()} chains, medians${PIN ? '; server on core 0, load on core 1' : ''})\n`,
);
console.log('| serve | grants/s | server CPU per grant (µs) |');
console.log('|---|---:|---:|');
for (const [name, sample] of [
  [on.running.name, withBoth],
  [off.running.name, without],
] as const) {
  console.log(`| ${name} | ${sample.opsPerSecond.toFixed(0)} | ${(sample.cpuMs * 1000).toFixed(0)} |`);
}
console.log(`\nCPU per grant, on / off: ${ratio.toFixed(3)} (${((ratio - 1) * 100).toFixed(1)}%)`);
process.exit(0);
