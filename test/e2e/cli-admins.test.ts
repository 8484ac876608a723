/**
 * Administrators of the admin console, from the CLI as an operator runs it: `users add --admin`,
 * `users admin NAME on|off` (one clear line when there is no such user) and `users list`, which
 * shows who is one in its table and its --json; and `clients remove` and `users remove`, which run
 * the same operations as the console's buttons (a client removed while serve runs is refused at once); and a password that was not given, which is
 * said so (from a pipe, and from a terminal whose input ended, through `script`'s real pty).
 * Run `npx tsc -p tsconfig.build.json` first.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CLI, cli, freePort, startServe, tempDataFolder } from './serve-process.js';

const PASSWORD = 'correct horse battery';

async function ok(args: string[], input?: string): Promise<string> {
  const result = await cli(args, input);
  assert.equal(result.code, 0, result.stderr);
  return result.stdout;
}

/** The ADMIN column of `users list`, by username. */
function adminColumn(listing: string): Record<string, string> {
  const [header, ...rows] = listing.trimEnd().split('\n');
  const at = header!.indexOf('ADMIN');
  assert.ok(at > 0, `an ADMIN column: ${header}`);
  return Object.fromEntries(rows.map((row) => [row.split(' ')[0]!, row.slice(at, at + 5).trim()]));
}

describe('administrators from the CLI', () => {
  it('adds an administrator, turns it on and off, and lists who is one', async () => {
    const data = tempDataFolder();
    assert.match(await ok(['users', 'add', 'root', '--admin', '--data', data], `${PASSWORD}\n`), /Added administrator root/);
    assert.match(await ok(['users', 'add', 'alice', '--data', data], `${PASSWORD}\n`), /^Added user alice\.$/m);
    assert.deepEqual(adminColumn(await ok(['users', 'list', '--data', data])), { alice: '', root: 'yes' });

    assert.match(await ok(['users', 'admin', 'alice', 'on', '--data', data]), /alice is an administrator/);
    assert.match(await ok(['users', 'admin', 'root', 'off', '--data', data]), /root is no longer an administrator/);
    const listed = JSON.parse(await ok(['users', 'list', '--json', '--data', data])) as { username: string; admin: boolean }[];
    assert.deepEqual(Object.fromEntries(listed.map((user) => [user.username, user.admin])), { alice: true, root: false });
    assert.deepEqual(JSON.parse(await ok(['users', 'admin', 'alice', 'off', '--json', '--data', data])), { username: 'alice', admin: false });
  });

  it('says so in one line when there is no such user, or the command is incomplete', async () => {
    const data = tempDataFolder();
    await ok(['users', 'add', 'root', '--data', data], `${PASSWORD}\n`);
    const missing = await cli(['users', 'admin', 'bob', 'on', '--data', data]);
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, 'context-auth: There is no user named bob.\n');
    for (const args of [
      ['users', 'admin', 'root'],
      ['users', 'admin', 'root', 'yes'],
      ['users', 'list', '--admin'],
    ]) {
      const refused = await cli([...args, '--data', data]);
      assert.equal(refused.code, 2, `${args.join(' ')}: ${refused.stderr}`);
    }
    const removed = await cli(['users', 'remove', 'bob', '--data', data]);
    assert.equal(removed.stderr, 'context-auth: There is no user named bob.\n');
  });
});

describe('removing from the CLI', () => {
  it('removes a client and a user, and says so; a second time there is none', async () => {
    const data = tempDataFolder();
    await ok(['users', 'add', 'alice', '--data', data], `${PASSWORD}\n`);
    const { client_id: clientId } = JSON.parse(await ok(['clients', 'add', '--name', 'Job', '--grant-type', 'client_credentials', '--data', data])) as {
      client_id: string;
    };
    assert.equal(await ok(['clients', 'remove', clientId, '--data', data]), `Removed client ${clientId} and everything issued to it.\n`);
    assert.equal((await cli(['clients', 'remove', clientId, '--data', data])).stderr, `context-auth: There is no client ${clientId}.\n`);
    assert.deepEqual(JSON.parse(await ok(['users', 'remove', 'alice', '--json', '--data', data])), { username: 'alice', removed: true });
    assert.equal(await ok(['users', 'list', '--data', data]), '(none)\n');
  });

  it('a client removed while serve runs is refused at its next token request', async () => {
    const data = tempDataFolder();
    const server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet']);
    try {
      const added = JSON.parse(await ok(['clients', 'add', '--name', 'Job', '--grant-type', 'client_credentials', '--data', data])) as {
        client_id: string;
        client_secret: string;
      };
      const tokenRequest = () =>
        fetch(`${server.issuer}/token`, {
          method: 'POST',
          headers: { authorization: `Basic ${Buffer.from(`${added.client_id}:${added.client_secret}`).toString('base64')}` },
          body: new URLSearchParams({ grant_type: 'client_credentials' }),
        });
      // Twice: the second is answered with the client serve already looked up.
      for (let i = 0; i < 2; i++) assert.equal((await tokenRequest()).status, 200);
      await ok(['clients', 'remove', added.client_id, '--data', data]);
      const refused = await tokenRequest();
      assert.equal(refused.status, 401);
      assert.equal(((await refused.json()) as { error: string }).error, 'invalid_client');
    } finally {
      await server.stop();
    }
  });
});

describe('a password that was not given', () => {
  it('users add with nothing on standard input: says so and how to give one, and adds no one', async () => {
    const data = tempDataFolder();
    for (const input of ['', '\n']) {
      const result = await cli(['users', 'add', 'alice', '--data', data], input);
      assert.equal(result.code, 1);
      assert.equal(
        result.stderr,
        'context-auth: No password given on standard input: pipe one in (echo "$PW" | context-auth users add alice), or run it in a terminal to be asked for one.\n',
      );
    }
    assert.equal(existsSync(join(data, 'context-auth.db')), false, 'no database was made for nobody');
  });

  it('a password of two lines (one the sign-in form could never take) is refused, not stored', async () => {
    const data = tempDataFolder();
    const result = await cli(['users', 'add', 'alice', '--data', data], `${PASSWORD}\n${PASSWORD}\n`);
    assert.equal(result.code, 1);
    assert.equal(result.stderr, 'context-auth: The password on standard input is more than one line: give it alone, on one line.\n');
  });

  it('users passwd for someone who does not exist says so before asking for a password', async () => {
    const data = tempDataFolder();
    await ok(['users', 'add', 'root', '--data', data], `${PASSWORD}\n`);
    const result = await cli(['users', 'passwd', 'bob', '--data', data], '');
    assert.equal(result.code, 1);
    assert.equal(result.stderr, 'context-auth: There is no user named bob.\n');
    const empty = await cli(['users', 'passwd', 'root', '--data', data], '');
    assert.match(empty.stderr, /No password given on standard input: pipe one in \(echo "\$PW" \| context-auth users passwd root\)/);
  });

  it('at a terminal whose input ends (Ctrl-D) at the prompt: says so and fails, instead of ending silently', async () => {
    const data = tempDataFolder();
    // script(1) runs the CLI on a pseudo-terminal and passes our input to it: Ctrl-D, then the end.
    const child = spawn('script', ['-qec', `'${process.execPath}' '${CLI}' users add alice --data '${data}'`, '/dev/null'], { stdio: 'pipe' });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stdin.end('\x04');
    const [code] = (await once(child, 'close')) as [number];
    assert.equal(code, 1, output);
    assert.match(output, /Password: /);
    assert.match(output, /context-auth: No password given: the input ended \(Ctrl-D\) before one was typed\./);
    assert.equal(existsSync(join(data, 'context-auth.db')), false);
  });
});
