/**
 * `context-auth workload-issuer`, the stand-in workload platform, from the built CLI: it publishes
 * OpenID discovery and its public key on 127.0.0.1, writes a signed token for the workload (no
 * jti, readable by its owner alone), which `serve --workload-config --allow-insecure-idp` takes,
 * and takes again while it is valid; it says so when stopped with Ctrl-C. `client-key`'s pair is
 * tested in machine-clients.test.ts, both recipes in cli-recipes.test.ts.
 * Run `npx tsc -p tsconfig.build.json` first.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { cli, freePort, startCli, startServe, tempDataFolder } from './serve-process.js';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

describe('context-auth workload-issuer', { timeout: 300_000 }, () => {
  it('publishes its key, writes a token serve takes (twice: no jti), and stops at Ctrl-C', async () => {
    const folder = tempDataFolder();
    const servePort = await freePort();
    const tokenFile = join(folder, 'robot.jwt');
    const issuerProcess = startCli(
      ['workload-issuer', '--port', '0', '--subject', 'robot', '--audience', `http://127.0.0.1:${servePort}`, '--token-file', tokenFile, '--ttl', '600'],
      { timeoutMs: 60_000 },
    );
    const stdout = () => issuerProcess.stdout();
    await new Promise<void>((resolve, reject) => {
      const check = () => (/^Listening on /m.test(stdout()) ? resolve() : undefined);
      issuerProcess.process.stdout.on('data', check);
      issuerProcess.process.once('close', () => reject(new Error(`workload-issuer ended:\n${stdout()}\n${issuerProcess.stderr()}`)));
    });
    const issuer = /^ {2}issuer +(\S+)/m.exec(stdout())![1]!;
    assert.match(issuer, /^http:\/\/127\.0\.0\.1:\d+$/, 'on this machine only');
    try {
      const discovery = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as { issuer: string; jwks_uri: string };
      assert.deepEqual(discovery, { issuer, jwks_uri: `${issuer}/jwks` });
      const jwks = (await (await fetch(discovery.jwks_uri)).json()) as { keys: Record<string, unknown>[] };
      assert.equal(jwks.keys.length, 1);
      assert.equal(jwks.keys[0]!.d, undefined, 'the public key alone');
      assert.equal((await fetch(`${issuer}/token`, { method: 'POST' })).status, 404, 'nothing but discovery and keys');

      assert.equal(statSync(tokenFile).mode & 0o777, 0o600);
      const token = readFileSync(tokenFile, 'utf8').trim();
      assert.equal(decodeProtectedHeader(token).kid, jwks.keys[0]!.kid);
      assert.equal(decodeProtectedHeader(token).typ, 'JWT');
      const { payload } = await jwtVerify(token, createLocalJWKSet(jwks as never), { issuer, audience: `http://127.0.0.1:${servePort}`, subject: 'robot' });
      assert.equal(payload.exp! - payload.iat!, 600);
      assert.equal(payload.jti, undefined);

      const data = tempDataFolder();
      const rules = join(data, 'workloads.json');
      writeFileSync(rules, JSON.stringify([{ issuer, subject: 'robot', client: 'robot-workload', scopes: ['mcp:tools'] }]));
      // An http issuer is a test's: serve refuses it without the switch that says so.
      const refused = await cli(['serve', '--port', String(servePort), '--data', data, '--workload-config', rules]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /--workload-config .*https/);
      const server = await startServe(['--port', String(servePort), '--data', data, '--quiet', '--workload-config', rules, '--allow-insecure-idp']);
      try {
        for (const attempt of [1, 2]) {
          const response = await fetch(`${server.issuer}/token`, { method: 'POST', body: new URLSearchParams({ grant_type: JWT_BEARER, assertion: token }) });
          assert.equal(response.status, 200, `attempt ${attempt}: ${await response.clone().text()}`);
        }
      } finally {
        await server.stop();
      }
    } finally {
      const closed = once(issuerProcess.process, 'close');
      issuerProcess.process.kill('SIGINT');
      const [code] = (await closed) as [number];
      assert.equal(code, 0);
      assert.match(stdout(), /\(Ctrl-C to stop\)\nStopped\.\n$/);
    }
  });

  it('--json: what it serves and wrote, as one JSON document, before it waits', async () => {
    const tokenFile = join(tempDataFolder(), 'robot.jwt');
    const running = startCli(['workload-issuer', '--port', '0', '--subject', 'robot', '--token-file', tokenFile, '--json'], { timeoutMs: 60_000 });
    const printed = await new Promise<Record<string, unknown>>((resolve, reject) => {
      running.process.stdout.on('data', () => {
        if (running.stdout().endsWith('}\n')) resolve(JSON.parse(running.stdout()) as Record<string, unknown>);
      });
      running.process.once('close', () => reject(new Error(`workload-issuer ended:\n${running.stdout()}\n${running.stderr()}`)));
    });
    const closed = once(running.process, 'close');
    running.process.kill('SIGINT');
    assert.equal(((await closed) as [number])[0], 0);
    assert.match(String(printed.issuer), /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.deepEqual(
      { ...printed, issuer: undefined, expires_at: undefined },
      { issuer: undefined, expires_at: undefined, token_file: tokenFile, subject: 'robot', audience: 'http://127.0.0.1:8080' },
    );
    assert.equal(running.stdout().trimEnd().split('\n').at(-1), '}', 'nothing but the document on stdout');
  });

  it('refuses what it cannot do, before it listens', async () => {
    const folder = tempDataFolder();
    const refusals: [string[], RegExp][] = [
      [['--subject', 'robot'], /workload-issuer needs --subject SUB and --token-file FILE/],
      [['--subject', 'robot', '--token-file', join(folder, 't'), '--ttl', '90000'], /--ttl must be a whole number from 60 to 86400/],
    ];
    for (const [args, message] of refusals) {
      const result = await cli(['workload-issuer', ...args]);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, message);
    }
  });
});
