/**
 * A newcomer's first sign-in on a server nobody was added to: `serve` says at start how to add a
 * user (unless local passwords are off), and the log line of the failed sign-in says why it failed.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { cli, freePort, openSignInForm, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const NOTE = /No users yet: every password sign-in fails .*\n\s+context-auth users add NAME --data /;

/**
 * The output once stderr has caught up with stdout (the banner, which startServe waits for, is on
 * stdout; the note comes before it, on stderr): until `pattern` shows, or a short while.
 */
async function outputAfterStart(server: RunningServer, pattern: RegExp): Promise<string> {
  for (let i = 0; i < 25 && !pattern.test(server.output()); i++) await sleep(20);
  return server.output();
}

/** One wrong sign-in at `server`'s login page, as a browser would post it. */
async function failSignIn(server: RunningServer, username: string): Promise<void> {
  const { browser, action, csrf } = await openSignInForm(server);
  const response = await browser.submit(action, { csrf, step: 'login', username, password: 'a wrong password' });
  assert.equal(response.status, 401);
}

/** The `login_failed` log lines `server` has written so far (waiting briefly for stderr to arrive). */
async function failedSignIns(server: RunningServer, count: number): Promise<Record<string, unknown>[]> {
  for (let i = 0; ; i++) {
    const lines = server
      .output()
      .split('\n')
      .filter((line) => line.includes('"event":"login_failed"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    if (lines.length >= count || i === 50) return lines;
    await sleep(20);
  }
}

describe('serve on a store with no users', { timeout: 300_000 }, () => {
  const servers: RunningServer[] = [];
  after(async () => {
    for (const server of servers) await server.stop();
  });
  const serve = async (args: string[]) => {
    const server = await startServe(['--port', String(await freePort()), ...args]);
    servers.push(server);
    return server;
  };

  it('says how to add a user, and logs a failed sign-in as no_users until there is one', async () => {
    const data = tempDataFolder();
    const server = await serve(['--data', data]);
    const output = await outputAfterStart(server, NOTE);
    assert.match(output, NOTE);
    assert.ok(output.includes(`users add NAME --data ${data}`), output);

    await failSignIn(server, 'alice');
    assert.equal((await failedSignIns(server, 1))[0]?.reason, 'no_users');

    const added = await cli(['users', 'add', 'alice', '--data', data], 'correct horse battery\n');
    assert.equal(added.code, 0, added.stderr);
    await failSignIn(server, 'bob');
    const lines = await failedSignIns(server, 2);
    assert.equal(lines.length, 2);
    assert.equal(lines[1]!.reason, undefined, 'a store with a user: an ordinary failure');

    const again = await serve(['--data', data]);
    assert.doesNotMatch(await outputAfterStart(again, /No users yet/), /No users yet/);
  });

  it('says nothing of users when local passwords are off (sign-in only upstream)', async () => {
    const server = await serve([
      '--data',
      tempDataFolder(),
      '--upstream-issuer',
      `http://127.0.0.1:${await freePort()}`,
      '--upstream-client-id',
      'id',
      '--upstream-client-secret',
      'secret',
      '--allow-insecure-upstream',
      '--local-users',
      'off',
    ]);
    assert.doesNotMatch(await outputAfterStart(server, /No users yet/), /No users yet/);
  });
});
