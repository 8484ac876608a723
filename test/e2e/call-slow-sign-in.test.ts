/**
 * `context-auth call` while the person takes longer than a minute in the browser: the sign-in
 * happens inside the MCP initialize request, whose SDK timeout (60 s) used to cut it off with
 * "MCP error -32001: Request timed out". Slow on purpose: the person answers after 62 s.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Browser, signInAndConsent } from '../helpers/harness.js';
import { cli, freePort, startCli, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const USER = { username: 'alice', password: 'correct horse battery staple' };
const PERSON_TAKES_MS = 62_000;

describe('context-auth call waits for a sign-in slower than the MCP request timeout', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  const home = tempDataFolder();
  // The browser the CLI opens is the test: an opener that takes the URL and does nothing with it
  // (the URL is printed too). With --no-browser and no terminal, call would not wait for a person.
  const bin = join(home, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'xdg-open'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  const env = { CONTEXT_AUTH_CREDENTIALS: join(home, 'credentials.json'), PATH: bin, BROWSER: '', DISPLAY: '' };
  let server: RunningServer;
  let issuer: string;

  before(async () => {
    const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet']);
    issuer = server.issuer;
  });

  after(async () => {
    await server?.stop();
  });

  it(`finishes the call when the person approves after ${PERSON_TAKES_MS / 1000} s`, async () => {
    const started = Date.now();
    const child = startCli(['call', `${issuer}/mcp`, 'tools/call', '{"name":"whoami"}'], { env, timeoutMs: 110_000 });
    const [, href] = await child.waitForStderr(/^(http:\/\/\S+\/authorize\?\S+)$/m);
    await sleep(PERSON_TAKES_MS);

    const browser = new Browser((path, init) => fetch(new URL(path, issuer), init));
    const authorizationUrl = new URL(href!);
    const first = await browser.fetch(authorizationUrl.pathname + authorizationUrl.search);
    const callback = await signInAndConsent(browser, first, USER, 'approve', issuer);
    assert.equal((await fetch(callback)).status, 200);

    const result = await child.exit;
    assert.ok(Date.now() - started > 60_000, 'the sign-in outlasted the SDK default timeout');
    assert.equal(result.code, 0, result.stderr);
    assert.doesNotMatch(result.stderr, /timed out/i);
    const output = JSON.parse(result.stdout) as { content: { type: string; text: string }[] };
    assert.equal((JSON.parse(output.content[0]!.text) as { username: string }).username, USER.username);
  });
});
