/**
 * The server-side verbs and their data folder, as a user runs them: a mistyped --data is refused
 * instead of opening a new empty database (only `serve` and `users add` create one, and say so),
 * a folder that cannot be used is one clear line, and `users passwd` changes a password, from
 * stdin or at a terminal without echo, and signs the user out of the browser.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Browser, parseForm, pkcePair } from '../helpers/harness.js';
import { CLI, cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const OLD = 'correct horse battery staple';
const NEW = 'another horse, another staple';
const CALLBACK = 'http://127.0.0.1:45679/callback';

function assertOneLine(result: { code: number; stderr: string }, pattern: RegExp): void {
  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stderr, /^context-auth: [^\n]+\n$/, `one line: ${JSON.stringify(result.stderr)}`);
  assert.match(result.stderr, pattern);
}

describe('a data folder that is not there', () => {
  it('is refused by every verb but serve and users add, naming the path, and is not created', async () => {
    const missing = join(tempDataFolder(), 'mistyped');
    for (const args of [
      ['users', 'list'],
      ['users', 'remove', 'alice'],
      ['clients', 'list'],
      ['keys', 'list'],
      ['consents', 'list'],
    ]) {
      const result = await cli([...args, '--data', missing]);
      assertOneLine(result, new RegExp(`no context-auth database in ${missing}: check --data`));
      assert.equal(existsSync(missing), false, `${args.join(' ')} created ${missing}`);
    }
    const passwd = await cli(['users', 'passwd', 'alice', '--data', missing], `${NEW}\n`);
    assertOneLine(passwd, /no context-auth database in/);
  });

  it('users add creates it and says so; the next add does not', async () => {
    const fresh = join(tempDataFolder(), 'new');
    const first = await cli(['users', 'add', 'alice', '--data', fresh], `${OLD}\n`);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout, `Added user alice to a new database in ${fresh}.\n`);
    const second = await cli(['users', 'add', 'bob', '--data', fresh], `${OLD}\n`);
    assert.equal(second.stdout, 'Added user bob.\n');
    const listed = await cli(['users', 'list', '--data', fresh]);
    assert.equal(listed.code, 0, listed.stderr);
  });

  it('serve creates it and says so in its banner', async () => {
    const fresh = join(tempDataFolder(), 'served');
    const server = await startServe(['--port', String(await freePort()), '--data', fresh]);
    try {
      assert.match(server.output(), new RegExp(`store +${fresh} \\(new: an empty database was created here\\)`));
    } finally {
      await server.stop();
    }
  });

  it('a folder that cannot be made is one line with the reason', async () => {
    const file = join(tempDataFolder(), 'a-file');
    writeFileSync(file, 'not a folder');
    const result = await cli(['users', 'add', 'alice', '--data', join(file, 'data')], `${OLD}\n`);
    assertOneLine(result, /Cannot use the data folder .*a-file\/data: part of the path is a file, not a folder \(ENOTDIR\); choose another with --data/);
  });
});

/** Runs the CLI at a pseudo-terminal (util-linux `script`), typing each answer after its prompt. */
async function atTerminal(args: string[], answers: { prompt: string; text: string }[]): Promise<{ code: number; output: string }> {
  const command = [process.execPath, CLI, ...args].map((part) => `'${part.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-qefc', command, '/dev/null'], { stdio: 'pipe' });
  let output = '';
  let next = 0;
  let from = 0;
  const onData = (chunk: Buffer): void => {
    output += chunk.toString();
    // Each answer only once its prompt shows: typed earlier, the terminal itself would echo it.
    while (next < answers.length) {
      const at = output.indexOf(answers[next]!.prompt, from);
      if (at < 0) break;
      from = at + answers[next]!.prompt.length;
      child.stdin.write(`${answers[next]!.text}\r`);
      next++;
    }
  };
  child.stdout.on('data', onData);
  const code = await new Promise<number>((resolve) => child.once('close', (exit) => resolve(exit ?? -1)));
  return { code, output };
}

describe('users passwd', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  let server: RunningServer;
  let issuer: string;
  let clientId: string;
  const browser = new Browser((path, init) => fetch(new URL(path, issuer), init));

  /** Starts an authorization in the browser; returns the first interaction page, or the callback when none was needed. */
  async function startAuthorization(): Promise<{ html?: string; callback?: URL }> {
    const { challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: CALLBACK,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 's',
      resource: `${issuer}/mcp`,
    });
    const response = await browser.fetch(`/authorize?${query}`);
    assert.equal(response.status, 303);
    const location = new URL(response.headers.get('location')!, issuer);
    if (location.origin !== issuer) return { callback: location };
    return { html: await (await browser.fetch(location.pathname)).text() };
  }

  async function signIn(html: string, password: string): Promise<Response> {
    const { action, csrf } = parseForm(html);
    return browser.submit(action, { csrf, step: 'login', username: 'alice', password });
  }

  before(async () => {
    const added = await cli(['users', 'add', 'alice', '--data', data], `${OLD}\n`);
    assert.equal(added.code, 0, added.stderr);
    server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet']);
    issuer = server.issuer;
    const registered = await fetch(`${issuer}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'passwd test', redirect_uris: [CALLBACK], token_endpoint_auth_method: 'none', grant_types: ['authorization_code'] }),
    });
    clientId = ((await registered.json()) as { client_id: string }).client_id;
  });

  after(async () => {
    await server?.stop();
  });

  it('sets the password read from stdin and ends the browser session signed in with the old one', async () => {
    // Signed in with the old password: the next authorization needs no password.
    const first = await startAuthorization();
    const signedIn = await signIn(first.html!, OLD);
    assert.equal(signedIn.status, 303);
    const again = await startAuthorization();
    assert.doesNotMatch(again.html ?? '', /name="password"/, 'the session spares a second sign-in');

    const changed = await cli(['users', 'passwd', 'alice', '--data', data], `${NEW}\n`);
    assert.equal(changed.code, 0, changed.stderr);
    assert.match(changed.stdout, /^Changed the password of alice; 1 browser session ended\./);

    const after = await startAuthorization();
    assert.match(after.html ?? '', /name="password"/, 'the session ended: the password is asked for again');
    const withOld = await signIn(after.html!, OLD);
    assert.equal(withOld.status, 401, 'the old password no longer signs in');
    const retry = await startAuthorization();
    const withNew = await signIn(retry.html!, NEW);
    assert.equal(withNew.status, 303, 'the new one does');
  });

  it('refuses an unknown user and a short password, and answers --json', async () => {
    assertOneLine(await cli(['users', 'passwd', 'bob', '--data', data], `${NEW}\n`), /There is no user named bob\./);
    assertOneLine(await cli(['users', 'passwd', 'alice', '--data', data], 'short\n'), /at least 8 characters/);
    const json = await cli(['users', 'passwd', 'alice', '--json', '--data', data], `${OLD}\n`);
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), { username: 'alice', password_changed: true, sessions_ended: 1 });
  });

  it('at a terminal asks twice without echoing, and refuses two different answers', async () => {
    const typed = 'typed at a terminal 123';
    const same = await atTerminal(
      ['users', 'passwd', 'alice', '--data', data],
      [
        { prompt: 'Password: ', text: typed },
        { prompt: 'Repeat password: ', text: typed },
      ],
    );
    assert.equal(same.code, 0, same.output);
    assert.match(same.output, /Changed the password of alice/);
    assert.doesNotMatch(same.output, /typed at a terminal/, 'the password is not echoed');

    const differ = await atTerminal(
      ['users', 'passwd', 'alice', '--data', data],
      [
        { prompt: 'Password: ', text: typed },
        { prompt: 'Repeat password: ', text: 'something else 456' },
      ],
    );
    assert.equal(differ.code, 1, differ.output);
    assert.match(differ.output, /The two passwords differ\./);
  });
});
