/**
 * `context-auth login --device` as a user runs it (the built CLI, a child process) against a real
 * authorization server with the device flow: node-oidc-provider, named by the context server's
 * protected resource metadata. The test reads the page and code the CLI prints and plays the
 * person on another device at the provider's own /device pages; it also presses Abort there, and
 * Ctrl-C at the CLI. The provider names no polling interval, so each sign-in takes the RFC's 5 s.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bearerChallenge } from '../../src/core/www-authenticate.js';
import { serveHandler, type ServedApp } from '../client/setup.js';
import { personEntersCode } from '../helpers/oidc-device-pages.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.js';
import { startCli, tempDataFolder, type RunningCli } from './serve-process.js';

/** The lines `login --device` prints: the page, the code, the page with the code, and the wait. */
const DEVICE_LINES =
  /To sign in, open this page on any device with a browser:\n {2}(\S+)\nand enter the code ([A-Z]{4}-[A-Z]{4})\nor open this page, with the code already filled in:\n {2}(\S+)\nWaiting for you to sign in \(the code expires in \d+ min; Ctrl-C to stop\)…\n/;

describe('context-auth login --device against node-oidc-provider', { timeout: 300_000 }, () => {
  let provider: TestOidcProvider;
  let context: ServedApp;
  let serverUrl: string;
  const home = tempDataFolder();
  const credentials = join(home, 'credentials.json');

  before(async () => {
    context = await serveHandler((request) => {
      const origin = context.origin;
      if (new URL(request.url).pathname === '/.well-known/oauth-protected-resource/mcp') {
        return Response.json({ resource: `${origin}/mcp`, authorization_servers: [provider.issuer], scopes_supported: ['api'] });
      }
      return new Response(null, {
        status: 401,
        headers: { 'www-authenticate': bearerChallenge({ resourceMetadata: `${origin}/.well-known/oauth-protected-resource/mcp` }) },
      });
    });
    serverUrl = `${context.origin}/mcp`;
    provider = await startOidcProvider({ redirectUris: ['http://127.0.0.1/unused'], apiAudience: serverUrl, deviceFlow: true });
  });

  after(async () => {
    await provider.stop();
    await context.close();
  });

  function login(...extra: string[]): RunningCli {
    return startCli(['login', serverUrl, '--device', '--credentials', credentials, ...extra], { timeoutMs: 60_000 });
  }

  it('prints the page and the code, waits for the person, and stores the tokens', async () => {
    const running = login();
    const [, page, code, complete] = await running.waitForStderr(DEVICE_LINES);
    assert.equal(page, `${provider.issuer}/device`);
    assert.equal(complete, `${provider.issuer}/device?user_code=${code}`);
    assert.match(await personEntersCode(complete!, code!, 'continue'), /Sign-in Success/);

    const result = await running.exit;
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, new RegExp(`^Logged in to ${serverUrl}\n {2}authorization server {2}${provider.issuer} \\(revision B\\)`));
    assert.match(result.stdout, /access token {10}expires in \d+ min, refreshed automatically/);
    const file = JSON.parse(readFileSync(credentials, 'utf8')) as {
      applications: Record<string, { grants: Record<string, { accessToken: string; refreshToken?: string }> }>;
    };
    const grants = Object.values(file.applications).flatMap((application) => Object.values(application.grants));
    assert.equal(grants.length, 1);
    assert.ok(grants[0]!.refreshToken);
    for (const secret of [grants[0]!.accessToken, grants[0]!.refreshToken!])
      assert.ok(!result.stdout.includes(secret) && !result.stderr.includes(secret), 'no token printed');
  });

  it('prints the code even with --quiet', async () => {
    const running = login('--quiet');
    await running.waitForStderr(DEVICE_LINES);
    assert.doesNotMatch(running.stderr(), /Discovering|Registering/, 'no other progress');
    running.process.kill('SIGINT');
    assert.equal((await running.exit).code, 130);
  });

  it('reports the person pressing Abort at the provider in one line', async () => {
    const running = login();
    const [, , code, complete] = await running.waitForStderr(DEVICE_LINES);
    await personEntersCode(complete!, code!, 'abort');
    const result = await running.exit;
    assert.equal(result.code, 1);
    assert.match(result.stderr, /\ncontext-auth: the sign-in was refused \(access_denied[^\n]*\)\n$/);
    assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
  });

  it('stops cleanly at Ctrl-C while waiting', async () => {
    const running = login();
    await running.waitForStderr(DEVICE_LINES);
    const started = Date.now();
    running.process.kill('SIGINT');
    const result = await running.exit;
    assert.ok(Date.now() - started < 3000, 'at once, not at the next poll');
    assert.equal(result.code, 130);
    assert.match(result.stderr, /\ncontext-auth: stopped; not logged in\n$/);
    assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
  });

  it('refuses --device with a program grant', async () => {
    const result = await login('--grant-type', 'client_credentials', '--client-id', 'robot', '--client-secret', 's').exit;
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--device is a person's sign-in; it does not go with --grant-type client_credentials/);
  });
});
