/**
 * The examples in examples/ run as a newcomer runs them: `context-auth serve --resource <the
 * example's URL>` (the built CLI), the Hono and the Express example servers
 * (`node --import tsx examples/…`, importing the package by its public name, so from dist/), and
 * `examples/client.ts` against each. The test is the person at the browser: it reads the sign-in
 * URL the client prints (no browser can open: PATH holds no opener), signs in as alice on our
 * pages and approves, and follows the redirect to the client's loopback. The client's tool calls
 * then succeed and say who the token names. The example servers follow serve's revocation list:
 * an application revoked at /account has its tokens refused there within the list's interval.
 * examples/authorization-server.ts, the server in a program of its own, serves someone `users
 * add` put in its file, and SIGTERM ends its scope: the store is closed (SQLite removes its
 * write-ahead log) and the program exits.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Browser, parseForm, pkcePair, signInAndConsent } from '../helpers/harness.js';
import { cli, freePort, startNode, startServe, tempDataFolder, type RunningCli, type RunningServer } from './serve-process.js';

const EXAMPLES = resolve(import.meta.dirname, '../../examples');
const USER = { username: 'alice', password: 'correct horse battery staple' };

interface StoredGrants {
  applications: Record<string, { grants: Record<string, { serverUrl: string; clientId: string; accessToken: string }> }>;
}

/** Stops a child politely, then for sure. */
async function stop(child: RunningCli): Promise<void> {
  if (child.process.exitCode !== null || child.process.signalCode !== null) return;
  child.process.kill('SIGTERM');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), 5_000);
  await child.exit;
  clearTimeout(timer);
}

describe('the examples: Hono and Express MCP servers guarded against serve, and the client script', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  const home = tempDataFolder();
  const credentials = join(home, 'credentials.json');
  // No opener on the PATH: the client prints the sign-in URL, which the test opens.
  const emptyBin = join(home, 'bin');
  mkdirSync(emptyBin);
  const clientEnv = { CONTEXT_AUTH_CREDENTIALS: credentials, PATH: emptyBin, BROWSER: '', DISPLAY: '' };
  const examples = [
    { name: 'hono', file: 'hono-server.ts', serverName: 'Hono', port: 0, url: '' },
    { name: 'express', file: 'express-server.ts', serverName: 'Express', port: 0, url: '' },
  ];
  const running: RunningCli[] = [];
  let server: RunningServer;
  let userId: string;

  before(async () => {
    const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    const users = await cli(['users', 'list', '--json', '--data', data]);
    userId = (JSON.parse(users.stdout) as { id: string; username: string }[]).find((u) => u.username === USER.username)!.id;
    for (const example of examples) {
      example.port = await freePort();
      example.url = `http://127.0.0.1:${example.port}/mcp`;
    }
    server = await startServe(['--port', '0', '--data', data, '--quiet', ...examples.flatMap((e) => ['--resource', e.url])]);
    // The client the example servers read the revocation list with, added as the examples' header says.
    const reader = await cli(['clients', 'add', '--name', 'example-server', '--grant-type', 'client_credentials', '--introspect', '--json', '--data', data]);
    assert.equal(reader.code, 0, reader.stderr);
    const { client_id: readerId, client_secret: readerSecret } = JSON.parse(reader.stdout) as { client_id: string; client_secret: string };
    for (const example of examples) {
      const child = startNode(['--import', 'tsx', join(EXAMPLES, example.file)], {
        env: { PORT: String(example.port), CONTEXT_AUTH_ISSUER: server.issuer, REVOCATIONS_CLIENT_ID: readerId, REVOCATIONS_CLIENT_SECRET: readerSecret },
        timeoutMs: 110_000,
      });
      running.push(child);
      await child.waitForStderr(new RegExp(`MCP server \\(${example.serverName}\\) at ${example.url}`), 30_000);
    }
  });

  after(async () => {
    for (const child of running) await stop(child);
    await server?.stop();
  });

  it("serve's banner lists every resource it issues tokens for", () => {
    const banner = server.output();
    assert.match(banner, new RegExp(`resources\\s+${server.issuer}/mcp\\s+\\(the demo; the default when a request names none\\)\\n`));
    for (const example of examples) assert.match(banner, new RegExp(`\\n\\s+${example.url}\\s+\\(--resource\\)\\n`));
    assert.doesNotMatch(banner, /to protect your own context server/, 'no hint once --resource is given');
  });

  for (const example of examples) {
    it(`examples/client.ts signs in once and calls the ${example.name} example's tools`, async () => {
      const client = startNode(['--import', 'tsx', join(EXAMPLES, 'client.ts'), example.url], { env: clientEnv, timeoutMs: 60_000 });
      running.push(client);
      const [, href] = await client.waitForStderr(/^(http:\/\/\S+\/authorize\?\S+)$/m, 30_000);
      const authorizationUrl = new URL(href!);
      assert.equal(authorizationUrl.origin, server.issuer);
      assert.equal(authorizationUrl.searchParams.get('resource'), example.url, 'the token is asked for the example, not the demo');

      const browser = new Browser((path, init) => fetch(new URL(path, server.issuer), init));
      const first = await browser.fetch(authorizationUrl.pathname + authorizationUrl.search);
      const callback = await signInAndConsent(browser, first, USER, 'approve', server.issuer);
      assert.equal(callback.hostname, '127.0.0.1', `the redirect goes to the client's loopback: ${callback.href}`);
      assert.equal((await fetch(callback)).status, 200);

      const result = await client.exit;
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stderr.match(/Open this URL in a browser/g)?.length, 1, `one sign-in for the SDK and the plain fetch:\n${result.stderr}`);
      const [sdkLine, fetchLine] = result.stdout.trim().split('\n');
      const { whoami, echo } = JSON.parse(sdkLine!) as { whoami: { text: string }[]; echo: { text: string }[] };
      const { applications } = JSON.parse(readFileSync(credentials, 'utf8')) as StoredGrants;
      const grant = Object.values(applications['context-auth example client']?.grants ?? {}).find((g) => g.serverUrl === example.url);
      assert.ok(grant, 'the grant is stored for the example');
      // The tool saw what the guard verified: alice, through the client that registered, with mcp:tools.
      assert.deepEqual(JSON.parse(whoami[0]!.text), { subject: userId, clientId: grant.clientId, scopes: ['mcp:tools'] });
      assert.deepEqual(echo, [{ type: 'text', text: 'hello' }]);
      assert.deepEqual(JSON.parse(fetchLine!), { tools: ['whoami', 'echo'] });
      const claims = JSON.parse(Buffer.from(grant.accessToken.split('.')[1]!, 'base64url').toString()) as { aud: string; iss: string };
      assert.equal(claims.aud, example.url);
      assert.equal(claims.iss, server.issuer);
    });

    it(`the ${example.name} example refuses a token issued for another server`, async () => {
      // A token for the demo at <issuer>/mcp, obtained with client credentials: its audience is not the example.
      const added = await cli(['clients', 'add', '--name', `job-${example.name}`, '--grant-type', 'client_credentials', '--json', '--data', data]);
      assert.equal(added.code, 0, added.stderr);
      const { client_id: id, client_secret: secret } = JSON.parse(added.stdout) as { client_id: string; client_secret: string };
      const token = await fetch(`${server.issuer}/token`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource: `${server.issuer}/mcp` }),
      });
      assert.equal(token.status, 200);
      const { access_token: accessToken } = (await token.json()) as { access_token: string };
      const call = await fetch(example.url, {
        method: 'POST',
        headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      assert.equal(call.status, 401);
      assert.match(call.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    });
  }

  for (const example of examples) {
    it(`the ${example.name} example will not start without a client that can read the revocation list, or with a wrong secret`, async () => {
      const env = { PORT: String(await freePort()), CONTEXT_AUTH_ISSUER: server.issuer };
      const without = await startNode(['--import', 'tsx', join(EXAMPLES, example.file)], { env, timeoutMs: 30_000 }).exit;
      assert.equal(without.code, 1);
      assert.match(
        without.stderr,
        /Set REVOCATIONS_CLIENT_ID and REVOCATIONS_CLIENT_SECRET to a client allowed to read the revocation list:\nnpx context-auth clients add --name example-server --grant-type client_credentials --introspect\n/,
      );
      const reader = JSON.parse((await cli(['clients', 'list', '--json', '--data', data])).stdout) as { client_id: string; client_name: string }[];
      const readerId = reader.find((c) => c.client_name === 'example-server')!.client_id;
      const wrong = await startNode(['--import', 'tsx', join(EXAMPLES, example.file)], {
        env: { ...env, REVOCATIONS_CLIENT_ID: readerId, REVOCATIONS_CLIENT_SECRET: 'not-the-secret' },
        timeoutMs: 30_000,
      }).exit;
      assert.notEqual(wrong.code, 0);
      assert.match(wrong.stderr, /the revocation list answered 401/);
      assert.doesNotMatch(wrong.stderr, /MCP server/, 'it never listened');
    });
  }

  it('an application revoked at /account: both examples refuse its tokens once their revocation feed has read it', async () => {
    const { applications } = JSON.parse(readFileSync(credentials, 'utf8')) as StoredGrants;
    const grants = Object.values(applications['context-auth example client']?.grants ?? {});
    const tokenFor = (url: string): string => grants.find((g) => g.serverUrl === url)!.accessToken;
    const clientId = grants[0]!.clientId;
    for (const example of examples) assert.equal(await toolsListStatus(example.url, tokenFor(example.url)), 200, `${example.name} accepts the token before`);

    // The person, at their account page: sign in, revoke the example client.
    const browser = new Browser((path, init) => fetch(new URL(path, server.issuer), init));
    const origin = { origin: server.issuer };
    const signIn = parseForm(await (await browser.fetch('/account')).text());
    const signedIn = await browser.submit(signIn.action, { csrf: signIn.csrf, action: 'sign-in', ...USER }, origin);
    assert.equal(signedIn.status, 303);
    const account = await (await browser.fetch('/account')).text();
    assert.ok(account.includes(clientId), 'the account page lists the example client');
    const revoked = await browser.submit('/account', { csrf: parseForm(account).csrf, action: 'revoke', client_id: clientId }, origin);
    assert.equal(revoked.status, 303);
    const revokedAt = Date.now();

    // Each example polls the list every 5 s: the token is refused at its next poll, long before it expires.
    for (const example of examples) {
      const expiresAt = expiryOf(tokenFor(example.url));
      let status: number;
      while ((status = await toolsListStatus(example.url, tokenFor(example.url))) === 200) {
        assert.ok(Date.now() < expiresAt, `the ${example.name} example accepted the token until it expired, ${Date.now() - revokedAt} ms after the revocation`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(status, 401);
      const refusal = await fetch(example.url, { method: 'POST', headers: { authorization: `Bearer ${tokenFor(example.url)}` } });
      assert.match(refusal.headers.get('www-authenticate') ?? '', /error="invalid_token", error_description="the access token has been revoked"/);
    }
  });
});

/** When a JWT access token expires, in milliseconds since the epoch. */
function expiryOf(accessToken: string): number {
  const payload = JSON.parse(Buffer.from(accessToken.split('.')[1]!, 'base64url').toString()) as { exp: number };
  return payload.exp * 1000;
}

/** One tools/list at a context server with the token: its status. */
async function toolsListStatus(url: string, accessToken: string): Promise<number> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  await response.body?.cancel();
  return response.status;
}

describe('serve without --resource: a context server of your own is refused', { timeout: 300_000 }, () => {
  let server: RunningServer;
  const data = tempDataFolder();

  before(async () => {
    server = await startServe(['--port', '0', '--data', data, '--quiet']);
  });
  after(async () => {
    await server?.stop();
  });

  it('says how to add one, and answers invalid_target for its URL', async () => {
    assert.match(
      server.output(),
      /resources\s+\S+\/mcp\s+\(the demo[^\n]*\n\s+\(to protect your own context server, add its URL: --resource http:\/\/127\.0\.0\.1:3000\/mcp\)/,
    );
    const registered = await fetch(`${server.issuer}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'mine',
        redirect_uris: ['http://127.0.0.1:9/cb'],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
      }),
    });
    assert.equal(registered.status, 201);
    const { client_id: clientId } = (await registered.json()) as { client_id: string };
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: 'http://127.0.0.1:9/cb',
      state: 's',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      resource: 'http://127.0.0.1:3000/mcp',
    });
    const answer = await fetch(`${server.issuer}/authorize?${query}`, { redirect: 'manual' });
    const location = new URL(answer.headers.get('location') ?? 'http://invalid/');
    assert.equal(location.searchParams.get('error'), 'invalid_target', `${answer.status} ${location.href}`);
  });
});

describe('examples/authorization-server.ts: the server in a program of its own, stopped at the end of its scope', { timeout: 300_000 }, () => {
  it('serves at the URL it prints, signs in someone `users add` put in the same file, and on SIGTERM closes its store and exits', async () => {
    const folder = tempDataFolder();
    const database = join(folder, 'context-auth.db');
    const resource = 'http://127.0.0.1:3000/mcp';
    const child = startNode(['--import', 'tsx', join(EXAMPLES, 'authorization-server.ts')], {
      env: { PORT: '0', DATABASE: database, RESOURCE_URL: resource },
      timeoutMs: 50_000,
    });
    try {
      const [, url] = await child.waitForStderr(/^Authorization server at (http:\/\/127\.0\.0\.1:\d+)$/m, 30_000);
      const metadata = (await (await fetch(`${url}/.well-known/oauth-authorization-server`)).json()) as { issuer: string };
      assert.equal(metadata.issuer, url);

      const added = await cli(['users', 'add', USER.username, '--data', folder], `${USER.password}\n`);
      assert.equal(added.code, 0, added.stderr);
      const callback = 'http://127.0.0.1:9/callback';
      const registered = await fetch(`${url}/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'mine', redirect_uris: [callback], token_endpoint_auth_method: 'none' }),
      });
      assert.equal(registered.status, 201);
      const { client_id: clientId } = (await registered.json()) as { client_id: string };
      const { challenge } = pkcePair();
      const query = new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: callback,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: 's',
        resource,
      });
      const browser = new Browser((path, init) => fetch(new URL(path, url), init));
      const redirect = await signInAndConsent(browser, await browser.fetch(`/authorize?${query}`), USER, 'approve', url!);
      assert.ok(redirect.searchParams.get('code'), redirect.href);

      assert.ok(existsSync(`${database}-wal`), 'the store is open: SQLite keeps its write-ahead log beside the file');
      child.process.kill('SIGTERM');
      const result = await child.exit;
      assert.equal(result.code, 0, result.stderr);
      assert.equal(existsSync(`${database}-wal`), false, 'the store was closed: SQLite removes the log when its last connection closes');
    } finally {
      child.process.kill('SIGKILL');
    }
  });
});
