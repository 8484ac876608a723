/**
 * `serve --audit-log FILE`: the audit lines appended to a file as well as stderr, and the file
 * opened anew on SIGHUP, as logrotate's postrotate asks (serve runs on a thread: the main thread
 * must hand the signal on).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { cli, freePort, openSignInForm, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

async function failSignIn(server: RunningServer): Promise<void> {
  const { browser, action, csrf } = await openSignInForm(server);
  const response = await browser.submit(action, { csrf, step: 'login', username: 'nobody', password: 'a wrong password' });
  assert.equal(response.status, 401);
}

/** The `login_failed` lines in the file at `path` (waiting briefly for the first). */
async function failedSignIns(path: string): Promise<Record<string, unknown>[]> {
  for (let i = 0; ; i++) {
    const lines = existsSync(path)
      ? readFileSync(path, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as Record<string, unknown>)
      : [];
    const failed = lines.filter((line) => line.event === 'login_failed');
    if (failed.length > 0 || i === 100) return failed;
    await sleep(20);
  }
}

describe('serve --audit-log', { timeout: 300_000 }, () => {
  const servers: RunningServer[] = [];
  after(async () => {
    for (const server of servers) await server.stop();
  });

  it('appends the audit lines to the file (0600), quiet or not, and reopens it on SIGHUP', async () => {
    const data = tempDataFolder();
    const path = join(data, 'audit.log');
    const server = await startServe(['--data', data, '--port', String(await freePort()), '--audit-log', path, '--quiet']);
    servers.push(server);
    await failSignIn(server);
    const [first] = await failedSignIns(path);
    assert.equal(first?.event, 'login_failed');
    assert.equal(first?.outcome, 'failure');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.doesNotMatch(server.output(), /"event"/, '--quiet keeps them off stderr');

    renameSync(path, `${path}.1`);
    server.process.kill('SIGHUP');
    await sleep(200);
    await failSignIn(server);
    assert.equal((await failedSignIns(path)).length, 1);
    assert.equal((await failedSignIns(`${path}.1`)).length, 1);
    assert.equal(server.process.exitCode, null, 'SIGHUP does not stop serve');
    assert.equal(server.process.signalCode, null, 'SIGHUP does not stop serve');
  });

  it('refuses to start when the file cannot be opened', async () => {
    const data = tempDataFolder();
    const result = await cli(['serve', '--data', data, '--port', String(await freePort()), '--audit-log', join(data, 'no-such-folder', 'audit.log')]);
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /Cannot open --audit-log .*ENOENT/);
  });
});
