/**
 * `context-auth doctor` against `serve`: on this machine (ChatGPT and claude.ai, which connect from
 * their clouds, cannot reach it; every other host connects), and at a public https name (serve
 * behind a proxy's name, reached through a fetch that maps the name to its loopback port), where
 * every host connects.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runDoctor, type DoctorReport } from '../../src/client/index.js';
import { hostNames } from '../../src/client/hosts/profiles.js';
import { publicNames } from '../helpers/deployments.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const LOCAL_HOSTS = hostNames().filter((host) => host !== 'ChatGPT' && host !== 'Claude');

describe('context-auth doctor against serve on this machine', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  let server: RunningServer;
  let mcpUrl: string;

  before(async () => {
    server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet']);
    mcpUrl = `${server.issuer}/mcp`;
  });
  after(async () => {
    await server?.stop();
  });

  it('the hosts that run on this machine connect: exit 0', async () => {
    const result = await cli(['doctor', mcpUrl, ...LOCAL_HOSTS.flatMap((host) => ['--host', host])]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, new RegExp(`^${mcpUrl.replace(/[.]/g, '\\.')}: every host would connect$`, 'm'));
    for (const host of LOCAL_HOSTS) assert.match(result.stdout, new RegExp(`^${host}\\s+(document|registration)\\s+connects$`, 'm'), host);
    assert.doesNotMatch(result.stdout, /^(ChatGPT|Claude) {2}/m);
    assert.match(result.stdout, /^Not checked: the person’s sign-in and consent/m);
  });

  it('ChatGPT and claude.ai connect from their clouds: on 127.0.0.1 they cannot, and the exit status says so', async () => {
    const result = await cli(['doctor', mcpUrl]);
    assert.equal(result.code, 1, result.stdout + result.stderr);
    assert.match(result.stdout, /2 of 11 hosts would not connect/);
    assert.match(
      result.stdout,
      /^ChatGPT\s+fails at reachability: the MCP URL http:\/\/127\.0\.0\.1:\d+\/mcp is plain http; ChatGPT connects from its own servers — fix: give it a public https URL/m,
    );
    assert.match(result.stdout, /^Claude\s+fails at reachability/m);
    assert.match(result.stdout, /^https\s+warning\s+plain http on this machine/m);
    assert.match(result.stdout, /^offline_access\s+ok\s+listed$/m);
  });

  it('--json: one document, the same verdicts; no request carried credentials', async () => {
    const result = await cli(['doctor', mcpUrl, '--json']);
    assert.equal(result.code, 1);
    const report = JSON.parse(result.stdout) as DoctorReport;
    assert.equal(report.connects, false);
    assert.deepEqual(
      report.hosts.filter((h) => !h.connects).map((h) => `${h.host}: ${h.failure!.step}`),
      ['ChatGPT: reachability', 'Claude: reachability'],
    );
    assert.deepEqual(
      report.hosts.map((h) => h.host),
      hostNames(),
    );
    assert.ok(report.requests.length > 0);
    assert.ok(report.requests.every((request) => !Object.keys(request.headers ?? {}).some((name) => /authorization|cookie/i.test(name))));
  });

  it('--register says what it will do on stderr before it does, lists the clients it made, and they are there to remove', async () => {
    const result = await cli(['doctor', mcpUrl, '--register', ...LOCAL_HOSTS.flatMap((host) => ['--host', host])]);
    assert.match(result.stderr, /^context-auth doctor: --register: each host that registers dynamically will now register a throwaway client/);
    // serve admits no private-use redirect scheme unless told to: Cursor's registration keeps its
    // https and loopback callbacks and leaves out cursor://, the one it returns to.
    assert.equal(result.code, 1, result.stdout);
    assert.match(
      result.stdout,
      /^Cursor\s+registration\s+fails at registration: POST http:\/\/127\.0\.0\.1:\d+\/register: registered without cursor:\/\/anysphere\.cursor-mcp\/oauth\/callback, the redirect URI Cursor returns to .*— fix: accept Cursor's redirect URI cursor:\/\/anysphere\.cursor-mcp\/oauth\/callback, a private-use scheme \(RFC 8252 §7\.1; context-auth serve: --allow-redirect-scheme cursor\)$/m,
    );
    const made = [...result.stdout.matchAll(/^ {2}(.+): http:\/\/127\.0\.0\.1:\d+\/register: client ([0-9a-f]{32}), still registered/gm)].map((m) => [
      m[1],
      m[2]!,
    ]);
    assert.deepEqual(
      made.map(([host]) => host),
      ['Cursor', 'Gemini CLI', 'mcp-remote', 'MCP Inspector'],
    );
    const listed = JSON.parse((await cli(['clients', 'list', '--json', '--data', data])).stdout) as Array<{ client_id: string; client_name: string }>;
    for (const [, clientId] of made)
      assert.ok(
        listed.some((client) => client.client_id === clientId),
        clientId,
      );
    assert.ok(listed.some((client) => client.client_name === 'Gemini CLI MCP Client'));
  });

  it('usage errors exit 2', async () => {
    for (const [args, message] of [
      [['doctor'], /doctor needs the context server URL/],
      [['doctor', 'ftp://example.com/mcp'], /not an http or https URL/],
      [['doctor', mcpUrl, '--timeout', '0'], /--timeout must be a number of seconds above 0, at most 300/],
      [['doctor', mcpUrl, '--host', 'Netscape'], /unknown host Netscape; the hosts are ChatGPT, Claude, /],
    ] as const) {
      const result = await cli([...args]);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, message);
    }
  });
});

describe('doctor against serve at a public https name', { timeout: 300_000 }, () => {
  let server: RunningServer;
  let fetchByName: typeof fetch;

  before(async () => {
    const port = await freePort();
    // As behind a TLS-terminating proxy: the issuer is the public https URL.
    server = await startServe(['--port', String(port), '--data', tempDataFolder(), '--quiet', '--issuer', 'https://mcp.example.com']);
    fetchByName = publicNames({ 'https://mcp.example.com': port });
  });
  after(async () => {
    await server?.stop();
  });

  it('every host connects, each by the way it prefers', async () => {
    const report = await runDoctor('https://mcp.example.com/mcp', { fetch: fetchByName });
    assert.deepEqual(
      report.hosts.filter((h) => !h.connects),
      [],
    );
    assert.equal(report.connects, true);
    assert.deepEqual(Object.fromEntries(report.hosts.map((h) => [h.host, h.profile])), {
      ChatGPT: 'chatgpt-private-key-jwt',
      Claude: 'claude-document',
      'Claude Code': 'claude-code-document',
      Cursor: 'cursor-registration',
      'VS Code': 'vscode-document',
      'Copilot CLI': 'copilot-cli-document',
      Codex: 'codex-document',
      'Gemini CLI': 'gemini-cli-registration',
      Goose: 'goose-document',
      'mcp-remote': 'mcp-remote-registration',
      'MCP Inspector': 'mcp-inspector-registration',
    });
    assert.deepEqual(
      report.checks.filter((c) => c.result === 'fails' || c.result === 'warning'),
      [],
    );
  });
});
