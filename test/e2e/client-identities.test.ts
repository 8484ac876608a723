/**
 * Whose tokens the client verbs use, against `context-auth serve` with a workload rule, as a
 * user meets it: alice signs in (`login`), then programs call the same server on the same
 * credentials file — a client_credentials client with a private key, another with a secret, a
 * workload (jwt-bearer) with its service account token — and each runs as itself; a plain `call`
 * stays alice's. A program's expired token is renewed by its own grant; `logout` of a program
 * revokes its access token (refused at serve's /mcp at once, a revocation event logged) and says
 * so; refused token requests are audited and shown with the server's OAuth error; and a `call`
 * that needs a person where none can be asked fails at once instead of waiting.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startTestIssuer, type TestIssuer } from '../helpers/enterprise-idp.js';
import { Browser, signInAndConsent } from '../helpers/harness.js';
import { cli, freePort, startCli, startServe, tempDataFolder, type CliResult, type RunningServer } from './serve-process.js';

const USER = { username: 'alice', password: 'correct horse battery staple' };
const CLI_APPLICATION = 'context-auth CLI';
/** How long a CLI that should answer at once may take before it counts as waiting for a person (it is then killed). */
const HANG_BOUND_MS = 20_000;

interface FiledGrant {
  identity: { kind: string; grantType?: string; clientId?: string };
  clientId: string;
  accessToken: string;
  refreshToken?: string;
  expiresAt?: number;
}
interface CredentialsFile {
  version: number;
  applications: Record<string, { grants: Record<string, FiledGrant> }>;
}

describe('client verbs: one grant per identity, against serve', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  const home = tempDataFolder();
  const credentials = join(home, 'credentials.json');
  // No opener on the PATH: a CLI that wrongly turns to the browser prints the URL instead of opening one.
  const emptyBin = join(home, 'bin');
  mkdirSync(emptyBin);
  const env = { CONTEXT_AUTH_CREDENTIALS: credentials, PATH: emptyBin, CONTEXT_AUTH_CLIENT_SECRET: '', BROWSER: '', DISPLAY: '' };
  let server: RunningServer;
  let platform: TestIssuer;
  let mcp: string;
  let personClientId: string;
  let robot: { client_id: string; client_secret: string };
  let keyRobot: { client_id: string };
  let keyFile: string;
  let saToken: string;

  /** A file only its owner may write, as the client verbs require of key and token files. */
  function privateFile(name: string, text: string): string {
    const file = join(home, name);
    writeFileSync(file, text);
    chmodSync(file, 0o600);
    return file;
  }

  const run = (args: string[]): Promise<CliResult> => startCli(args, { env, timeoutMs: HANG_BOUND_MS }).exit;
  const readFile = (): CredentialsFile => JSON.parse(readFileSync(credentials, 'utf8')) as CredentialsFile;
  const grants = (): FiledGrant[] => Object.values(readFile().applications[CLI_APPLICATION]!.grants);
  const grantOf = (clientId: string): FiledGrant | undefined => grants().find((grant) => grant.identity.clientId === clientId);
  const writeGrants = (change: (grant: FiledGrant) => FiledGrant): void => {
    const file = readFile();
    const filed = file.applications[CLI_APPLICATION]!.grants;
    for (const key of Object.keys(filed)) filed[key] = change(filed[key]!);
    writeFileSync(credentials, JSON.stringify(file, null, 2));
  };

  async function whoami(extra: string[] = []): Promise<{ subject: string; client_id: string; username?: string }> {
    const result = await run(['call', mcp, 'tools/call', '{"name":"whoami"}', ...extra]);
    assert.notEqual(result.code, 128, `the call hung: killed after ${HANG_BOUND_MS} ms:\n${result.stderr}`);
    assert.equal(result.code, 0, result.stderr);
    assert.doesNotMatch(result.stderr, /authorize\?|Open this URL|Waiting for the browser|Registering/, 'nobody sent to a browser, nothing registered');
    return (JSON.parse(result.stdout) as { structuredContent: { subject: string; client_id: string; username?: string } }).structuredContent;
  }

  const secretFlags = () => ['--grant-type', 'client_credentials', '--client-id', robot.client_id, '--client-secret', robot.client_secret];
  const keyFlags = () => ['--grant-type', 'client_credentials', '--client-id', keyRobot.client_id, '--private-key', keyFile];
  const workloadFlags = () => ['--grant-type', 'jwt-bearer', '--client-id', 'demo-agent', '--assertion-file', saToken];

  before(async () => {
    platform = await startTestIssuer();
    const rules = join(data, 'workloads.json');
    writeFileSync(
      rules,
      JSON.stringify([{ issuer: platform.issuer, subject: 'system:serviceaccount:demo:*', client: 'demo-agent', name: 'Demo agent', scopes: ['mcp:tools'] }]),
    );
    const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    server = await startServe(['--port', String(await freePort()), '--data', data, '--workload-config', rules, '--allow-insecure-idp']);
    mcp = `${server.issuer}/mcp`;

    const secret = await cli(['clients', 'add', '--name', 'reporting job', '--grant-type', 'client_credentials', '--data', data, '--json']);
    assert.equal(secret.code, 0, secret.stderr);
    robot = JSON.parse(secret.stdout) as typeof robot;
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwks = join(data, 'robot-keys.json');
    writeFileSync(jwks, JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), use: 'sig', alg: 'ES256' }] }));
    const keyed = await cli(['clients', 'add', '--name', 'key robot', '--grant-type', 'client_credentials', '--jwks', jwks, '--data', data, '--json']);
    assert.equal(keyed.code, 0, keyed.stderr);
    keyRobot = JSON.parse(keyed.stdout) as typeof keyRobot;
    keyFile = privateFile('robot.pem', privateKey.export({ format: 'pem', type: 'pkcs8' }).toString());
    const now = Math.floor(Date.now() / 1000);
    saToken = privateFile(
      'sa-token',
      await platform.sign({ iss: platform.issuer, sub: 'system:serviceaccount:demo:agent', aud: server.issuer, iat: now, exp: now + 600, jti: 'sa-token-1' }),
    );
  });

  after(async () => {
    await server?.stop();
    await platform?.close();
  });

  it('alice signs in', async () => {
    const child = startCli(['login', mcp, '--no-browser', '--json'], { env, timeoutMs: 60_000 });
    const [, href] = await child.waitForStderr(/^(http:\/\/\S+\/authorize\?\S+)$/m);
    const browser = new Browser((path, init) => fetch(new URL(path, server.issuer), init));
    const url = new URL(href!);
    const callback = await signInAndConsent(browser, await browser.fetch(url.pathname + url.search), USER, 'approve', server.issuer);
    assert.equal((await fetch(callback)).status, 200);
    const result = await child.exit;
    assert.equal(result.code, 0, result.stderr);
    personClientId = (JSON.parse(result.stdout) as { client_id: string }).client_id;
    assert.equal((await whoami()).username, USER.username);
  });

  it('call --grant-type client_credentials --client-id --private-key runs as that client, not as alice', async () => {
    const seen = await whoami(keyFlags());
    assert.deepEqual([seen.client_id, seen.subject, seen.username], [keyRobot.client_id, keyRobot.client_id, undefined]);
  });

  it('call --grant-type jwt-bearer --client-id --assertion-file runs as the workload, not with alice’s token', async () => {
    const seen = await whoami(workloadFlags());
    assert.deepEqual([seen.client_id, seen.username], ['demo-agent', undefined]);
  });

  it('after a client_credentials call, a plain call is alice’s again', async () => {
    assert.equal((await whoami(secretFlags())).client_id, robot.client_id);
    const seen = await whoami();
    assert.deepEqual([seen.username, seen.client_id], [USER.username, personClientId]);
    // And each program finds its own stored token again.
    assert.equal((await whoami(keyFlags())).client_id, keyRobot.client_id);
  });

  it('the file keeps one grant per identity, and status shows whose each is', async () => {
    const file = readFile();
    assert.equal(file.version, 3);
    assert.deepEqual(
      grants()
        .map((grant) => (grant.identity.kind === 'person' ? `person ${grant.clientId}` : `${grant.identity.grantType} ${grant.identity.clientId}`))
        .sort(),
      [`client_credentials ${keyRobot.client_id}`, `client_credentials ${robot.client_id}`, 'jwt-bearer demo-agent', `person ${personClientId}`].sort(),
    );
    const status = await run(['status']);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^SERVER\s+APPLICATION\s+IDENTITY\s+ISSUER\s+CLIENT_ID\s+/);
    assert.match(status.stdout, new RegExp(`${mcp}\\s+${CLI_APPLICATION}\\s+person\\s+\\S+\\s+${personClientId}\\s`));
    assert.match(status.stdout, new RegExp(`${mcp}\\s+${CLI_APPLICATION}\\s+program: client_credentials\\s+\\S+\\s+${robot.client_id}\\s`));
    assert.match(status.stdout, new RegExp(`${mcp}\\s+${CLI_APPLICATION}\\s+program: jwt-bearer\\s+\\S+\\s+demo-agent\\s`));
  });

  it('a program’s expired token is renewed by its own grant: no browser, no registration, even with --no-browser and no terminal', async () => {
    const before = grantOf(robot.client_id)!;
    writeGrants((grant) => (grant.identity.clientId === robot.client_id ? { ...grant, expiresAt: Math.floor(Date.now() / 1000) - 5 } : grant));
    assert.equal((await whoami([...secretFlags(), '--no-browser'])).client_id, robot.client_id);
    assert.notEqual(grantOf(robot.client_id)!.accessToken, before.accessToken);
  });

  it('a wrong client secret: the server’s invalid_client and description, and a token_refused event without the secret', async () => {
    const wrong = 'wrong-secret-4711-abcdef';
    // A file with no token stored for the client, so that one is asked for.
    const result = await run([
      'call',
      mcp,
      'tools/list',
      '--grant-type',
      'client_credentials',
      '--client-id',
      robot.client_id,
      '--client-secret',
      wrong,
      '--credentials',
      join(home, 'fresh-credentials.json'),
    ]);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /invalid_client \(client authentication failed\)/);
    assert.doesNotMatch(result.stderr, /WWW-Authenticate/);
    await server.waitForOutput(
      new RegExp(`"event":"token_refused".*"grant_type":"client_credentials".*"error":"invalid_client".*"client_id":"${robot.client_id}"`),
    );
    assert.ok(!server.output().includes(wrong), 'the secret is not logged');
  });

  it('a refused jwt-bearer grant: the server’s invalid_grant and reason, and a token_refused event', async () => {
    const now = Math.floor(Date.now() / 1000);
    const stranger = privateFile(
      'stranger-token',
      await platform.sign({ iss: platform.issuer, sub: 'system:serviceaccount:other:job', aud: server.issuer, iat: now, exp: now + 600, jti: 'stranger-1' }),
    );
    const result = await run([
      'call',
      mcp,
      'tools/list',
      '--grant-type',
      'jwt-bearer',
      '--client-id',
      'demo-agent',
      '--assertion-file',
      stranger,
      '--credentials',
      join(home, 'other-credentials.json'),
    ]);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /the jwt-bearer grant failed: invalid_grant \(.+\)/);
    await server.waitForOutput(/"event":"token_refused".*"grant_type":"urn:ietf:params:oauth:grant-type:jwt-bearer".*"error":"invalid_grant"/);
  });

  it('logout of a client_credentials grant revokes its access token: serve’s /mcp refuses it at once, a revocation is logged, and it says so', async () => {
    const grant = grantOf(robot.client_id)!;
    const toolsList = () =>
      fetch(mcp, {
        method: 'POST',
        headers: { authorization: `Bearer ${grant.accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
    assert.equal((await toolsList()).status, 200);
    const out = await run(['logout', mcp, ...secretFlags()]);
    assert.equal(out.code, 0, out.stderr);
    assert.match(
      out.stdout,
      new RegExp(`^Logged out of ${mcp} as the program ${robot.client_id} \\(client_credentials\\): the access token was revoked at ${server.issuer};`),
    );
    const refused = await toolsList();
    assert.equal(refused.status, 401);
    assert.match(refused.headers.get('www-authenticate') ?? '', /invalid_token/);
    await server.waitForOutput(new RegExp(`"event":"token_revoked".*"kind":"access_token".*"client_id":"${robot.client_id}"`));
    assert.equal(grantOf(robot.client_id), undefined);
    assert.equal(grants().length, 3, 'the other identities’ grants stay');

    const again = await run(['logout', mcp, ...secretFlags()]);
    assert.equal(again.code, 1);
    assert.match(
      again.stderr,
      new RegExp(
        `Not logged in to ${mcp} as the program ${robot.client_id} \\(client_credentials\\)\\. Stored for it: the person \\(\`context-auth logout ${mcp}\`\\)`,
      ),
    );
  });

  it('a tool that needs more scope, where no sign-in can widen it: the server’s insufficient_scope and the scope, not the SDK’s text', async () => {
    const result = await run(['call', mcp, 'tools/call', '{"name":"admin_report"}', '--no-browser']);
    assert.equal(result.code, 1, result.stderr);
    assert.match(
      result.stderr,
      new RegExp(
        `^context-auth: tools/call failed: ${mcp} refused the request \\(HTTP 403\\): insufficient_scope \\(.+\\); it needs the scope [^\\n]*mcp:admin[^\\n]*\\n$`,
        'm',
      ),
    );
    assert.doesNotMatch(result.stderr, /Streamable HTTP error|Error POSTing/);
  });

  it('call --no-browser with no terminal, when only a person could go on: login_required at once, naming the command', async () => {
    // The person's grant is revoked at the server: serve's /mcp refuses its token, and its refresh token is dead.
    const person = grants().find((grant) => grant.identity.kind === 'person')!;
    const revoked = await fetch(`${server.issuer}/revoke`, {
      method: 'POST',
      body: new URLSearchParams({ token: person.refreshToken!, client_id: person.clientId }),
    });
    assert.equal(revoked.status, 200);
    for (const extra of [[], ['--json']]) {
      const result = await run(['call', mcp, 'tools/list', '--no-browser', ...extra]);
      assert.notEqual(result.code, 128, `the call hung waiting for a person: killed after ${HANG_BOUND_MS} ms:\n${result.stderr}`);
      assert.equal(result.code, 1, result.stderr);
      const said = extra.length > 0 ? (JSON.parse(result.stdout) as { error: string; message: string }) : { error: 'login_required', message: result.stderr };
      assert.equal(said.error, 'login_required');
      // The first call finds the grant ended (and forgets it); the second finds none.
      assert.match(
        said.message,
        new RegExp(
          `${extra.length > 0 ? 'log in first' : 'ended \\(the refresh failed: invalid_grant.*log in again'}: with --no-browser and no terminal nobody can sign in here; run \`context-auth login ${mcp}\`\n?$`,
        ),
      );
      assert.doesNotMatch(result.stderr, /authorize\?|Open this URL|Registering/);
    }
    // The programs are not affected.
    assert.equal((await whoami(keyFlags())).client_id, keyRobot.client_id);
  });

  it('call --no-browser with no terminal and nothing stored: login_required at once', async () => {
    const result = await startCli(['call', mcp, 'tools/list', '--no-browser', '--credentials', join(home, 'empty', 'credentials.json')], {
      env,
      timeoutMs: HANG_BOUND_MS,
    }).exit;
    assert.notEqual(result.code, 128, `the call hung waiting for a person: killed after ${HANG_BOUND_MS} ms:\n${result.stderr}`);
    assert.equal(result.code, 1, result.stderr);
    assert.match(
      result.stderr,
      /context-auth: tools\/list failed: no valid authorization of the person for .*; log in first: with --no-browser and no terminal nobody can sign in here; run `context-auth login /,
    );
  });
});
