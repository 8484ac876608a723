/**
 * The client verbs as a user runs them: `context-auth login`, `call`, `status` and `logout` as
 * child processes against `context-auth serve` (another child, temporary data folder), with the
 * credentials in a temporary file through CONTEXT_AUTH_CREDENTIALS. The test plays the person at
 * the browser: it reads the authorization URL the CLI prints, drives our login and consent pages
 * over HTTP, and follows the final redirect to the CLI's loopback callback.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Browser, signInAndConsent } from '../helpers/harness.js';
import { cli, cliWithEnv, freePort, startCli, startServe, tempDataFolder, type CliResult, type RunningServer } from './serve-process.js';

const USER = { username: 'alice', password: 'correct horse battery staple' };

type StoredGrantFields = {
  serverUrl: string;
  issuer: string;
  clientId: string;
  accessToken: string;
  refreshToken?: string;
  expiresAt?: number;
  scope?: string;
};

interface CredentialsFile {
  version: number;
  applications: Record<string, { clients: Record<string, { clientId: string; issuer: string }>; grants: Record<string, StoredGrantFields> }>;
}

/** What the CLI's registrations and grants are filed under. */
const CLI_APPLICATION = 'context-auth CLI';

/**
 * The error is one line, "context-auth: …", the last on stderr (progress lines may precede it),
 * and there is no stack trace.
 */
function assertOneLineError(result: CliResult, code: number): string {
  assert.equal(result.code, code, `exit code; stderr: ${result.stderr}`);
  assert.match(result.stderr, /(^|\n)context-auth: [^\n]+\n$/, `ends with one error line: ${JSON.stringify(result.stderr)}`);
  assert.equal(result.stderr.match(/^context-auth: /gm)?.length, 1, 'one error line');
  assert.doesNotMatch(result.stderr, /\n\s+at |Error:|\{$/m, 'no stack trace');
  return result.stderr.trimEnd().split('\n').at(-1)!;
}

describe('context-auth login, call, status and logout against context-auth serve', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  const home = tempDataFolder();
  const credentials = join(home, 'config', 'context-auth', 'credentials.json');
  // No opener on the PATH: a CLI that wrongly falls back to the browser prints the URL instead of opening one.
  const emptyBin = join(home, 'bin');
  mkdirSync(emptyBin);
  const env = { CONTEXT_AUTH_CREDENTIALS: credentials, PATH: emptyBin, CONTEXT_AUTH_CLIENT_SECRET: '', BROWSER: '', DISPLAY: '' };
  let server: RunningServer;
  let issuer: string;
  let mcp: string;
  let userId: string;
  /** Everything any client verb printed, checked for tokens at the end. */
  const outputs: { args: string[]; result: CliResult }[] = [];
  /** Every token the credentials file held at some point. */
  const secrets = new Set<string>();
  const browser = new Browser((path, init) => fetch(new URL(path, issuer), init));

  async function run(args: string[]): Promise<CliResult> {
    const result = await cliWithEnv(args, { env });
    outputs.push({ args, result });
    return result;
  }

  function readCredentials(): CredentialsFile {
    const file = JSON.parse(readFileSync(credentials, 'utf8')) as CredentialsFile;
    for (const grant of Object.values(file.applications).flatMap((application) => Object.values(application.grants))) {
      secrets.add(grant.accessToken);
      if (grant.refreshToken) secrets.add(grant.refreshToken);
    }
    return file;
  }

  function onlyGrant(): StoredGrantFields {
    const grants = Object.values(readCredentials().applications).flatMap((application) => Object.values(application.grants));
    assert.equal(grants.length, 1, 'one stored grant');
    return grants[0]!;
  }

  /**
   * `login` as a child process, with the test as the person at the browser: reads the printed
   * authorization URL, signs in and approves (or finds both remembered), and follows the final
   * redirect to the CLI's loopback callback.
   */
  async function login(extra: string[] = []): Promise<{ result: CliResult; authorizationUrl: URL }> {
    const args = ['login', mcp, '--no-browser', ...extra];
    const child = startCli(args, { env });
    const [, href] = await child.waitForStderr(/^(http:\/\/\S+\/authorize\?\S+)$/m);
    const authorizationUrl = new URL(href!);
    const first = await browser.fetch(authorizationUrl.pathname + authorizationUrl.search);
    const callback = await signInAndConsent(browser, first, USER, 'approve', issuer);
    assert.equal(callback.hostname, '127.0.0.1', `the redirect goes to the CLI's loopback: ${callback.href}`);
    assert.equal(callback.searchParams.get('iss'), issuer);
    const page = await fetch(callback);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /Signed in/);
    const result = await child.exit;
    outputs.push({ args, result });
    return { result, authorizationUrl };
  }

  async function postToken(values: Record<string, string>): Promise<Response> {
    return fetch(`${issuer}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(values) });
  }

  before(async () => {
    const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    const users = await cli(['users', 'list', '--json', '--data', data]);
    userId = (JSON.parse(users.stdout) as { id: string; username: string }[]).find((u) => u.username === USER.username)!.id;
    server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet']);
    issuer = server.issuer;
    mcp = `${issuer}/mcp`;
  });

  after(async () => {
    await server?.stop();
  });

  let clientId: string;

  it('login --no-browser prints the URL, waits for the browser, and says what it used', async () => {
    const { result, authorizationUrl } = await login();
    assert.equal(result.code, 0, result.stderr);

    assert.equal(authorizationUrl.origin + authorizationUrl.pathname, `${issuer}/authorize`);
    assert.equal(authorizationUrl.searchParams.get('resource'), mcp);
    assert.equal(authorizationUrl.searchParams.get('code_challenge_method'), 'S256');
    assert.match(authorizationUrl.searchParams.get('redirect_uri') ?? '', /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    clientId = authorizationUrl.searchParams.get('client_id')!;
    assert.ok(clientId);

    // One progress line per step, in order, on stderr.
    const steps = [
      `Discovering the authorization server for ${mcp}`,
      `Registering a client at ${issuer}`,
      'Open this URL in a browser to authorize:',
      'Waiting for the browser',
      'Exchanging the code for tokens',
    ];
    let at = -1;
    for (const step of steps) {
      const found = result.stderr.indexOf(step);
      assert.ok(found > at, `"${step}" after the previous step in:\n${result.stderr}`);
      at = found;
    }

    assert.match(result.stdout, new RegExp(`^Logged in to ${mcp}\\n`));
    assert.match(result.stdout, new RegExp(`authorization server\\s+${issuer} \\(revision B\\)`));
    assert.match(result.stdout, new RegExp(`client\\s+${clientId}\\n`));
    assert.match(result.stdout, /scopes\s+mcp:tools\n/);
    assert.match(result.stdout, /access token\s+expires in \d+ min, refreshed automatically/);
  });

  it('keeps the tokens in a 0600 file and shows them only on request', async () => {
    assert.equal(statSync(credentials).mode & 0o777, 0o600);
    const grant = onlyGrant();
    assert.equal(grant.serverUrl, mcp);
    assert.equal(grant.clientId, clientId);
    assert.ok(grant.refreshToken);

    const status = await run(['status']);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^SERVER\s+APPLICATION\s+IDENTITY\s+ISSUER\s+CLIENT_ID\s+SCOPE\s+EXPIRES\s+REFRESH\n/);
    const expires = new Date(grant.expiresAt! * 1000).toISOString().replace('.000Z', 'Z');
    assert.match(status.stdout, new RegExp(`${mcp}\\s+${CLI_APPLICATION}\\s+person\\s+${issuer}\\s+${clientId}\\s+mcp:tools\\s+${expires}\\s+yes`));
    assert.ok(!status.stdout.includes(grant.accessToken));

    const json = await run(['status', '--json']);
    const rows = JSON.parse(json.stdout) as Record<string, string>[];
    assert.deepEqual(
      rows.map((row) => [row.server, row.application, row.identity, row.client_id, row.refresh]),
      [[mcp, CLI_APPLICATION, 'person', clientId, 'yes']],
    );
    assert.equal(rows[0]!.access_token, undefined);

    const shown = await cliWithEnv(['status', '--show-token'], { env });
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /ACCESS_TOKEN/);
    assert.ok(shown.stdout.includes(grant.accessToken), 'status --show-token shows the access token');
    assert.ok(!shown.stdout.includes(grant.refreshToken!), 'never the refresh token');
  });

  it('login --json prints one JSON document on stdout and only the URL on stderr', async () => {
    const { result } = await login(['--json']);
    assert.equal(result.code, 0, result.stderr);
    const document = JSON.parse(result.stdout) as Record<string, unknown>;
    assert.deepEqual(document, {
      server: mcp,
      issuer,
      revision: 'B',
      client_id: clientId,
      token_type: 'Bearer',
      scope: 'mcp:tools',
      expires_at: document.expires_at,
      refresh_token: true,
    });
    assert.equal(typeof document.expires_at, 'number');
    assert.deepEqual(nonUrlLines(result.stderr), ['Open this URL in a browser to authorize:']);
  });

  it('login --quiet prints no progress, only the URL to open', async () => {
    const { result } = await login(['--quiet']);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(nonUrlLines(result.stderr), ['Open this URL in a browser to authorize:']);
    assert.match(result.stdout, /^Logged in to /);
  });

  it('call runs one MCP request with the stored token', async () => {
    const whoami = await run(['call', mcp, 'tools/call', '{"name":"whoami"}']);
    assert.equal(whoami.code, 0, whoami.stderr);
    assert.equal(whoami.stderr, '', 'a stored, fresh token needs no discovery or login');
    const result = JSON.parse(whoami.stdout) as { structuredContent: Record<string, unknown>; content: { text: string }[] };
    // The person's username first: the subject alone is an id nobody recognises.
    assert.deepEqual(result.structuredContent, {
      username: USER.username,
      name: null,
      subject: userId,
      client_id: clientId,
      scopes: ['mcp:tools'],
      resource: mcp,
    });
    assert.deepEqual(JSON.parse(result.content[0]!.text), result.structuredContent);

    const list = await run(['call', mcp, 'tools/list']);
    assert.equal(list.code, 0, list.stderr);
    const tools = (JSON.parse(list.stdout) as { tools: { name: string }[] }).tools.map((tool) => tool.name);
    assert.deepEqual(tools.sort(), ['admin_report', 'whoami']);
  });

  it('call refuses params that are not JSON with exit 2 and one sentence', async () => {
    const bad = await run(['call', mcp, 'tools/call', '{name: whoami}']);
    assertOneLineError(bad, 2);
    assert.match(bad.stderr, /PARAMS_JSON is not valid JSON/);
    assert.equal(bad.stdout, '');
    const notObject = await run(['call', mcp, 'tools/call', '[1]']);
    assertOneLineError(notObject, 2);
  });

  it('call refreshes a rejected access token without the browser and stores the rotated refresh token', async () => {
    const file = readCredentials();
    const grants = file.applications[CLI_APPLICATION]!.grants;
    const [key, before] = Object.entries(grants)[0]!;
    grants[key] = { ...before, accessToken: 'garbage' };
    writeFileSync(credentials, JSON.stringify(file, null, 2));

    const whoami = await run(['call', mcp, 'tools/call', '{"name":"whoami"}']);
    assert.equal(whoami.code, 0, whoami.stderr);
    assert.doesNotMatch(whoami.stderr, /authorize|Open this URL|Waiting/, 'no browser');
    assert.equal((JSON.parse(whoami.stdout) as { structuredContent: { subject: string } }).structuredContent.subject, userId);

    const after = onlyGrant();
    assert.notEqual(after.accessToken, 'garbage');
    assert.ok(after.refreshToken);
    assert.notEqual(after.refreshToken, before.refreshToken, 'the refresh token rotated');
    assert.equal(statSync(credentials).mode & 0o777, 0o600);
  });

  it('logout revokes the refresh token, says where, and forgets the grant; a second logout says so', async () => {
    const grant = onlyGrant();
    const toolCall = () =>
      fetch(mcp, {
        method: 'POST',
        headers: { authorization: `Bearer ${grant.accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
    assert.equal((await toolCall()).status, 200, 'the access token works before the logout');
    const out = await run(['logout', mcp]);
    assert.equal(out.code, 0, out.stderr);
    assert.ok(
      out.stdout.startsWith(`Logged out of ${mcp} as the person: the refresh token was revoked at ${issuer}; a context server that follows its revocations`),
      out.stdout,
    );
    // The co-hosted context server refuses the access token on the very next request, long before its exp.
    const refused = await toolCall();
    assert.equal(refused.status, 401);
    assert.match(refused.headers.get('www-authenticate') ?? '', /invalid_token/);

    const status = await run(['status']);
    assert.equal(status.code, 0, status.stderr);
    assert.equal(status.stdout, '(none)\n');
    assert.deepEqual(readCredentials().applications[CLI_APPLICATION]!.grants, {});

    const refresh = await postToken({ grant_type: 'refresh_token', refresh_token: grant.refreshToken!, client_id: clientId });
    assert.equal(refresh.status, 400);
    assert.equal(((await refresh.json()) as { error: string }).error, 'invalid_grant');

    const again = await run(['logout', mcp]);
    assertOneLineError(again, 1);
    assert.match(again.stderr, new RegExp(`Not logged in to ${mcp} as the person\\.\\n`));
  });

  it('login --grant-type client_credentials needs no browser', async () => {
    const added = await cli(['clients', 'add', '--name', 'reporting job', '--grant-type', 'client_credentials', '--data', data]);
    assert.equal(added.code, 0, added.stderr);
    const service = JSON.parse(added.stdout) as { client_id: string; client_secret: string };
    secrets.add(service.client_secret);
    const flags = ['--grant-type', 'client_credentials', '--client-id', service.client_id, '--client-secret', service.client_secret];

    const login = await run(['login', mcp, ...flags, '--json']);
    assert.equal(login.code, 0, login.stderr);
    assert.doesNotMatch(login.stderr, /authorize|Waiting/);
    const document = JSON.parse(login.stdout) as Record<string, unknown>;
    assert.equal(document.client_id, service.client_id);
    assert.equal(document.issuer, issuer);
    assert.equal(document.refresh_token, false);
    // The secret is not written down: the next run passes it again (or CONTEXT_AUTH_CLIENT_SECRET).
    assert.ok(!readFileSync(credentials, 'utf8').includes(service.client_secret));

    const whoami = await run(['call', mcp, 'tools/call', '{"name":"whoami"}', ...flags]);
    assert.equal(whoami.code, 0, whoami.stderr);
    assert.equal((JSON.parse(whoami.stdout) as { structuredContent: { client_id: string } }).structuredContent.client_id, service.client_id);
    readCredentials();
  });

  it('answers mistakes with one sentence and exit 1, no stack', async () => {
    const http = await run(['login', 'http://example.com/mcp', '--no-browser']);
    assertOneLineError(http, 1);
    assert.match(http.stderr, /https/);

    const closedPort = await freePort();
    const unreachable = await run(['login', `http://127.0.0.1:${closedPort}/mcp`, '--no-browser']);
    assertOneLineError(unreachable, 1);
    assert.match(unreachable.stderr, new RegExp(`cannot reach http://127\\.0\\.0\\.1:${closedPort}/mcp`));
  });

  it('never printed a token or a secret outside status --show-token', () => {
    assert.ok(secrets.size >= 4, `tokens seen: ${secrets.size}`);
    for (const { args, result } of outputs) {
      for (const secret of secrets) {
        assert.ok(!result.stdout.includes(secret) && !result.stderr.includes(secret), `${args.join(' ')} printed a token`);
      }
    }
  });
});

/** The stderr lines that are not the URL itself. */
function nonUrlLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line !== '' && !/^https?:\/\/\S+$/.test(line));
}
