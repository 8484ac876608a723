/**
 * Errors as a user meets them from the CLI: what lies under "fetch failed" (a server that is down,
 * a certificate nobody trusts), TLS files that are not PEM, and --json turning any error into one
 * JSON object on stdout with a non-zero exit.
 */
import assert from 'node:assert/strict';
import { chmodSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { selfSignedCertificate } from '../helpers/self-signed.js';
import { cli, cliWithEnv, freePort, startServe, tempDataFolder, type CliResult, type RunningServer } from './serve-process.js';

const home = tempDataFolder();
const env = { CONTEXT_AUTH_CREDENTIALS: join(home, 'credentials.json'), NODE_EXTRA_CA_CERTS: '' };

/** The error is one line, the last on stderr (progress lines may come before it); returns it. */
function oneLine(result: CliResult, code: number): string {
  assert.equal(result.code, code, result.stderr);
  assert.match(result.stderr, /(^|\n)context-auth: [^\n]+\n$/, `ends with one error line: ${JSON.stringify(result.stderr)}`);
  assert.equal(result.stderr.match(/^context-auth: /gm)?.length, 1, 'one error line');
  return `${result.stderr.trimEnd().split('\n').at(-1)!}\n`;
}

describe('the CLI says what lies under a failed request', { timeout: 300_000 }, () => {
  it('a server that is down: could not connect, for call and login', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/mcp`;
    const call = oneLine(await cliWithEnv(['call', url, 'tools/list', '--no-browser'], { env }), 1);
    assert.match(call, new RegExp(`could not connect to 127\\.0\\.0\\.1:${port} \\(connection refused\\)`));
    assert.doesNotMatch(call, /fetch failed/);
    const login = oneLine(await cliWithEnv(['login', url, '--no-browser'], { env }), 1);
    assert.match(login, new RegExp(`cannot reach ${url}: could not connect to 127\\.0\\.0\\.1:${port}`));
  });

  it('a server whose certificate is not trusted: names the problem and NODE_EXTRA_CA_CERTS', async () => {
    const { certPath, keyPath } = selfSignedCertificate();
    const server = await startServe(['--port', String(await freePort()), '--data', tempDataFolder(), '--tls-cert', certPath, '--tls-key', keyPath, '--quiet']);
    try {
      assert.match(server.issuer, /^https:/);
      const result = oneLine(await cliWithEnv(['call', `${server.issuer}/mcp`, 'tools/list', '--no-browser'], { env }), 1);
      assert.match(result, /TLS certificate of 127\.0\.0\.1:\d+ is not trusted: it is self-signed \(DEPTH_ZERO_SELF_SIGNED_CERT\).*NODE_EXTRA_CA_CERTS/);
    } finally {
      await server.stop();
    }
  });
});

describe('a URL that is not a context server’s: which it is, and what to give instead', { timeout: 300_000 }, () => {
  let server: RunningServer;
  let page: Server;
  let pageUrl: string;
  before(async () => {
    server = await startServe(['--port', String(await freePort()), '--data', tempDataFolder(), '--quiet']);
    // Some web server: a page for anything asked.
    page = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Welcome</h1>'));
    page.listen(0, '127.0.0.1');
    await once(page, 'listening');
    pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/mcp`;
  });
  after(async () => {
    await server?.stop();
    page?.close();
  });

  /** call and login both say `message` in one line, exit 1, and --json names the code. */
  async function bothSay(url: string, message: RegExp): Promise<void> {
    for (const verb of [
      ['call', url, 'tools/list', '--no-browser'],
      ['login', url, '--no-browser'],
    ]) {
      const line = oneLine(await cliWithEnv(verb, { env }), 1);
      assert.match(line, message, verb.join(' '));
      assert.doesNotMatch(line, /Streamable HTTP error|Error POSTing/);
    }
    const json = await cliWithEnv(['call', url, 'tools/list', '--json'], { env });
    assert.equal((JSON.parse(json.stdout) as { error: string }).error, 'not_a_context_server');
  }

  it('the authorization server’s issuer, or one of its endpoints: names it and the context server to give', async () => {
    const mcp = `${server.issuer}/mcp`;
    await bothSay(
      server.issuer,
      new RegExp(
        `^context-auth: ${server.issuer} is the authorization server ${server.issuer} \\(its issuer\\), not a context server: give the context server's URL instead, here ${mcp}\n$`,
      ),
    );
    await bothSay(
      `${server.issuer}/token`,
      new RegExp(`is the authorization server ${server.issuer} \\(its token_endpoint\\), not a context server: .*here ${mcp}\n$`),
    );
  });

  it('a typo in the path (a 404): nothing there, and the context server there is', async () => {
    await bothSay(
      `${server.issuer}/mpc`,
      new RegExp(
        `^context-auth: nothing at ${server.issuer}/mpc \\(404\\): is the path right\\? Context servers usually end in /mcp; the context server here is ${server.issuer}/mcp\n$`,
      ),
    );
  });

  it('a server that answers, but not as a context server: says what it answered', async () => {
    await bothSay(
      pageUrl,
      new RegExp(
        `^context-auth: ${pageUrl} is not a context server: it answered an MCP request with HTTP 200 \\(text/html\\), not with a 401 asking for a token nor with JSON-RPC\n$`,
      ),
    );
    await bothSay(
      `${server.issuer}/account`,
      new RegExp(`is not a context server: it answered an MCP request with HTTP \\d+ \\(text/html\\).*; the context server here is ${server.issuer}/mcp\n$`),
    );
  });
});

describe('a credentials file that is not the user’s own', { skip: process.platform === 'win32' && 'no POSIX modes' }, () => {
  it('one writable by others, or a link: refused in one sentence naming it and the fix', async () => {
    const folder = tempDataFolder();
    const file = join(folder, 'credentials.json');
    writeFileSync(file, '{"version": 1, "clients": {}, "grants": {}}\n');
    chmodSync(file, 0o666);
    const status = oneLine(await cliWithEnv(['status'], { env: { CONTEXT_AUTH_CREDENTIALS: file } }), 1);
    assert.match(status, new RegExp(`^context-auth: the credentials file ${file} may be written by group or others \\(mode 0666\\).*\`chmod 600 '${file}'\``));
    const call = oneLine(await cliWithEnv(['call', 'http://127.0.0.1:9/mcp', 'tools/list', '--no-browser', '--credentials', file], { env }), 1);
    assert.match(call, /may be written by group or others/);

    const link = join(folder, 'link.json');
    symlinkSync(file, link);
    chmodSync(file, 0o600);
    assert.match(oneLine(await cliWithEnv(['status', '--credentials', link], { env }), 1), new RegExp(`the credentials file ${link} is a symbolic link`));
  });
});

describe('serve names TLS files that are not what they should be', () => {
  const { certPath, keyPath } = selfSignedCertificate();
  const other = selfSignedCertificate();
  const garbage = join(tempDataFolder(), 'garbage.pem');
  writeFileSync(garbage, 'this is not PEM\n');
  const serve = (cert: string, key: string) => cli(['serve', '--port', '0', '--data', tempDataFolder(), '--tls-cert', cert, '--tls-key', key]);

  it('a certificate file that is not PEM', async () => {
    const result = oneLine(await serve(garbage, keyPath), 1);
    assert.equal(result, `context-auth: --tls-cert ${garbage} is not a valid PEM certificate (expected -----BEGIN CERTIFICATE-----).\n`);
  });

  it("a key file that is not PEM, or another certificate's key", async () => {
    assert.match(oneLine(await serve(certPath, garbage), 1), new RegExp(`--tls-key ${garbage} is not a valid, unencrypted PEM private key`));
    assert.match(
      oneLine(await serve(certPath, other.keyPath), 1),
      new RegExp(`--tls-key ${other.keyPath} is not the private key of the certificate in ${certPath}`),
    );
  });
});

describe('--json errors', () => {
  it('are one JSON object on stdout, nothing on stderr, and a non-zero exit', async () => {
    const missing = join(tempDataFolder(), 'nope');
    const store = await cli(['users', 'list', '--json', '--data', missing]);
    assert.equal(store.code, 1);
    assert.equal(store.stderr, '');
    assert.deepEqual(JSON.parse(store.stdout), {
      error: 'failed',
      message: `There is no context-auth database in ${missing}: check --data (or $CONTEXT_AUTH_DATA); 'context-auth serve' or 'users add' creates one.`,
    });

    const usage = await cli(['users', 'frobnicate', '--json']);
    assert.equal(usage.code, 2);
    assert.equal(usage.stderr, '');
    assert.equal((JSON.parse(usage.stdout) as { error: string }).error, 'usage');

    const port = await freePort();
    const client = await cliWithEnv(['login', `http://127.0.0.1:${port}/mcp`, '--json'], { env });
    assert.equal(client.code, 1);
    const parsed = JSON.parse(client.stdout) as { error: string; message: string };
    assert.equal(parsed.error, 'discovery_failed');
    assert.match(parsed.message, /could not connect/);
  });
});
