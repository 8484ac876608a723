/** Runs the built CLI (`dist/cli/main.js`) as a child process, the way a user runs it. */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Browser, authorizeUrl, parseForm, pkcePair } from '../helpers/harness.js';

export const CLI = resolve(import.meta.dirname, '../../dist/cli/main.js');

export function tempDataFolder(): string {
  return mkdtempSync(join(tmpdir(), 'ca-e2e-'));
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** Runs one CLI command to completion. */
export async function cli(args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: 'pipe' });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(input ?? '');
  // 'close', not 'exit': the output may still be in the pipes when the process has exited.
  const [code] = (await once(child, 'close')) as [number];
  return { code, stdout, stderr };
}

export interface RunningServer {
  issuer: string;
  process: ChildProcessWithoutNullStreams;
  output(): string;
  /**
   * Resolves once the output shows `pattern`: a log line a request caused reaches the pipe a
   * moment after the response, so a test that just got its answer must wait for the line.
   */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<void>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `context-auth serve` and waits for it to say where it listens. */
export async function startServe(args: string[]): Promise<RunningServer> {
  const child = spawn(process.execPath, [CLI, 'serve', ...args], { stdio: 'pipe' });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const issuer = await new Promise<string>((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${stdout}\n${stderr}`)), 15_000);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /issuer\s+(\S+)/.exec(stdout);
      if (match && stdout.includes('Listening on')) {
        clearTimeout(timer);
        resolvePromise(match[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}:\n${stdout}\n${stderr}`));
    });
  });
  return {
    issuer,
    process: child,
    output: () => stdout + stderr,
    waitForOutput: async (pattern, timeoutMs = 5000) => {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(stdout + stderr)) {
        if (Date.now() > deadline) throw new Error(`serve did not print ${pattern} within ${timeoutMs} ms:\n${stdout}\n${stderr}`);
        await new Promise((resolveWait) => setTimeout(resolveWait, 20));
      }
    },
    stop: async (signal = 'SIGTERM') => {
      // Already gone (exited, or killed by a signal, when exitCode stays null): 'exit' will not come again.
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const [code] = (await once(child, 'exit')) as [number | null];
      return code;
    },
  };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliRunOptions {
  /** Added to (and overriding) the test's own environment. */
  env?: Record<string, string>;
  /** Written to stdin, which is then closed. */
  input?: string;
  /** Killed (SIGKILL) after this long, so a CLI waiting for a browser cannot hang the suite. Default 30 s. */
  timeoutMs?: number;
}

export interface RunningCli {
  process: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `pattern` in stderr (as output arrives); rejects if the CLI exits first. */
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** The CLI's exit, with everything it printed. */
  exit: Promise<CliResult>;
}

/** Starts one CLI command with extra environment, and lets the test read its output while it runs. */
export function startCli(args: string[], options: CliRunOptions = {}): RunningCli {
  return startNode([CLI, ...args], options);
}

/** Starts `node` with these arguments (a script and its own), as startCli does the CLI. */
export function startNode(args: string[], options: CliRunOptions = {}): RunningCli {
  const child = spawn(process.execPath, args, { stdio: 'pipe', env: { ...process.env, ...options.env } });
  let stdout = '';
  let stderr = '';
  let closed = false;
  const watchers = new Set<() => void>();
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    for (const watcher of [...watchers]) watcher();
  });
  child.stdin.end(options.input ?? '');
  const killer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
  const exit = new Promise<CliResult>((resolvePromise) => {
    child.once('close', (code, signal) => {
      closed = true;
      clearTimeout(killer);
      for (const watcher of [...watchers]) watcher();
      resolvePromise({ code: code ?? (signal ? 128 : -1), stdout, stderr });
    });
  });
  return {
    process: child,
    stdout: () => stdout,
    stderr: () => stderr,
    exit,
    waitForStderr: (pattern, timeoutMs = 15_000) =>
      new Promise((resolvePromise, reject) => {
        const check = (): void => {
          const match = pattern.exec(stderr);
          if (match) {
            done();
            resolvePromise(match);
          } else if (closed) {
            done();
            reject(new Error(`the CLI exited (${child.exitCode ?? child.signalCode}) before printing ${pattern}:\n${stdout}\n${stderr}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no ${pattern} on stderr within ${timeoutMs} ms:\n${stdout}\n${stderr}`));
        }, timeoutMs);
        const done = (): void => {
          clearTimeout(timer);
          watchers.delete(check);
        };
        watchers.add(check);
        check();
      }),
  };
}

/** Runs one CLI command to completion, like `cli`, with extra environment. */
export function cliWithEnv(args: string[], options: CliRunOptions = {}): Promise<CliResult> {
  return startCli(args, options).exit;
}

/**
 * The sign-in form of a new authorization request at `server`, as a browser reaches it: a public
 * client registered, /authorize followed to the interaction page, its action and csrf token read.
 */
export async function openSignInForm(server: RunningServer): Promise<{ browser: Browser; action: string; csrf: string }> {
  const registration = await fetch(`${server.issuer}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'none' }),
  });
  const { client_id } = (await registration.json()) as { client_id: string };
  const browser = new Browser((path, init) => fetch(new URL(path, server.issuer), init));
  const start = await browser.fetch(
    authorizeUrl({
      response_type: 'code',
      client_id,
      redirect_uri: 'http://127.0.0.1:9/cb',
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
    }),
  );
  const { action, csrf } = parseForm(await (await browser.fetch(start.headers.get('location')!)).text());
  return { browser, action, csrf };
}
