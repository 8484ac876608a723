/**
 * npm run bench (memory): the resident set of `context-auth serve` on SQLite, as a busy public
 * server holds it, after BENCH_REGISTRATIONS dynamic client registrations (default 300,000) and
 * BENCH_REFRESHES refresh_token grants (default 150,000) over HTTP. Every request comes from
 * 127.0.0.1, so the per-address rate limits for registration and the token endpoint are raised
 * out of reach (`--rate-limit register=…`, as bench/storage.ts does): their buckets are still kept
 * and counted. RSS is read from /proc/<pid>/status after the load, once the server has been idle
 * BENCH_IDLE_SECONDS (default 5) so garbage collection has had its chance, and sampled once a second
 * during the load for the peak. The server is the package's bin (package.json "bin", which npm's
 * shims and `npx context-auth serve` run as `node <bin>`), with the environment the bench was given:
 * no heap flags of its own.
 *
 *   node --import tsx bench/memory.ts [--quick]   (--quick: 30,000 registrations, 15,000 refreshes)
 *   BENCH_HEAP_SNAPSHOT=1: the server is started with --heapsnapshot-signal=SIGUSR2 and writes a
 *   heap snapshot into its working directory after the idle wait (for finding what holds memory);
 *   it then runs on the main thread with the same heap limits, since the signal snapshots that one.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { Browser, pkcePair, signInAndConsent } from '../test/helpers/harness.js';
import { CLI, cli, freePort, startServe, tempDataFolder } from '../test/e2e/serve-process.js';
import { processCpuSeconds } from './process-cpu.js';

const QUICK = process.argv.includes('--quick');
const REGISTRATIONS = Number(process.env.BENCH_REGISTRATIONS ?? (QUICK ? 30_000 : 300_000));
const REFRESHES = Number(process.env.BENCH_REFRESHES ?? (QUICK ? 15_000 : 150_000));
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 5);
const CONCURRENCY = 16;
const USER = { username: 'bench', password: 'bench password 123' };
const CALLBACK = 'http://127.0.0.1:9/callback';
const RAISED_LIMITS = ['register', 'token', 'sign-in'].flatMap((name) => ['--rate-limit', `${name}=1000000/second,burst=1000000`]);

// The signal snapshots the main thread's heap, so serve is kept there, sized as its own thread would be
// (src/cli/serve-thread.ts: 1024 MB old generation, 6 MB young = semi-spaces of 2 MB).
if (process.env.BENCH_HEAP_SNAPSHOT)
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --heapsnapshot-signal=SIGUSR2 --max-old-space-size=1024 --max-semi-space-size=2`.trim();

// What npm links as the `context-auth` command is what startServe runs.
const pkg = JSON.parse(readFileSync(resolve(import.meta.dirname, '../package.json'), 'utf8')) as { bin: Record<string, string> };
if (resolve(import.meta.dirname, '..', pkg.bin['context-auth']!) !== CLI) throw new Error(`the bin is ${pkg.bin['context-auth']}, not ${CLI}`);

const rssOf = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
const mb = (bytes: number): string => (bytes / 1024 / 1024).toFixed(0);
/** RSS split as /proc/<pid>/status gives it: anonymous (heaps, malloc), file-backed (code, mapped files; reclaimable), shared memory (SQLite's -shm). */
function splitOf(pid: number): string {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string): number => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
  return `${mb(kb('RssAnon'))} / ${mb(kb('RssFile'))} / ${mb(kb('RssShmem'))}`;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
function post(port: number, path: string, type: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': type, 'content-length': Buffer.byteLength(body) } },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** The highest RSS seen by sampling once a second while load runs, and its split. */
let peak = 0;
let peakSplit = '';

/** `total` operations, CONCURRENCY at a time; returns the wall seconds taken. */
async function run(total: number, operation: (worker: number) => Promise<void>): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, worker) => {
      while (next < total) {
        next++;
        await operation(worker);
      }
    }),
  );
  return (performance.now() - started) / 1000;
}

const begun = Date.now();
const data = tempDataFolder();
const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
if (added.code !== 0) throw new Error(added.stderr);
const port = await freePort();
const server = await startServe(['--port', String(port), '--data', data, '--quiet', ...RAISED_LIMITS]);
const pid = server.process.pid!;
try {
  try {
    execFileSync('taskset', ['-acp', '0', String(pid)], { stdio: 'ignore' });
    execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  } catch {
    // no taskset: not pinned; memory does not depend on it
  }
  const origin = `http://127.0.0.1:${port}`;
  const resource = `${server.issuer}/mcp`;
  const started = rssOf(pid);
  const startedSplit = splitOf(pid);

  // One client and one signed-in grant per worker for the refreshes (untimed, not counted).
  const registration = {
    client_name: 'bench',
    redirect_uris: [CALLBACK],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
  };
  const { client_id: clientId } = JSON.parse((await post(port, '/register', 'application/json', JSON.stringify(registration))).text) as { client_id: string };
  const refreshTokens: string[] = [];
  for (let i = 0; i < CONCURRENCY; i++) {
    const browser = new Browser((path, init) => fetch(new URL(path, origin), init));
    const { verifier, challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: CALLBACK,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 's',
      resource,
    });
    const callback = await signInAndConsent(browser, await browser.fetch(`/authorize?${query}`), USER, 'approve', origin);
    const body = new URLSearchParams({
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      code_verifier: verifier,
      redirect_uri: CALLBACK,
      client_id: clientId,
      resource,
    });
    const tokens = await post(port, '/token', 'application/x-www-form-urlencoded', body.toString());
    if (tokens.status !== 200) throw new Error(`token: ${tokens.status} ${tokens.text}`);
    refreshTokens.push((JSON.parse(tokens.text) as { refresh_token: string }).refresh_token);
  }

  const signedIn = rssOf(pid);
  const signedInSplit = splitOf(pid);
  const sampler = setInterval(() => {
    const rss = rssOf(pid);
    if (rss > peak) [peak, peakSplit] = [rss, splitOf(pid)];
  }, 1000);
  const cpuBefore = processCpuSeconds(pid);
  const registerSeconds = await run(REGISTRATIONS, async (worker) => {
    const answer = await post(port, '/register', 'application/json', JSON.stringify({ ...registration, client_name: `bench ${worker}` }));
    if (answer.status !== 201) throw new Error(`register: ${answer.status} ${answer.text.slice(0, 300)}`);
  });
  const afterRegistrations = rssOf(pid);
  const afterRegistrationsSplit = splitOf(pid);
  const registerCpu = processCpuSeconds(pid) - cpuBefore;
  const refreshSeconds = await run(REFRESHES, async (worker) => {
    const body = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshTokens[worker]!, client_id: clientId }).toString();
    const answer = await post(port, '/token', 'application/x-www-form-urlencoded', body);
    if (answer.status !== 200) throw new Error(`refresh: ${answer.status} ${answer.text.slice(0, 300)}`);
    refreshTokens[worker] = (JSON.parse(answer.text) as { refresh_token: string }).refresh_token;
  });
  const afterLoad = rssOf(pid);
  const afterLoadSplit = splitOf(pid);
  const refreshCpu = processCpuSeconds(pid) - cpuBefore - registerCpu;
  clearInterval(sampler);
  agent.destroy(); // idle as a server between bursts: no connections held open
  await sleep(IDLE_SECONDS * 1000);
  const settled = rssOf(pid);
  const settledSplit = splitOf(pid);
  if (process.env.BENCH_HEAP_SNAPSHOT) {
    process.kill(pid, 'SIGUSR2');
    await sleep(15_000);
    console.log(`heap snapshot written into the server's working directory (${process.cwd()})`);
  }

  console.log(`\nMemory of \`context-auth serve\` (SQLite; rate limits raised out of reach; ${CONCURRENCY} requests at a time)\n`);
  console.log('| after | RSS (MB) | anon / file / shmem (MB) | requests/s | server CPU per request |');
  console.log('|---|---:|---:|---:|---:|');
  console.log(`| start | ${mb(started)} | ${startedSplit} | | |`);
  console.log(`| one client, ${CONCURRENCY} sign-ins (scrypt) and grants | ${mb(signedIn)} | ${signedInSplit} | | |`);
  console.log(
    `| ${REGISTRATIONS.toLocaleString('en')} registrations | ${mb(afterRegistrations)} | ${afterRegistrationsSplit} | ${(REGISTRATIONS / registerSeconds).toFixed(0)} | ${((registerCpu / REGISTRATIONS) * 1e6).toFixed(0)} µs |`,
  );
  console.log(
    `| + ${REFRESHES.toLocaleString('en')} refreshes | ${mb(afterLoad)} | ${afterLoadSplit} | ${(REFRESHES / refreshSeconds).toFixed(0)} | ${((refreshCpu / REFRESHES) * 1e6).toFixed(0)} µs |`,
  );
  console.log(`| + ${IDLE_SECONDS} s idle | ${mb(settled)} | ${settledSplit} | | |`);
  console.log(
    peak >= afterLoad
      ? `| (highest while loaded, sampled each second) | ${mb(peak)} | ${peakSplit} | | |`
      : `| (highest while loaded, sampled each second) | ${mb(afterLoad)} | ${afterLoadSplit} | | |`,
  );
  console.log(
    `\nTarget: RSS ≤ 200 MB after 300,000 registrations and 150,000 refreshes${REGISTRATIONS === 300_000 && REFRESHES === 150_000 ? '' : ' (this run used other counts)'}.`,
  );
} finally {
  await server.stop();
}
console.log(`\n(${((Date.now() - begun) / 1000).toFixed(0)} s)`);
