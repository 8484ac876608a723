/**
 * Shared setup for the client tests: a real "context server" on 127.0.0.1 (port 0), composed as
 * `context-auth serve` composes it — the authorization server (memory store, issuer = its own
 * origin), the protected resource and the demo MCP server at /mcp — in three shapes:
 *
 *   'B'            Revision B: protected resource metadata, a 401 naming it (the default)
 *   'A'            Revision A only: no resource metadata, a 401 without resource_metadata
 *   'metadata-404' Revision A without metadata: no resource metadata and no
 *                  /.well-known/oauth-authorization-server; the client must use /authorize,
 *                  /token and /register at the base URL
 *
 * The server records every request it receives (and the AS its audit events); the "person" plays
 * the browser against our real login and consent pages and delivers the redirect to the client's
 * loopback callback; `recordingFetch` records what the client sends.
 */
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import { createAuthorizationServer, type AuthorizationServer } from '../../src/authorization-server/index.js';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient } from '../../src/authorization-server/clients.js';
import { ContextClient, type ContextClientOptions } from '../../src/client/session.js';
import { ClientError, type ClientErrorCode } from '../../src/client/errors.js';
import { withoutOfflineAccess } from '../../src/core/scopes.js';
import { MemoryTokenStore } from '../../src/client/token-store.js';
import { hashPassword } from '../../src/core/passwords.js';
import { bearerChallenge, findBearerChallenge } from '../../src/core/www-authenticate.js';
import { mountDemoMcpServer } from '../../src/demo/mcp-server.js';
import { honoProtectedResourceMetadata } from '../../src/resource-server/adapters/hono.js';
import { protectedResource, type ProtectedResource } from '../../src/resource-server/guard.js';
import { jwtVerifier } from '../../src/resource-server/verify-jwt.js';
import { createMemoryStore } from '../../src/store/memory.js';
import type { Store } from '../../src/store/store.js';
import { Browser, signInAndConsent } from '../helpers/harness.js';

export const USER = { id: 'user-alice', username: 'alice', password: 'correct horse battery staple' };

// ---------------------------------------------------------------------------------------------
// Any handler on a real port

export interface ServedApp {
  origin: string;
  close(): Promise<void>;
}

/** Serves `handler` over HTTP on 127.0.0.1, port 0. The handler may be set after the port is known. */
export async function serveHandler(handler: (request: Request) => Response | Promise<Response>): Promise<ServedApp> {
  const server = createAdaptorServer({ fetch: (request: Request) => handler(request) }) as Server;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // Idle keep-alive connections of fetch would hold close() open.
        server.closeAllConnections();
      }),
  };
}

// ---------------------------------------------------------------------------------------------
// What a server saw

export interface SeenRequest {
  method: string;
  path: string;
  search: string;
  headers: Headers;
  /** Form parameters of a urlencoded POST (token, revocation). */
  form?: URLSearchParams;
  /** Parsed body of a JSON POST (registration, JSON-RPC). */
  json?: unknown;
  status?: number;
}

/** Hono middleware that records every request (headers, query, body) and its status in `seen`. */
function recordRequests(app: Hono, seen: SeenRequest[]): void {
  app.use('*', async (c, next) => {
    const request = c.req.raw;
    const url = new URL(request.url);
    const entry: SeenRequest = { method: request.method, path: url.pathname, search: url.search, headers: new Headers(request.headers) };
    if (request.method === 'POST') {
      const text = await request.clone().text();
      const type = request.headers.get('content-type') ?? '';
      if (type.startsWith('application/x-www-form-urlencoded')) entry.form = new URLSearchParams(text);
      else if (type.startsWith('application/json')) entry.json = JSON.parse(text) as unknown;
    }
    seen.push(entry);
    await next();
    entry.status = c.res.status;
  });
}

// ---------------------------------------------------------------------------------------------
// The context server

export type Mode = 'B' | 'A' | 'metadata-404';
export const MODES: readonly Mode[] = ['B', 'A', 'metadata-404'];

export interface ContextServerOptions {
  mode?: Mode;
  registration?: 'open' | 'closed';
  accessTokenTtl?: number;
  refreshTokenTtl?: number;
  /** More resources the authorization server issues tokens for (another server's, when it is listed there too). */
  extraResources?: string[];
  /** Routes registered before everything else, so they win over the real ones. */
  routes?: (app: Hono, origin: string, as: AuthorizationServer) => void;
}

export interface ContextServer {
  mode: Mode;
  origin: string;
  issuer: string;
  /** The demo MCP server, the canonical server URI (Revision B's resource). */
  serverUrl: string;
  as: AuthorizationServer;
  store: Store;
  protection: ProtectedResource;
  /** Seconds added to the real clock, for the authorization server and the token verifier. */
  clock: { offset: number };
  /** The authorization server's audit events. */
  log: Record<string, unknown>[];
  /** Every request the server received, in order. */
  seen: SeenRequest[];
  /** Token requests by grant type, as the server received them. */
  tokenRequests(grantType: string): SeenRequest[];
  count(method: string, path: string): number;
  /** A client created by an operator (not through /register), public or confidential; for the browser flow unless `grantTypes` say otherwise. */
  addClient(method?: 'none' | 'client_secret_basic' | 'client_secret_post', grantTypes?: string[]): Promise<{ clientId: string; clientSecret?: string }>;
  close(): Promise<void>;
}

export async function startContextServer(options: ContextServerOptions = {}): Promise<ContextServer> {
  const mode = options.mode ?? 'B';
  // Routes are added once the port (the issuer) is known, before anyone is told the address.
  const composed = new Hono();
  const served = await serveHandler((request) => composed.fetch(request));
  const origin = served.origin;
  const serverUrl = `${origin}/mcp`;
  const clock = { offset: 0 };
  const now = () => Math.floor(Date.now() / 1000) + clock.offset;
  const log: Record<string, unknown>[] = [];
  const seen: SeenRequest[] = [];
  const store = createMemoryStore();
  await store.createUser({ id: USER.id, username: USER.username, passwordHash: await hashPassword(USER.password), createdAt: now() });

  const as = createAuthorizationServer({
    issuer: origin,
    store,
    resources: [serverUrl, ...(options.extraResources ?? [])],
    registration: options.registration ?? 'open',
    now,
    log: (event) => log.push(event),
    ...(options.accessTokenTtl ? { accessTokenTtl: options.accessTokenTtl } : {}),
    ...(options.refreshTokenTtl ? { refreshTokenTtl: options.refreshTokenTtl } : {}),
  });
  const protection = protectedResource({
    resource: serverUrl,
    authorizationServers: [origin],
    // The resource's scopes, as serve's co-hosted /mcp has them: offline_access is the authorization server's.
    scopesSupported: withoutOfflineAccess(as.metadata.scopes_supported),
    resourceName: 'client test server',
    // As serve's own: a token the authorization server revoked is refused at once.
    revocations: as.revocations,
    // The verifier reaches the AS directly, so that hiding the AS metadata from clients ('metadata-404') does not blind it.
    verifier: jwtVerifier({ authorizationServers: [origin], now, fetch: (input, init) => as.handle(new Request(input, init)) }),
  });

  recordRequests(composed, seen);
  options.routes?.(composed, origin, as);
  if (mode !== 'B') {
    // Revision A servers know nothing of RFC 9728: their 401 names no resource metadata.
    composed.use('/mcp', async (c, next) => {
      await next();
      const challenge = findBearerChallenge(c.res.headers.get('www-authenticate'));
      if (!challenge) return;
      c.res.headers.set(
        'www-authenticate',
        bearerChallenge({
          ...(challenge.error ? { error: challenge.error as 'invalid_token' } : {}),
          ...(challenge.error_description ? { errorDescription: challenge.error_description } : {}),
          ...(challenge.scope ? { scope: challenge.scope } : {}),
        }),
      );
    });
  }
  if (mode === 'metadata-404') {
    composed.all('/.well-known/oauth-authorization-server', (c) => c.json({ error: 'not_found' }, 404));
  }
  composed.route('/', as.app);
  if (mode === 'B') honoProtectedResourceMetadata(composed, protection);
  mountDemoMcpServer(composed, '/mcp', protection);
  composed.notFound((c) => c.json({ error: 'not_found' }, 404));

  return {
    mode,
    origin,
    issuer: origin,
    serverUrl,
    as,
    store,
    protection,
    clock,
    log,
    seen,
    tokenRequests: (grantType) => seen.filter((r) => r.method === 'POST' && r.path === '/token' && r.form?.get('grant_type') === grantType),
    count: (method, path) => seen.filter((r) => r.method === method && r.path === path).length,
    async addClient(method = 'none', grantTypes = ['authorization_code', 'refresh_token']) {
      const browser = grantTypes.includes('authorization_code');
      const metadata = validateClientMetadata(
        {
          client_name: 'Pre-registered client',
          // Any loopback port matches (RFC 8252 §7.3): the client picks one at run time.
          redirect_uris: browser ? ['http://127.0.0.1/callback'] : [],
          ...(browser ? {} : { response_types: [] }),
          token_endpoint_auth_method: method,
          grant_types: grantTypes,
        },
        as.metadata.scopes_supported,
      );
      const { client, clientSecret } = await registerClient(store, metadata, now(), { registeredBy: 'admin' });
      return clientSecret === undefined ? { clientId: client.clientId } : { clientId: client.clientId, clientSecret };
    },
    close: () => served.close(),
  };
}

// ---------------------------------------------------------------------------------------------
// The person at the browser

export interface PersonOptions {
  decision?: 'approve' | 'deny';
  /** Changes the final redirect before it is delivered (a forged state, a foreign iss). */
  tamper?: (callback: URL) => void;
  /** Never comes back: the callback is not delivered. */
  absent?: boolean;
  /** Callbacks someone else sends first (another program on this machine, a web page), made from the real one. */
  forged?: (callback: URL) => URL[];
  /** Called once the final redirect was delivered and answered. */
  delivered?: () => void;
}

export interface Person {
  /** For `openAuthorizationUrl`. */
  open: (url: URL) => Promise<void>;
  /** Every authorization URL the person was sent to. */
  urls: URL[];
  /** Every callback URL the person delivered. */
  callbacks: URL[];
  /** The loopback's status for each callback delivered, forged ones included, in order. */
  answers: number[];
}

/**
 * Plays the person: opens the authorization URL in a fresh cookie jar, signs in and consents on
 * our real pages over HTTP, and delivers the final redirect (the client's loopback callback) by
 * fetching it, as the browser would.
 */
export function person(options: PersonOptions = {}): Person {
  const urls: URL[] = [];
  const callbacks: URL[] = [];
  const answers: number[] = [];
  const deliver = async (callback: URL): Promise<void> => {
    const answer = await fetch(callback);
    answers.push(answer.status);
    await answer.body?.cancel();
  };
  return {
    urls,
    callbacks,
    answers,
    async open(url) {
      urls.push(url);
      if (options.absent) return;
      const browser = new Browser((path, init) => fetch(new URL(path, url.origin), init));
      const first = await browser.fetch(url.pathname + url.search);
      const callback = await signInAndConsent(browser, first, USER, options.decision ?? 'approve', url.origin);
      for (const forged of options.forged?.(new URL(callback)) ?? []) await deliver(forged);
      options.tamper?.(callback);
      callbacks.push(callback);
      await deliver(callback);
      options.delivered?.();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// What the client sent

export interface SentRequest {
  method: string;
  url: URL;
  headers: Headers;
  body?: string;
}

/** A `fetch` that records every request before sending it on. */
export function recordingFetch(sent: SentRequest[]): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const body = request.body ? await request.clone().text() : undefined;
    sent.push({ method: request.method, url: new URL(request.url), headers: new Headers(request.headers), ...(body === undefined ? {} : { body }) });
    return fetch(request);
  };
}

/** A client for `server` with an in-memory store, the person at the browser and a recording fetch. */
export function clientFor(server: ContextServer, who: Person, extra: Partial<ContextClientOptions> = {}, sent: SentRequest[] = []): ContextClient {
  return new ContextClient({
    serverUrl: server.serverUrl,
    store: new MemoryTokenStore(),
    openAuthorizationUrl: who.open,
    authorizationTimeoutMs: 10_000,
    fetch: recordingFetch(sent),
    ...extra,
  });
}

// ---------------------------------------------------------------------------------------------
// MCP over the client's fetch

let nextId = 1;

/** A JSON-RPC POST as a Streamable HTTP client sends it. */
export function rpc(method: string, params: Record<string, unknown> = {}): RequestInit {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
  };
}

export const INITIALIZE = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'client-tests', version: '0' } };

/** initialize, then tools/call `name`; returns the tools/call response. */
export async function callTool(fetchImpl: typeof fetch, serverUrl: string, name: string): Promise<Response> {
  const init = await fetchImpl(serverUrl, rpc('initialize', INITIALIZE));
  assert.equal(init.status, 200, await init.clone().text());
  await init.body?.cancel();
  return fetchImpl(serverUrl, rpc('tools/call', { name, arguments: {} }));
}

/** The structured result of a successful tools/call answer. */
export async function toolResult(response: Response): Promise<Record<string, unknown>> {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  const message = JSON.parse(text) as { result?: { structuredContent?: Record<string, unknown>; isError?: boolean }; error?: unknown };
  assert.equal(message.error, undefined, text);
  assert.notEqual(message.result?.isError, true, text);
  assert.ok(message.result?.structuredContent, text);
  return message.result.structuredContent;
}

// ---------------------------------------------------------------------------------------------
// Assertions

/** For assert.rejects: a ClientError with this code (and a message matching `message`, if given). */
export function clientError(code: ClientErrorCode, message?: RegExp) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof ClientError, `expected ClientError ${code}, got ${String(error)}${error instanceof Error ? `\n${error.stack}` : ''}`);
    assert.equal(error.code, code, error.message);
    if (message) assert.match(error.message, message);
    return true;
  };
}

/** Rejects when `promise` takes longer than `ms` (a hang is a failure, not a timeout of the whole run). */
export function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
