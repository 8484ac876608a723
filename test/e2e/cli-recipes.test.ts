/**
 * The recipes of docs/cli.md, run as written: each block marked `<!-- recipe NAME: terminal N -->`
 * is what a person types in terminal N, run by bash in a folder of its own, in order. A terminal
 * before the last runs something that keeps running (`serve`, `workload-issuer`): the next one
 * starts once it says where it listens. The last one's output is the recipe's result, checked
 * here; then the others are stopped with Ctrl-C (SIGINT to their process group), as a person
 * would, and must say so and end cleanly.
 *
 * What differs from a person's machine, and only this: `npx context-auth` is the built CLI; ports
 * 8080 and 8090 are free ports; the data folder and the credentials file are the test's own
 * (CONTEXT_AUTH_DATA, CONTEXT_AUTH_CREDENTIALS). Run `npx tsc -p tsconfig.build.json` first.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { CLI, cli, freePort, tempDataFolder } from './serve-process.js';

const DOC = readFileSync(resolve(import.meta.dirname, '../../docs/cli.md'), 'utf8');

/** The terminals of a recipe, in order. */
function recipe(name: string): string[] {
  const blocks = [...DOC.matchAll(/<!-- recipe ([\w-]+): terminal (\d+) -->\n```sh\n([\s\S]*?)\n```/g)].filter((m) => m[1] === name);
  assert.ok(blocks.length > 0, `docs/cli.md has no recipe ${name}`);
  assert.deepEqual(
    blocks.map((m) => Number(m[2])),
    blocks.map((_, i) => i + 1),
    `the terminals of ${name} are numbered 1, 2, … in order`,
  );
  return blocks.map((m) => m[3]!);
}

/** `npx context-auth …` as the built CLI; anything else npx is asked for is refused, not fetched. */
const NPX = `npx() { if [ "$1" = context-auth ]; then shift; node "$CONTEXT_AUTH_CLI" "$@"; else echo "npx $1 is not in the recipe's world" >&2; return 127; fi; }\n`;

interface Terminal {
  child: ChildProcess;
  output(): string;
}

function openTerminal(script: string, folder: string, env: NodeJS.ProcessEnv): Terminal {
  // A process group of its own, so that Ctrl-C reaches bash and what it runs, as at a terminal.
  const child = spawn('bash', ['-e', '-c', `${NPX}${script}`], { cwd: folder, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

/** Resolves when the terminal says it listens; rejects if it ends first. */
function listening(terminal: Terminal): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const check = () => {
      if (!/^Listening on /m.test(terminal.output())) return;
      terminal.child.stdout!.off('data', check);
      terminal.child.off('close', ended);
      resolvePromise();
    };
    const ended = (code: number | null) => reject(new Error(`the terminal ended (${code}) before it listened:\n${terminal.output()}`));
    terminal.child.stdout!.on('data', check);
    terminal.child.once('close', ended);
    check();
  });
}

/** Stops a terminal with Ctrl-C; its exit code and all it printed. */
async function interrupt(terminal: Terminal): Promise<{ code: number; output: string }> {
  const closed = once(terminal.child, 'close');
  process.kill(-terminal.child.pid!, 'SIGINT');
  const [code] = (await closed) as [number];
  return { code, output: terminal.output() };
}

/**
 * Runs a recipe as written: the last terminal's stdout, the data folder and serve's port, and how
 * each terminal before it ended at Ctrl-C.
 */
async function run(name: string): Promise<{ stdout: string; data: string; servePort: number; stopped: { code: number; output: string }[] }> {
  const [servePort, issuerPort] = [await freePort(), await freePort()];
  const terminals = recipe(name).map((block) => block.replace(/\b8080\b/g, String(servePort)).replace(/\b8090\b/g, String(issuerPort)));
  const folder = tempDataFolder();
  const data = join(folder, 'data');
  const env = { ...process.env, CONTEXT_AUTH_CLI: CLI, CONTEXT_AUTH_DATA: data, CONTEXT_AUTH_CREDENTIALS: join(folder, 'credentials.json') };
  const running: Terminal[] = [];
  try {
    for (const script of terminals.slice(0, -1)) {
      const terminal = openTerminal(script, folder, env);
      running.push(terminal);
      await listening(terminal);
    }
    const last = spawn('bash', ['-e', '-c', `${NPX}${terminals.at(-1)!}`], { cwd: folder, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    last.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    last.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(last, 'close')) as [number];
    assert.equal(code, 0, `the last terminal of ${name} failed:\n${stdout}\n${stderr}\n${running.map((t) => t.output()).join('\n')}`);
    const stopped = [];
    for (const terminal of running.splice(0).reverse()) stopped.push(await interrupt(terminal));
    return { stdout, data, servePort, stopped };
  } finally {
    // After a failure: nothing is left running.
    for (const terminal of running) await interrupt(terminal);
  }
}

/** Each terminal left running ended at Ctrl-C with exit code 0, saying it stopped. */
function stoppedCleanly(stopped: { code: number; output: string }[]): void {
  for (const { code, output } of stopped) {
    assert.equal(code, 0, output);
    assert.match(output, /^Stopped\.$/m);
  }
}

/** What the demo's whoami answered, from `call`'s output: the JSON document that ends the terminal's stdout. */
function whoami(stdout: string): Record<string, unknown> {
  const start = stdout.search(/^\{$/m);
  assert.ok(start >= 0, stdout);
  return (JSON.parse(stdout.slice(start)) as { structuredContent: Record<string, unknown> }).structuredContent;
}

describe('the recipes of docs/cli.md, as written', { timeout: 300_000 }, () => {
  it('a program with its own key: client-key, clients add --jwks, call --private-key', async () => {
    const { stdout, data, stopped } = await run('private-key-jwt');
    stoppedCleanly(stopped);
    const answer = whoami(stdout);
    const listed = await cli(['clients', 'list', '--json', '--data', data]);
    const robot = (JSON.parse(listed.stdout) as { client_id: string; client_name: string; token_endpoint_auth_method: string; jwks?: unknown }[]).find(
      (c) => c.client_name === 'robot',
    );
    assert.ok(robot, listed.stdout);
    assert.equal(robot.token_endpoint_auth_method, 'private_key_jwt');
    assert.deepEqual(answer, { ...answer, subject: robot.client_id, client_id: robot.client_id, scopes: ['mcp:tools'] });
  });

  it('a workload and its platform: workload-issuer, serve --workload-config, call --assertion-file', async () => {
    const { stdout, servePort, stopped } = await run('workload-identity');
    stoppedCleanly(stopped);
    assert.deepEqual(whoami(stdout), {
      subject: 'robot-workload',
      client_id: 'robot-workload',
      scopes: ['mcp:tools'],
      resource: `http://127.0.0.1:${servePort}/mcp`,
    });
  });
});
