/**
 * `context-auth serve` as people run it, as a server under test: the package's bin (the built
 * CLI) on a new SQLite data folder, its defaults (the audit log on stderr and in the store, its
 * own thread), its stdout and stderr to a file, as a service manager would keep them. Only the
 * per-address rate limits are raised out of reach, since every request of a bench comes from
 * 127.0.0.1 (as for every peer). Its CPU time and RSS are read from /proc (every thread), so the
 * process runs nothing of the bench.
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, openSync, readFileSync, closeSync, watch } from 'node:fs';
import { join } from 'node:path';
import { Browser, pkcePair, signInAndConsent } from '../../test/helpers/harness.js';
import { CLI, cli, freePort, tempDataFolder } from '../../test/e2e/serve-process.js';
import { processCpuSeconds } from '../process-cpu.js';
import type { Usage } from './child.js';
import type { Running } from './process.js';

const USER = { username: 'bench', password: 'bench password 123' };
const CALLBACK = 'http://127.0.0.1:9/callback';
/** The limits raised, not turned off: their buckets are still kept and spent. */
export const RAISED_LIMITS = ['register', 'token', 'sign-in'].flatMap((name) => ['--rate-limit', `${name}=1000000/second,burst=1000000`]);

export interface RunningServe extends Running {
  /** Where its stdout and stderr go. */
  logFile: string;
  stop(): Promise<void>;
}

export interface ServeOptions {
  /** Flags for node itself (`--cpu-prof`, to see where the time goes). */
  nodeFlags?: string[];
  /** Another build's CLI (its dist/cli/main.js), to measure it beside this one. */
  cli?: string;
}

/** RSS of process `pid`, bytes, from /proc (every thread shares it). */
export const rssOf = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

/**
 * Starts `serve` with `flags` (after --port and --data), pinned with all its threads to core 0
 * when `pin`, waits until it listens, and seeds `count` refresh chains (one sign-in, the remembered
 * consent for the rest.
 */
export async function startServePeer(name: string, flags: string[], count: number, pin: boolean, options: ServeOptions = {}): Promise<RunningServe> {
  const { nodeFlags = [], cli: main = CLI } = options;
  if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first (npm run bench does)`);
  const data = tempDataFolder();
  const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
  if (added.code !== 0) throw new Error(added.stderr);
  const port = await freePort();
  const logFile = join(data, 'serve.log');
  const log = openSync(logFile, 'a');
  const command = [process.execPath, ...nodeFlags, main, 'serve', '--port', String(port), '--data', data, ...RAISED_LIMITS, ...flags];
  const [file, ...args] = pin ? ['taskset', '-c', '0', ...command] : command;
  const child = spawn(file!, args, { stdio: ['ignore', log, log] });
  closeSync(log);
  const issuer = await listening(logFile, child);
  const pid = child.pid!;
  // The server thread starts after the process: pin every thread now that all are there.
  if (pin) execFileSync('taskset', ['-a', '-cp', '0', String(pid)], { stdio: 'ignore' });
  const { clientId, refreshTokens } = await seedChains(issuer, count);
  const usage = async (): Promise<Usage> => ({ cpu: processCpuSeconds(pid) * 1e6, rss: rssOf(pid) });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  };
  return { name, port, clientId, refreshTokens, child, usage, logFile, stop };
}

/** The issuer `serve` printed, once its log says it listens; rejects if it exits first. */
function listening(logFile: string, child: ReturnType<typeof spawn>): Promise<string> {
  return new Promise((resolve, reject) => {
    const watcher = watch(logFile, () => check());
    const done = (settle: () => void) => {
      watcher.close();
      child.off('exit', exited);
      settle();
    };
    const exited = (code: number | null) => done(() => reject(new Error(`serve exited (${code}) before it listened:\n${readFileSync(logFile, 'utf8')}`)));
    const check = () => {
      const text = readFileSync(logFile, 'utf8');
      const issuer = /issuer\s+(\S+)/.exec(text)?.[1];
      if (issuer && text.includes('Listening on')) done(() => resolve(issuer));
    };
    child.once('exit', exited);
    check();
  });
}

/** A public client and one live refresh token per chain, as a person's browser gets them: one sign-in, then the remembered consent. */
export async function seedChains(issuer: string, count: number): Promise<{ clientId: string; refreshTokens: string[] }> {
  const registration = await fetch(`${issuer}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'bench',
      redirect_uris: [CALLBACK],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
    }),
  });
  if (registration.status !== 201) throw new Error(`register: ${registration.status} ${await registration.text()}`);
  const { client_id: clientId } = (await registration.json()) as { client_id: string };
  const browser = new Browser((path, init) => fetch(new URL(path, issuer), init));
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
    const callback = await signInAndConsent(browser, await browser.fetch(`/authorize?${query}`), USER, 'approve', issuer);
    const code = callback.searchParams.get('code');
    if (!code) throw new Error(`no code: ${callback}`);
    const tokens = await fetch(`${issuer}/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: CALLBACK, client_id: clientId }),
    });
    if (tokens.status !== 200) throw new Error(`token: ${tokens.status} ${await tokens.text()}`);
    refreshTokens.push(((await tokens.json()) as { refresh_token: string }).refresh_token);
  }
  return { clientId, refreshTokens };
}
