/**
 * Interop with a client nobody here wrote: the official MCP SDK client (`@modelcontextprotocol/sdk`
 * 1.32.x) against `context-auth serve` as a child process. The SDK does everything it does for a
 * real user (RFC 9728 discovery from the 401, RFC 8414 metadata, RFC 7591 registration, PKCE,
 * RFC 8707 `resource`, refresh with rotation, the 403 insufficient_scope reaction); the test only
 * plays the user in `redirectToAuthorization`, driving our login and consent pages over HTTP.
 *
 * What the SDK fetches is recorded through the transport's `fetch` option (the browser's requests
 * go through plain fetch and are not recorded), so each step asserts the exact HTTP exchange.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { Browser, jwtClaims, signInAndConsent } from '../helpers/harness.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

const USER = { username: 'alice', password: 'correct horse battery staple' };

/** One HTTP request the SDK made, as the test asserts it. */
interface Recorded {
  method: string;
  /** Path and query relative to the issuer's origin. */
  path: string;
  status: number;
  wwwAuthenticate: string | null;
  /** Form parameters of a form POST (the token requests). */
  form?: Record<string, string>;
  /** JSON body of a JSON POST (registration, JSON-RPC). */
  json?: unknown;
}

/** What the simulated user saw at the end of one authorization: the callback URL and the request that led there. */
interface Authorization {
  request: URL;
  callback: URL;
  state: string | undefined;
}

/**
 * The SDK's `OAuthClientProvider`, in memory: a public client on a loopback redirect URI. Every
 * value is kept exactly as the SDK passed it (it stamps `issuer` on what it saves and relies on
 * getting it back). `redirectToAuthorization` hands the URL to `user`, which plays the browser.
 */
class InMemoryProvider implements OAuthClientProvider {
  savedClient: OAuthClientInformationMixed | undefined;
  savedTokens: OAuthTokens | undefined;
  readonly tokenHistory: OAuthTokens[] = [];
  readonly authorizations: Authorization[] = [];
  private verifier: string | undefined;
  private lastState: string | undefined;

  constructor(
    private readonly callback: string,
    private readonly user: (authorizationUrl: URL) => Promise<URL>,
  ) {}

  get redirectUrl(): string {
    return this.callback;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'MCP SDK interop test',
      redirect_uris: [this.callback],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state(): string {
    this.lastState = randomBytes(16).toString('base64url');
    return this.lastState;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.savedClient;
  }

  saveClientInformation(information: OAuthClientInformationMixed): void {
    this.savedClient = information;
  }

  tokens(): OAuthTokens | undefined {
    return this.savedTokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.savedTokens = tokens;
    this.tokenHistory.push(tokens);
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    if (!this.verifier) throw new Error('no code verifier saved');
    return this.verifier;
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    const callback = await this.user(authorizationUrl);
    this.authorizations.push({ request: authorizationUrl, callback, state: this.lastState });
  }

  /** The code of the latest authorization, after checking `state` and RFC 9207 `iss`. */
  latestCode(issuer: string): string {
    const latest = this.authorizations.at(-1);
    assert.ok(latest, 'the SDK sent the user to authorize');
    assert.equal(latest.callback.origin + latest.callback.pathname, this.callback);
    assert.ok(latest.state, 'the SDK asked the provider for a state');
    assert.equal(latest.request.searchParams.get('state'), latest.state, 'the SDK put our state in the request');
    assert.equal(latest.callback.searchParams.get('state'), latest.state, 'the server returned the state');
    assert.equal(latest.callback.searchParams.get('iss'), issuer, 'RFC 9207 iss names the issuer');
    const code = latest.callback.searchParams.get('code');
    assert.ok(code, `a code, not ${latest.callback.search}`);
    return code;
  }
}

describe('the official MCP SDK client against context-auth serve', () => {
  const data = tempDataFolder();
  let server: RunningServer;
  let issuer: string;
  let resource: string;
  let callback: string;
  let aliceId: string;
  let provider: InMemoryProvider;
  let client: Client;
  const transports: StreamableHTTPClientTransport[] = [];
  const requests: Recorded[] = [];

  /** Everything the SDK fetches goes through here. */
  const recordingFetch: FetchLike = async (url, init) => {
    const response = await fetch(url, init);
    const target = new URL(url);
    const entry: Recorded = {
      method: init?.method ?? 'GET',
      path: target.origin === new URL(issuer).origin ? target.pathname + target.search : target.href,
      status: response.status,
      wwwAuthenticate: response.headers.get('www-authenticate'),
    };
    if (init?.body instanceof URLSearchParams) entry.form = Object.fromEntries(init.body);
    else if (typeof init?.body === 'string') entry.json = JSON.parse(init.body) as unknown; // registration and JSON-RPC: both JSON
    requests.push(entry);
    return response;
  };

  /**
   * The requests recorded since `mark`, without the SDK's GET /mcp (the server-to-client event
   * stream it opens, and reopens, on its own timer: it may land anywhere in an exchange).
   */
  const since = (mark: number) => requests.slice(mark).filter((r) => !(r.method === 'GET' && r.path === '/mcp'));
  /** "METHOD path status" of recorded requests, to compare with the expected exchange. */
  const lines = (recorded: Recorded[]) => recorded.map((r) => `${r.method} ${r.path} ${r.status}`);
  const jsonRpcMethod = (r: Recorded) => (r.json as { method?: string } | undefined)?.method;

  function newTransport(): StreamableHTTPClientTransport {
    const transport = new StreamableHTTPClientTransport(new URL(resource), { authProvider: provider, fetch: recordingFetch });
    transports.push(transport);
    return transport;
  }

  before(async () => {
    const port = await freePort();
    callback = `http://127.0.0.1:${await freePort()}/callback`; // nothing listens: the code is read from the redirect
    const added = await cli(['users', 'add', USER.username, '--data', data], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    const users = await cli(['users', 'list', '--json', '--data', data]);
    assert.equal(users.code, 0, users.stderr);
    aliceId = (JSON.parse(users.stdout) as { id: string; username: string }[]).find((u) => u.username === USER.username)!.id;
    server = await startServe(['--port', String(port), '--data', data]);
    issuer = server.issuer;
    resource = `${issuer}/mcp`;

    // The user: one browser (cookie jar) for the whole test, so the login session is remembered.
    const browser = new Browser((path, init) => fetch(new URL(path, issuer), init));
    provider = new InMemoryProvider(callback, async (authorizationUrl) => {
      const first = await browser.fetch(authorizationUrl.href);
      return signInAndConsent(browser, first, USER, 'approve', issuer);
    });
    client = new Client({ name: 'context-auth-interop', version: '1.0.0' });
  });

  after(async () => {
    await client?.close().catch(() => {});
    for (const transport of transports) await transport.close().catch(() => {});
    await server?.stop();
  });

  it('connects the way the SDK documents: 401, discovery, registration, PKCE login, finishAuth, reconnect', async () => {
    // The SDK's pattern (examples/client/simpleOAuthClient.js): connect; on UnauthorizedError the
    // user has been sent to authorize; finishAuth(code) on that transport; connect a new transport.
    const first = newTransport();
    await assert.rejects(client.connect(first), UnauthorizedError);

    assert.deepEqual(lines(requests), [
      `POST /mcp 401`, // initialize without a token
      `GET /.well-known/oauth-protected-resource/mcp 200`, // RFC 9728, from the challenge's resource_metadata
      `GET /.well-known/oauth-authorization-server 200`, // RFC 8414, authorization_servers[0] = the issuer
      `POST /register 201`, // RFC 7591
    ]);
    const challenge = requests[0]!.wwwAuthenticate ?? '';
    assert.match(challenge, new RegExp(`^Bearer resource_metadata="${issuer}/.well-known/oauth-protected-resource/mcp"`));
    assert.match(challenge, /scope="mcp:tools"/);
    assert.equal(jsonRpcMethod(requests[0]!), 'initialize');
    // SEP-835: the SDK registers with the scope from the challenge.
    assert.deepEqual(requests[3]!.json, { ...provider.clientMetadata, scope: 'mcp:tools' });

    // Dynamic registration: what the provider was asked to save is a client our CLI knows.
    const saved = provider.savedClient as OAuthClientInformationMixed & { issuer?: string; token_endpoint_auth_method?: string };
    assert.ok(saved?.client_id);
    assert.equal(saved.issuer, issuer, 'the SDK binds the registration to the issuer it discovered');
    assert.equal(saved.token_endpoint_auth_method, 'none');
    assert.equal('client_secret' in saved ? saved.client_secret : undefined, undefined, 'a public client gets no secret');
    const listed = await cli(['clients', 'list', '--json', '--data', data]);
    assert.equal(listed.code, 0, listed.stderr);
    const known = (JSON.parse(listed.stdout) as { client_id: string; redirect_uris?: string[]; registered_by?: string }[]).find(
      (c) => c.client_id === saved.client_id,
    );
    assert.ok(known, 'context-auth clients list shows the client the SDK registered');
    assert.deepEqual(known.redirect_uris, [callback]);

    // The authorization request the SDK built, which the "user" followed.
    assert.equal(provider.authorizations.length, 1);
    const request = provider.authorizations[0]!.request;
    assert.equal(request.origin + request.pathname, `${issuer}/authorize`);
    assert.equal(request.searchParams.get('response_type'), 'code');
    assert.equal(request.searchParams.get('client_id'), saved.client_id);
    assert.equal(request.searchParams.get('redirect_uri'), callback);
    assert.equal(request.searchParams.get('code_challenge_method'), 'S256');
    assert.match(request.searchParams.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.equal(request.searchParams.get('resource'), resource, 'Revision B: resource in the authorization request');
    assert.equal(request.searchParams.get('scope'), 'mcp:tools');
    const code = provider.latestCode(issuer);

    const mark = requests.length;
    await first.finishAuth(code);
    // finishAuth discovers again (the provider keeps no discovery state) and redeems the code.
    assert.deepEqual(lines(since(mark)), [
      `GET /.well-known/oauth-protected-resource/mcp 200`,
      `GET /.well-known/oauth-authorization-server 200`,
      `POST /token 200`,
    ]);
    const exchange = requests.at(-1)!.form!;
    assert.equal(exchange.grant_type, 'authorization_code');
    assert.equal(exchange.code, code);
    assert.equal(exchange.client_id, saved.client_id);
    assert.equal(exchange.redirect_uri, callback);
    assert.equal(exchange.resource, resource, 'Revision B: resource in the token request');
    assert.match(exchange.code_verifier ?? '', /^[A-Za-z0-9._~-]{43,128}$/);

    const tokens = provider.savedTokens;
    assert.ok(tokens?.access_token && tokens.refresh_token);
    assert.equal(tokens.issuer, issuer);
    assert.equal(tokens.token_type.toLowerCase(), 'bearer');
    const claims = jwtClaims(tokens.access_token);
    assert.equal(claims.aud, resource, 'the access token is bound to the MCP server');
    assert.equal(claims.iss, issuer);
    assert.equal(claims.sub, aliceId);
    assert.equal(claims.client_id, saved.client_id);
    assert.equal(claims.scope, 'mcp:tools');

    const reconnect = requests.length;
    await client.connect(newTransport());
    const mcp = since(reconnect).filter((r) => r.path === '/mcp' && r.method === 'POST');
    assert.deepEqual(
      mcp.map((r) => `${jsonRpcMethod(r)} ${r.status}`),
      ['initialize 200', 'notifications/initialized 202'],
    );
    assert.equal(provider.authorizations.length, 1, 'no second authorization');
  });

  it('lists the tools and calls whoami as alice', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    assert.ok(names.includes('whoami'), names.join(', '));
    assert.ok(names.includes('admin_report'), names.join(', '));

    const result = await client.callTool({ name: 'whoami' });
    assert.notEqual(result.isError, true);
    assert.deepEqual(result.structuredContent, {
      username: 'alice',
      name: null,
      subject: aliceId,
      client_id: provider.savedClient!.client_id,
      scopes: ['mcp:tools'],
      resource,
    });
  });

  it('refreshes when the server rejects the access token, and stores the rotated refresh token', async () => {
    const before = provider.savedTokens!;
    // The stored access token goes bad (revoked, expired, corrupted storage): the server answers
    // 401 invalid_token; the SDK's auth() finds a refresh token and uses it before any redirect.
    provider.savedTokens = { ...before, access_token: 'garbage-access-token' };
    const mark = requests.length;

    const result = await client.callTool({ name: 'whoami' });
    assert.deepEqual((result.structuredContent as { subject: string }).subject, aliceId);

    const exchange = since(mark);
    assert.deepEqual(lines(exchange), [
      `POST /mcp 401`,
      `GET /.well-known/oauth-protected-resource/mcp 200`,
      `GET /.well-known/oauth-authorization-server 200`,
      `POST /token 200`,
      `POST /mcp 200`,
    ]);
    assert.match(exchange[0]!.wwwAuthenticate ?? '', /error="invalid_token"/);
    assert.deepEqual(exchange[3]!.form, {
      grant_type: 'refresh_token',
      refresh_token: before.refresh_token,
      resource,
      client_id: provider.savedClient!.client_id,
    });
    assert.equal(jsonRpcMethod(exchange[4]!), 'tools/call');

    const after = provider.savedTokens!;
    assert.ok(after.refresh_token);
    assert.notEqual(after.refresh_token, before.refresh_token, 'the refresh token was rotated and the new one stored');
    assert.notEqual(after.access_token, 'garbage-access-token');
    assert.equal(jwtClaims(after.access_token).aud, resource);
    assert.equal(provider.authorizations.length, 1, 'refreshing needed no user');
  });

  it('calling admin_report gets 403 insufficient_scope; SDK 1.32 refreshes, retries once and gives up', async () => {
    // What SDK 1.32.2 does (client/streamableHttp.js, send()): on 403 with error="insufficient_scope"
    // it takes the challenge's scope and calls auth(). auth() finds a refresh token and refreshes —
    // refreshAuthorization() sends no scope, so the new token has the same scopes — then returns
    // AUTHORIZED; the SDK resends, gets the same challenge again, and throws
    // StreamableHTTPError(403, 'Server returned 403 after trying upscoping'). It never calls
    // redirectToAuthorization while it holds a refresh token, so no step-up happens here.
    const before = provider.savedTokens!;
    const mark = requests.length;

    const failure = await client.callTool({ name: 'admin_report' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(failure instanceof StreamableHTTPError, `a transport error, not ${String(failure)}`);
    assert.equal(failure.code, 403);
    assert.match(failure.message, /403 after trying upscoping/);

    const exchange = since(mark);
    assert.deepEqual(lines(exchange), [
      `POST /mcp 403`,
      `GET /.well-known/oauth-protected-resource/mcp 200`,
      `GET /.well-known/oauth-authorization-server 200`,
      `POST /token 200`,
      `POST /mcp 403`,
    ]);
    const challenge = exchange[0]!.wwwAuthenticate ?? '';
    assert.match(challenge, /error="insufficient_scope"/);
    assert.match(challenge, /scope="mcp:admin mcp:tools"/);
    assert.match(challenge, new RegExp(`resource_metadata="${issuer}/.well-known/oauth-protected-resource/mcp"`));
    assert.equal(exchange[3]!.form?.grant_type, 'refresh_token');
    assert.equal(exchange[3]!.form?.scope, undefined, 'the SDK refreshes without asking for the wider scope');
    assert.equal(provider.authorizations.length, 1, 'no re-authorization');
    assert.notEqual(provider.savedTokens!.refresh_token, before.refresh_token, 'the refresh rotated again');
    assert.equal(jwtClaims(provider.savedTokens!.access_token).scope, 'mcp:tools');

    // The connection is still usable afterwards.
    const whoami = await client.callTool({ name: 'whoami' });
    assert.equal((whoami.structuredContent as { subject: string }).subject, aliceId);
  });

  it('without a refresh token, the SDK steps up by re-authorizing with the challenge scope', async () => {
    // The other branch of the same SDK code: with no refresh token stored, auth() starts a new
    // authorization with the 403 challenge's scope ("mcp:admin mcp:tools") and calls
    // redirectToAuthorization; the call fails with UnauthorizedError and the application is
    // expected to finishAuth(code) and retry.
    const { refresh_token: _dropped, ...withoutRefresh } = provider.savedTokens!;
    provider.savedTokens = withoutRefresh;
    const mark = requests.length;

    await assert.rejects(client.callTool({ name: 'admin_report' }), UnauthorizedError);
    assert.deepEqual(lines(since(mark)), [
      `POST /mcp 403`,
      `GET /.well-known/oauth-protected-resource/mcp 200`,
      `GET /.well-known/oauth-authorization-server 200`,
    ]);
    assert.equal(provider.authorizations.length, 2, 'the SDK sent the user to authorize again');
    const latest = provider.authorizations[1]!;
    assert.equal(latest.request.searchParams.get('scope'), 'mcp:admin mcp:tools');
    assert.equal(latest.request.searchParams.get('resource'), resource);
    assert.equal(latest.request.searchParams.get('client_id'), provider.savedClient!.client_id, 'the same registration');
    assert.equal(latest.callback.origin + latest.callback.pathname, callback);
    assert.equal(latest.callback.searchParams.get('state'), latest.state);
    assert.equal(latest.callback.searchParams.get('iss'), issuer);
  });

  // The SDK registers with the scope of the first 401 challenge ("mcp:tools"); a dynamically
  // registered client's scope is not a limit here, so the step-up to mcp:admin is granted.
  it('grants the step-up and admin_report then succeeds', async () => {
    const code = provider.latestCode(issuer);
    await transports.at(-1)!.finishAuth(code);
    assert.equal(jwtClaims(provider.savedTokens!.access_token).scope, 'mcp:admin mcp:tools');
    const report = await client.callTool({ name: 'admin_report' });
    assert.notEqual(report.isError, true);
    assert.equal(typeof (report.structuredContent as { uptime_seconds: unknown }).uptime_seconds, 'number');
  });

  // A stateless server has no stream to offer: 405 (Streamable HTTP, "Listening for messages from
  // the server"). An empty 200 stream would make the SDK reopen it every second, forever.
  it("answers the SDK's GET /mcp with 405, so it does not poll", () => {
    const get = requests.find((r) => r.method === 'GET' && r.path === '/mcp');
    assert.ok(get, 'the SDK opened the GET stream after initialization');
    assert.equal(get.status, 405);
  });
});
