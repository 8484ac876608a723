/**
 * Two applications on one credentials file, as a person has them: `context-auth login` (the CLI),
 * then a program of their own built on the library with `clientName: 'My App'` and the default
 * file (CONTEXT_AUTH_CREDENTIALS). The program must not borrow the CLI's registration or tokens: it
 * registers as itself, the consent page names it, and its token carries its own client id. The
 * CLI's entries start out in the file format written before applications were told apart
 * (version 1), which the CLI must still read, and which becomes version 3 on the first write; so
 * does a file in the layout before grants named their identity (version 2).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { Browser, signInAndConsent } from '../helpers/harness.js';
import { cli, cliWithEnv, freePort, startCli, startNode, startServe, tempDataFolder, type RunningCli, type RunningServer } from './serve-process.js';

const USER = { username: 'alice', password: 'correct horse battery staple' };
const CLI_APPLICATION = 'context-auth CLI';
const LIBRARY = pathToFileURL(resolve(import.meta.dirname, '../../dist/client/index.js')).href;

/** A program of the person's own: signs in (URL printed), then prints whoami's answer as one JSON line. */
const MY_APP = `
  const { ContextClient } = await import(${JSON.stringify(LIBRARY)});
  const [serverUrl, interactive] = process.argv.slice(1);
  const client = new ContextClient({ serverUrl, clientName: 'My App', noBrowser: true, interactive: interactive === 'yes', onProgress: (m) => console.error(m) });
  const response = await client.fetch(serverUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } }),
  });
  const text = await response.text();
  const data = text.startsWith('{') ? text : text.split('\\n').find((line) => line.startsWith('data: ')).slice(6);
  console.log(JSON.stringify(JSON.parse(data).result.structuredContent));
`;

interface CredentialsFile {
  version: number;
  applications: Record<
    string,
    { clients: Record<string, { clientId: string }>; grants: Record<string, { clientId: string; accessToken: string; identity?: unknown }> }
  >;
}

describe('the CLI and another application sharing one credentials file', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  const credentials = join(tempDataFolder(), 'credentials.json');
  const env = { CONTEXT_AUTH_CREDENTIALS: credentials, PATH: join(tempDataFolder(), 'bin'), CONTEXT_AUTH_CLIENT_SECRET: '', BROWSER: '', DISPLAY: '' };
  let server: RunningServer;
  let issuer: string;
  let mcp: string;
  const browser = new Browser((path, init) => fetch(new URL(path, issuer), init));

  /** Plays the person for a running sign-in: opens the printed URL, signs in, approves; returns the pages shown. */
  async function approve(child: RunningCli): Promise<{ pages: string[]; authorizationUrl: URL }> {
    const [, href] = await child.waitForStderr(/^(http:\/\/\S+\/authorize\?\S+)$/m);
    const authorizationUrl = new URL(href!);
    const pages: string[] = [];
    const first = await browser.fetch(authorizationUrl.pathname + authorizationUrl.search);
    const callback = await signInAndConsent(browser, first, USER, 'approve', issuer, pages);
    const answer = await fetch(callback);
    assert.equal(answer.status, 200, await answer.text());
    return { pages, authorizationUrl };
  }

  const consentHeading = (pages: string[]): string | undefined => pages.map((html) => /<h1>(Authorize [^<]*)<\/h1>/.exec(html)?.[1]).find(Boolean);
  const readFile = (): CredentialsFile => JSON.parse(readFileSync(credentials, 'utf8')) as CredentialsFile;
  const whoami = async (): Promise<{ client_id: string; username: string }> => {
    const result = await cliWithEnv(['call', mcp, 'tools/call', '{"name":"whoami"}'], { env });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '', 'the CLI used its stored token: no sign-in');
    return (JSON.parse(result.stdout) as { structuredContent: { client_id: string; username: string } }).structuredContent;
  };

  before(async () => {
    const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    server = await startServe(['--port', String(await freePort()), '--data', data, '--quiet']);
    issuer = server.issuer;
    mcp = `${issuer}/mcp`;
  });
  after(async () => {
    await server?.stop();
  });

  let cliClientId: string;

  it('the CLI signs in as itself', async () => {
    const login = startCli(['login', mcp, '--no-browser', '--json'], { env });
    const { pages } = await approve(login);
    const result = await login.exit;
    assert.equal(result.code, 0, result.stderr);
    assert.equal(consentHeading(pages), `Authorize ${CLI_APPLICATION}?`);
    cliClientId = (JSON.parse(result.stdout) as { client_id: string }).client_id;
  });

  /** The CLI's clients and grants as the layouts before identities kept them: one grant per (server, issuer), no identity. */
  function oldLayout(): { clients: Record<string, unknown>; grants: Record<string, Record<string, unknown>> } {
    const { clients, grants } = readFile().applications[CLI_APPLICATION]!;
    const old = Object.values(grants).map(({ identity: _identity, ...grant }) => grant as Record<string, unknown>);
    return { clients, grants: Object.fromEntries(old.map((grant) => [`${String(grant.serverUrl)} ${String(grant.issuer)}`, grant])) };
  }

  it('a file in the layout before identities (version 2): the person’s sign-in is still the CLI’s, a program’s grant is not carried over', async () => {
    const { clients, grants } = oldLayout();
    // What `login --grant-type client_credentials` left there before: no refresh token, a client given on the command line.
    const program = { ...Object.values(grants)[0]!, serverUrl: `${issuer}/other`, clientId: 'robot-1', accessToken: 'program-token', refreshToken: undefined };
    const v2 = `${JSON.stringify({ version: 2, applications: { [CLI_APPLICATION]: { clients, grants: { ...grants, [`${issuer}/other ${issuer}`]: program } } } }, null, 2)}\n`;
    writeFileSync(credentials, v2);
    assert.equal((await whoami()).client_id, cliClientId);
    assert.equal(readFileSync(credentials, 'utf8'), v2, 'reading alone rewrites nothing');
    const status = await cliWithEnv(['status', '--json'], { env });
    assert.deepEqual(
      (JSON.parse(status.stdout) as { server: string; identity: string; client_id: string }[]).map((row) => [row.server, row.identity, row.client_id]),
      [[mcp, 'person', cliClientId]],
    );
  });

  it('a file in the old format (version 1, no applications) is still the CLI’s', async () => {
    // Written back as the previous version wrote it: one client per issuer, one grant per server.
    const v1 = `${JSON.stringify({ version: 1, ...oldLayout() }, null, 2)}\n`;
    writeFileSync(credentials, v1);
    assert.equal((await whoami()).client_id, cliClientId);
    assert.equal(readFileSync(credentials, 'utf8'), v1, 'reading alone rewrites nothing');
  });

  it('another application does not use the CLI’s tokens', async () => {
    const result = await startNode(['--input-type=module', '-e', MY_APP, mcp, 'no'], { env }).exit;
    assert.notEqual(result.code, 0, result.stdout);
    assert.match(result.stderr, /login_required|log in first/);
  });

  it('it registers as itself, the consent page names it, and its token carries its own client id', async () => {
    const app = startNode(['--input-type=module', '-e', MY_APP, mcp, 'yes'], { env, timeoutMs: 60_000 });
    const { pages, authorizationUrl } = await approve(app);
    const result = await app.exit;
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, new RegExp(`Registering a client at ${issuer}`));
    assert.equal(consentHeading(pages), 'Authorize My App?', 'the person approves the application that asks');
    const appClientId = authorizationUrl.searchParams.get('client_id');
    assert.ok(appClientId);
    assert.notEqual(appClientId, cliClientId);
    const seen = JSON.parse(result.stdout.trim()) as { client_id: string; username: string };
    assert.deepEqual([seen.client_id, seen.username], [appClientId, USER.username]);

    // The file is version 3 now, each application under its own name; the CLI's entries are kept.
    const file = readFile();
    assert.equal(file.version, 3);
    assert.deepEqual(Object.keys(file.applications).sort(), [CLI_APPLICATION, 'My App'].sort());
    assert.deepEqual(
      Object.values(file.applications['My App']!.grants).map((grant) => grant.clientId),
      [appClientId],
    );
    assert.deepEqual(
      Object.values(file.applications[CLI_APPLICATION]!.grants).map((grant) => grant.clientId),
      [cliClientId],
    );
    assert.equal((await whoami()).client_id, cliClientId, 'the CLI still uses its own');
  });

  it('status lists both; logout forgets only the CLI’s tokens', async () => {
    const status = await cliWithEnv(['status', '--json'], { env });
    assert.equal(status.code, 0, status.stderr);
    const rows = JSON.parse(status.stdout) as { application: string; client_id: string }[];
    assert.deepEqual(rows.map((row) => row.application).sort(), [CLI_APPLICATION, 'My App'].sort());

    const logout = await cliWithEnv(['logout', mcp], { env });
    assert.equal(logout.code, 0, logout.stderr);
    const file = readFile();
    assert.deepEqual(file.applications[CLI_APPLICATION]!.grants, {});
    assert.equal(Object.keys(file.applications['My App']!.grants).length, 1, 'My App stays signed in');
    const again = await startNode(['--input-type=module', '-e', MY_APP, mcp, 'no'], { env }).exit;
    assert.equal(again.code, 0, again.stderr);
  });
});
