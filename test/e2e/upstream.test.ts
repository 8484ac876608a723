/**
 * Third-party authorization as users run it: `context-auth serve --upstream-issuer …` in front of
 * a real OpenID provider (node-oidc-provider), and two clients nobody changed for it, our
 * `context-auth login` / `call` and the official MCP SDK client, each going through discovery →
 * registration → sign-in at the provider → our consent → `whoami` (with the upstream identity) →
 * a tool that calls the provider for the person. The test plays the person at the browser.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { parseForm } from '../helpers/harness.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.js';
import { cli, cliWithEnv, freePort, startCli, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

/**
 * The person's browser, over HTTP to both our server and the provider: keeps cookies, presses the
 * provider's button on our sign-in page, approves on our consent page, and follows redirects
 * until `arrived` says it reached the client's callback (or our own page). `cookies` is its jar.
 */
async function signInUpstream(start: URL, arrived: (url: URL) => boolean, cookies = new Map<string, string>()): Promise<URL> {
  const go = async (url: URL, init: RequestInit = {}): Promise<Response> => {
    const headers = new Headers(init.headers);
    if (cookies.size > 0) headers.set('cookie', [...cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const response = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return response;
  };
  let url = start;
  let response = await go(url);
  for (let hop = 0; hop < 20; hop++) {
    const location = response.headers.get('location');
    if (location) {
      url = new URL(location, url);
      if (arrived(url)) return url;
      response = await go(url);
      continue;
    }
    const html = await response.text();
    assert.equal(response.status, 200, `a page at ${url.href}: ${html.slice(0, 300)}`);
    const { action, csrf } = parseForm(html);
    const post = (values: Record<string, string>) =>
      go(new URL(action, url), {
        method: 'POST',
        body: new URLSearchParams({ csrf, ...values }),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
    const provider = /name="provider" value="([^"]+)"/.exec(html)?.[1];
    // An authorization request's sign-in page names its step; the account page's and the console's, their action.
    const pageAction = /name="action" value="([^"]+)"/.exec(html)?.[1];
    if (provider) response = await post(pageAction ? { action: pageAction, provider } : { step: 'upstream', provider });
    else if (html.includes('value="approve"')) response = await post({ step: 'consent', decision: 'approve' });
    else assert.fail(`an unexpected page at ${url.href}`);
  }
  throw new Error('too many hops');
}

describe('serve with an upstream OpenID provider, against our client and the MCP SDK client', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  let idp: TestOidcProvider;
  let server: RunningServer;
  let issuer: string;
  let mcp: string;

  before(async () => {
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    idp = await startOidcProvider({ redirectUris: [`${issuer}/upstream/callback`] });
    server = await startServe([
      '--port',
      String(port),
      '--data',
      data,
      '--quiet',
      '--upstream-issuer',
      idp.issuer,
      '--upstream-client-id',
      idp.clientId,
      '--upstream-client-secret',
      idp.clientSecret,
      '--upstream-name',
      'Corp SSO',
      '--allow-insecure-upstream',
      '--admin-email',
      'Alice@example.com',
    ]);
    mcp = `${issuer}/mcp`;
  });

  after(async () => {
    await server?.stop();
    await idp?.stop();
  });

  it('--admin-email: the person the provider verified with that email signs in at /admin through it', async () => {
    const cookies = new Map<string, string>();
    const back = await signInUpstream(new URL(`${issuer}/admin`), (url) => url.origin === issuer && url.pathname === '/admin', cookies);
    assert.equal(back.href, `${issuer}/admin`);
    const overview = await fetch(back, { headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') } });
    assert.equal(overview.status, 200);
    assert.match(await overview.text(), /aria-current="page">Overview</);
  });

  it('prints the callback to register at the provider', () => {
    assert.match(server.output(), new RegExp(`callback\\s+${issuer}/upstream/callback`));
    assert.match(server.output(), /sign-in\s+Corp SSO/);
  });

  it('context-auth login, call whoami (the upstream identity), call a tool that calls the provider', async () => {
    const home = tempDataFolder();
    const emptyBin = join(home, 'bin');
    mkdirSync(emptyBin);
    const env = { CONTEXT_AUTH_CREDENTIALS: join(home, 'credentials.json'), PATH: emptyBin, BROWSER: '', DISPLAY: '' };
    const login = startCli(['login', mcp, '--no-browser'], { env, timeoutMs: 60_000 });
    const [, href] = await login.waitForStderr(/^(http:\/\/\S+\/authorize\?\S+)$/m);
    const callback = await signInUpstream(new URL(href!), (url) => url.pathname === '/callback' && url.origin !== issuer);
    assert.ok(callback.searchParams.get('code'), callback.href);
    assert.equal((await fetch(callback)).status, 200);
    const result = await login.exit;
    assert.equal(result.code, 0, result.stderr);

    const whoami = await cliWithEnv(['call', mcp, 'tools/call', '{"name":"whoami","arguments":{}}', '--json'], { env });
    assert.equal(whoami.code, 0, whoami.stderr);
    assert.match(whoami.stdout, /alice@example\.com/);
    assert.match(whoami.stdout, /Alice Example/);

    const userinfo = await cliWithEnv(['call', mcp, 'tools/call', '{"name":"upstream_userinfo","arguments":{}}', '--json'], { env });
    assert.equal(userinfo.code, 0, userinfo.stderr);
    assert.match(userinfo.stdout, /alice-sub/, 'the provider answered with its own subject');
  });

  it('the official MCP SDK client, with its own OAuth provider, completes the same flow', async () => {
    const redirectUrl = `http://127.0.0.1:${await freePort()}/callback`;
    let verifier = '';
    let tokens: OAuthTokens | undefined;
    let information: OAuthClientInformationMixed | undefined;
    let arrived: URL | undefined;
    const provider: OAuthClientProvider = {
      redirectUrl,
      clientMetadata: {
        client_name: 'MCP SDK',
        redirect_uris: [redirectUrl],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      } satisfies OAuthClientMetadata,
      clientInformation: () => information,
      saveClientInformation: (value) => void (information = value),
      tokens: () => tokens,
      saveTokens: (value) => void (tokens = value),
      saveCodeVerifier: (value) => void (verifier = value),
      codeVerifier: () => verifier,
      redirectToAuthorization: async (url) => {
        arrived = await signInUpstream(url, (u) => u.href.startsWith(redirectUrl));
      },
    };
    const first = new StreamableHTTPClientTransport(new URL(mcp), { authProvider: provider });
    const client = new Client({ name: 'upstream-interop', version: '1.0.0' });
    await assert.rejects(client.connect(first), UnauthorizedError);
    const code = arrived?.searchParams.get('code');
    assert.ok(code, `a code, not ${arrived?.href}`);
    await first.finishAuth(code);
    const transport = new StreamableHTTPClientTransport(new URL(mcp), { authProvider: provider });
    await client.connect(transport);
    try {
      const whoami = (await client.callTool({ name: 'whoami', arguments: {} })) as { structuredContent?: { upstream?: { email?: string } } };
      assert.equal(whoami.structuredContent?.upstream?.email, 'alice@example.com');
      const userinfo = (await client.callTool({ name: 'upstream_userinfo', arguments: {} })) as { structuredContent?: { userinfo?: { sub?: string } } };
      assert.equal(userinfo.structuredContent?.userinfo?.sub, 'alice-sub');
    } finally {
      await client.close();
    }
  });

  it('users list shows where the user came from', async () => {
    const listed = await cli(['users', 'list', '--json', '--data', data]);
    assert.equal(listed.code, 0, listed.stderr);
    const users = JSON.parse(listed.stdout) as Array<{ username: string; source: { provider: string; email: string } | string }>;
    assert.equal(users.length, 1, 'both clients signed in the same person: one local user');
    assert.match(users[0]!.username, /:alice$/);
    assert.deepEqual(typeof users[0]!.source === 'object' ? users[0]!.source.email : null, 'alice@example.com');
  });
});

describe('users list, with what a provider said kept before its control characters were removed', () => {
  const NAME = 'Mallory\u001b[2J\u001b[H\u009b31m\u202eevil';

  it('shows them as escapes, never sends them to the terminal; --json keeps the value', async () => {
    const data = tempDataFolder();
    const store = openSqliteStore({ path: join(data, 'context-auth.db') });
    const user = { id: 'user-m', username: 'corp:mallory', passwordHash: null, createdAt: 1_800_000_000 };
    await store.createUserWithIdentity(user, {
      provider: 'corp',
      issuer: 'https://sso.example',
      subject: 'm',
      userId: user.id,
      email: `mallory\u0007@example.com`,
      name: NAME,
      createdAt: user.createdAt,
    });
    await store.close();

    // eslint-disable-next-line no-control-regex -- control characters are the point
    const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
    const listed = await cli(['users', 'list', '--data', data]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.doesNotMatch(listed.stdout, RAW);
    assert.match(listed.stdout, /corp: mallory\\x07@example\.com/);

    const json = await cli(['users', 'list', '--json', '--data', data]);
    assert.equal(json.code, 0, json.stderr);
    assert.doesNotMatch(json.stdout, RAW);
    const [listedUser] = JSON.parse(json.stdout) as Array<{ source: { name: string } }>;
    assert.equal(listedUser!.source.name, NAME, 'the same value, escaped in the JSON text');
  });
});

describe('serve with an upstream setting that can never work', () => {
  it('refuses an --admin-email that is no address, and an --admin-reauth-minutes out of range', async () => {
    const port = String(await freePort());
    const email = await cli(['serve', '--port', port, '--data', tempDataFolder(), '--admin-email', 'alice']);
    assert.equal(email.code, 2, email.stderr);
    assert.match(email.stderr, /--admin-email alice is not an email address/);
    const minutes = await cli(['serve', '--port', port, '--data', tempDataFolder(), '--admin-reauth-minutes', '0']);
    assert.equal(minutes.code, 2, minutes.stderr);
    assert.match(minutes.stderr, /--admin-reauth-minutes must be a whole number from 1 to 1440/);
  });

  it('stops at start with one clear line and a non-zero exit, instead of a warning and a 503 page later', async () => {
    const port = String(await freePort());
    const data = tempDataFolder();
    const insecure = await cli(['serve', '--port', port, '--data', data, '--upstream-issuer', `http://127.0.0.1:${port}`, '--upstream-client-id', 'x']);
    assert.equal(insecure.code, 1, insecure.stderr);
    assert.match(
      insecure.stderr,
      /^context-auth: upstream 127: the issuer must be an https URL: http:\/\/127\.0\.0\.1:\d+ \(--allow-insecure-upstream allows http:\/\/ on this machine[^\n]*\n$/,
    );
    assert.doesNotMatch(insecure.stdout, /Listening/);

    // The same issuer twice, under two ids: one provider's people would be found as the other's.
    const config = join(data, 'providers.json');
    writeFileSync(config, JSON.stringify([{ kind: 'oidc', id: 'staff', issuer: 'https://sso.example', clientId: 'c' }]));
    const twice = await cli([
      'serve',
      '--port',
      port,
      '--data',
      data,
      '--upstream-issuer',
      'https://sso.example',
      '--upstream-client-id',
      'x',
      '--upstream-config',
      config,
    ]);
    assert.equal(twice.code, 1, twice.stderr);
    assert.match(
      twice.stderr,
      /^context-auth: upstream example and staff have the same issuer https:\/\/sso\.example; each provider needs an issuer of its own/,
    );
  });
});
