/**
 * Drives a server with one host profile, as that host would: its discovery, its document (served
 * on 127.0.0.1, since a host's real document URL cannot be fetched here: the same JSON, with
 * `client_id` the loopback URL it is served at) or its registration body, its redirect URI (a
 * loopback port really listened on where the host listens; a vendor's https page or a private-use
 * scheme followed at the HTTP level, by reading the Location header), its authorization and
 * token parameters, a tools/list with the token, and its refresh. The person's sign-in and
 * consent are HTTP form posts to the server's pages.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { discoverAsHost, type HostDiscovery } from '../../src/client/hosts/discover.js';
import { Prober, type ProbedRequest } from '../../src/client/hosts/prober.js';
import {
  authorizationParameters,
  codeExchangeForm,
  redirectUriOf,
  refreshForm,
  registrationBody,
  stateOf,
  type HostContext,
} from '../../src/client/hosts/requests.js';
import type { HostProfile } from '../../src/client/hosts/types.js';
import { Browser, pkcePair, signInAndConsent } from '../helpers/harness.js';

export interface Person {
  username: string;
  password: string;
}

/** A loopback server that serves host documents (and ChatGPT's keys) under any path it is given. */
export class DocumentHost {
  private readonly documents = new Map<string, unknown>();
  private server?: http.Server;
  base = '';
  fetched: string[] = [];

  async start(): Promise<void> {
    this.server = http.createServer((request, response) => {
      const path = new URL(request.url ?? '/', 'http://127.0.0.1').pathname;
      this.fetched.push(path);
      const body = this.documents.get(path);
      if (body === undefined) return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' }).end(JSON.stringify(body));
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Serves `body` at `path`; returns its URL. */
  serve(path: string, body: unknown): string {
    this.documents.set(path, body);
    return `${this.base}${path}`;
  }

  async stop(): Promise<void> {
    if (this.server) await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}

/** A host's loopback callback: listens where the host would and keeps what each redirect brought. */
async function listenForCallback(profile: HostProfile): Promise<{ port: number; arrived: Promise<URLSearchParams>; close: () => Promise<void> }> {
  const host = new URL(profile.redirect.uri.replace('{port}', '1')).hostname;
  const path = new URL(profile.redirect.uri.replace('{port}', '1')).pathname;
  let deliver!: (query: URLSearchParams) => void;
  const arrived = new Promise<URLSearchParams>((resolve) => (deliver = resolve));
  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname !== path) return void response.writeHead(404).end();
    deliver(url.searchParams);
    response.writeHead(200, { 'content-type': 'text/plain' }).end('signed in; you may close this window');
  });
  // localhost is where the host listens when its redirect names localhost: the IPv4 loopback here.
  server.listen(0, host === 'localhost' ? '127.0.0.1' : host);
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, arrived, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

export interface Tokens {
  access_token: string;
  refresh_token?: string;
  expires_in?: number;
  scope?: string;
}

export interface HostRun {
  discovery: HostDiscovery;
  /** The discovery requests as sent: methods, URLs, headers. */
  discoveryRequests: ProbedRequest[];
  clientId: string;
  /** What the authorization request carried, and what came back to the redirect URI. */
  sent: URLSearchParams;
  returned: URLSearchParams;
  tokens: Tokens;
  /** The requests of the token exchange and of each refresh, as sent. */
  tokenForms: URLSearchParams[];
  context: HostContext;
  /** Sends the host's refresh with `refreshToken` (its client authentication included). */
  refresh(refreshToken: string, grantedScope?: string): Promise<Response>;
}

/** Signs ChatGPT's client assertions: the test's key pair stands in for ChatGPT's own (its private key is ChatGPT's). */
export class AssertionKey {
  private constructor(
    private readonly privateKey: CryptoKey,
    readonly jwks: { keys: Record<string, unknown>[] },
  ) {}

  static async create(): Promise<AssertionKey> {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
    return new AssertionKey(privateKey, { keys: [{ ...(await exportJWK(publicKey)), kid: 'chatgpt-test', alg: 'RS256', use: 'sig' }] });
  }

  sign(clientId: string, audience: string): Promise<string> {
    return new SignJWT({})
      .setProtectedHeader({ alg: 'RS256', kid: 'chatgpt-test' })
      .setIssuer(clientId)
      .setSubject(clientId)
      .setAudience(audience)
      .setJti(randomUUID())
      .setIssuedAt()
      .setExpirationTime('60s')
      .sign(this.privateKey);
  }
}

/** A protected request with the host's token: it resolves when the server answered it as it should. */
export type ToolsListCheck = (mcpUrl: string, accessToken: string, who: string) => Promise<void>;

export interface DriveOptions {
  mcpUrl: string;
  person: Person;
  documents: DocumentHost;
  assertionKey: AssertionKey;
  /** The request made with each token the host gets; default a tools/list of serve's demo at /mcp (assertToolsList). */
  toolsList?: ToolsListCheck;
}

/** Runs one profile from discovery to its first tokens and a protected request. */
export async function driveHost(profile: HostProfile, options: DriveOptions): Promise<HostRun> {
  const { mcpUrl } = options;
  const prober = new Prober();
  const discovery = await discoverAsHost(profile, mcpUrl, prober);
  assert.equal(discovery.failure, undefined, `${profile.id}: discovery stopped: ${JSON.stringify(discovery.failure)}`);
  const server = discovery.authorizationServer!;
  const issuer = String(server.issuer);
  const origin = profile.browserOrigin ? { origin: profile.browserOrigin } : undefined;

  const callback = profile.redirect.listens ? await listenForCallback(profile) : undefined;
  try {
    const context: HostContext = { mcpUrl, discovery, ...(callback ? { port: callback.port } : {}), serverName: 'context-demo' };
    // A host listening on a port of its choice sends that port; one whose usual port is taken
    // (VS Code's 33418, mcp-remote's) listens on another, which loopback matching must allow.
    const redirectUri = callback
      ? redirectUriOf(profile, context).replace(/^(http:\/\/[^/:]+)(:\d+)?/, `$1:${callback.port}`)
      : redirectUriOf(profile, context);

    let clientId: string;
    let clientSecret: string | undefined;
    if (profile.registration.kind === 'document') {
      const path = `/${profile.id}/client.json`;
      const url = `${options.documents.base}${path}`;
      const document: Record<string, unknown> = { ...profile.registration.document, client_id: url };
      if (document.jwks_uri !== undefined) document.jwks_uri = options.documents.serve(`/${profile.id}/jwks.json`, options.assertionKey.jwks);
      options.documents.serve(path, document);
      clientId = url;
    } else {
      const body = registrationBody(profile, { ...context, port: callback?.port ?? context.port });
      const registered = await fetch(String(server.registration_endpoint), {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...origin },
        body: JSON.stringify(body),
      });
      const answer = (await registered.json()) as Record<string, unknown>;
      assert.equal(registered.status, 201, `${profile.id}: registration refused: ${JSON.stringify(answer)}`);
      clientId = String(answer.client_id);
      clientSecret = typeof answer.client_secret === 'string' ? answer.client_secret : undefined;
      if (profile.token.clientAuthentication !== 'none')
        assert.ok(clientSecret, `${profile.id}: registered for ${profile.token.clientAuthentication} without a secret`);
    }

    const { verifier, challenge } = pkcePair();
    const state = stateOf(profile.authorization.state);
    const sent = authorizationParameters(profile, context, { clientId, redirectUri, state, codeChallenge: challenge });
    const authorizationEndpoint = new URL(String(server.authorization_endpoint));
    const browser = new Browser((path, init) => fetch(new URL(path, authorizationEndpoint.origin), init));
    const first = await browser.fetch(`${authorizationEndpoint.pathname}?${sent}`);
    const location = await signInAndConsent(browser, first, options.person, 'approve', authorizationEndpoint.origin);
    let returned: URLSearchParams;
    if (callback) {
      assert.equal(`${location.origin}${location.pathname}`, new URL(redirectUri).origin + new URL(redirectUri).pathname);
      const visited = await fetch(location);
      assert.equal(visited.status, 200);
      returned = await callback.arrived;
    } else {
      assert.ok(location.href.startsWith(redirectUri), `${profile.id}: sent to ${location.href}, not ${redirectUri}`);
      returned = location.searchParams;
    }
    assert.equal(returned.get('error'), null, `${profile.id}: ${returned.get('error')}: ${returned.get('error_description')}`);
    assert.equal(returned.get('state'), state, `${profile.id}: the state came back changed`);
    if (profile.authorization.iss === 'required' && server.authorization_response_iss_parameter_supported === true) {
      assert.equal(returned.get('iss'), issuer, `${profile.id}: refuses a redirect without the server's iss`);
    }

    const tokenEndpoint = String(server.token_endpoint);
    const tokenForms: URLSearchParams[] = [];
    const sendToken = async (form: URLSearchParams): Promise<Response> => {
      const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', ...origin };
      if (profile.token.clientAuthentication === 'client_secret_post') form.set('client_secret', clientSecret!);
      if (profile.token.clientAuthentication === 'client_secret_basic') {
        form.delete('client_id');
        headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret!)}`).toString('base64')}`;
      }
      if (profile.token.clientAuthentication === 'private_key_jwt') {
        form.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
        // The issuer identifier, as RFC 7523bis has a client address it.
        form.set('client_assertion', await options.assertionKey.sign(clientId, issuer));
      }
      tokenForms.push(new URLSearchParams(form));
      const response = await fetch(tokenEndpoint, { method: 'POST', headers, body: form });
      if (profile.browserOrigin)
        assert.ok(
          ['*', profile.browserOrigin].includes(response.headers.get('access-control-allow-origin') ?? ''),
          `${profile.id}: the token answer has no CORS header for ${profile.browserOrigin}`,
        );
      return response;
    };
    const exchanged = await sendToken(codeExchangeForm(profile, context, { clientId, code: returned.get('code')!, redirectUri, codeVerifier: verifier }));
    const tokens = (await exchanged.json()) as Tokens;
    assert.equal(exchanged.status, 200, `${profile.id}: code exchange refused: ${JSON.stringify(tokens)}`);
    await (options.toolsList ?? assertToolsList)(mcpUrl, tokens.access_token, profile.id);
    return {
      discovery,
      discoveryRequests: prober.log,
      clientId,
      sent,
      returned,
      tokens,
      tokenForms,
      context,
      refresh: (refreshToken, grantedScope) => sendToken(refreshForm(profile, context, { clientId, refreshToken, grantedScope })),
    };
  } finally {
    await callback?.close();
  }
}

/** A real MCP JSON-RPC tools/list with the token: the server's tools, or the assertion says why not. */
export async function assertToolsList(mcpUrl: string, accessToken: string, who: string): Promise<void> {
  const response = await fetch(mcpUrl, {
    method: 'POST',
    headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  const text = await response.text();
  assert.equal(response.status, 200, `${who}: tools/list answered ${response.status}: ${text}`);
  assert.match(text, /"whoami"/, `${who}: tools/list did not list the demo's tools: ${text}`);
}

/** Runs the profile's refresh as the host does: alone, or from several sessions at once with the same refresh token. */
export async function refreshAsHost(profile: HostProfile, run: HostRun, mcpUrl: string, toolsList: ToolsListCheck = assertToolsList): Promise<void> {
  const { tokens } = run;
  assert.ok(tokens.refresh_token, `${profile.id}: no refresh token`);
  if (profile.refresh.earlySeconds !== undefined) {
    // A token shorter-lived than the host's margin would be refreshed before every request.
    assert.ok(
      (tokens.expires_in ?? 0) > profile.refresh.earlySeconds,
      `${profile.id} refreshes ${profile.refresh.earlySeconds} s early; tokens live ${tokens.expires_in} s`,
    );
  }
  const sessions = profile.refresh.concurrentSessions ?? 1;
  const answers = await Promise.all(Array.from({ length: sessions }, () => run.refresh(tokens.refresh_token!, tokens.scope)));
  const refreshed: Tokens[] = [];
  for (const answer of answers) {
    const body = (await answer.json()) as Tokens;
    assert.equal(answer.status, 200, `${profile.id}: refresh refused (${sessions} at once): ${JSON.stringify(body)}`);
    refreshed.push(body);
  }
  for (const body of refreshed) await toolsList(mcpUrl, body.access_token, `${profile.id} after refreshing`);
  // The grant lives on: the next refresh, from what a session got back, is answered too.
  const next = await run.refresh(refreshed[0]!.refresh_token!, refreshed[0]!.scope);
  assert.equal(next.status, 200, `${profile.id}: the refresh after that was refused: ${await next.clone().text()}`);
}

/**
 * A profile's whole connection as the host makes it (driveHost, then refreshAsHost), with what the
 * server must have done for it: every discovery request answered as the host needs (with the
 * host's method and headers: HEAD for Gemini CLI, MCP-Protocol-Version: 2024-11-05 for Codex and
 * Goose), its document fetched, and what the host sends as it sends it (resource present or
 * absent, the scope it asks for).
 */
export async function connectAsHost(profile: HostProfile, options: DriveOptions): Promise<void> {
  const run = await driveHost(profile, options);
  assert.ok(
    run.discoveryRequests.every((request) => request.status === 401 || request.status === 200),
    JSON.stringify(run.discoveryRequests),
  );
  if (profile.registration.kind === 'document') assert.ok(options.documents.fetched.includes(`/${profile.id}/client.json`), 'serve fetched the document');
  assert.equal(run.sent.has('resource'), profile.authorization.resource !== 'absent');
  assert.equal(run.tokenForms[0]!.has('resource'), profile.token.resource !== 'absent');
  await refreshAsHost(profile, run, options.mcpUrl, options.toolsList);
  const refreshForm = run.tokenForms[1]!;
  assert.equal(refreshForm.has('resource'), profile.refresh.resource !== 'absent');
  assert.equal(refreshForm.has('scope'), profile.refresh.scope !== 'absent');
}
