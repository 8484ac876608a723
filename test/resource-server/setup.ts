/**
 * Shared setup for the resource-server tests: an in-memory authorization server (the harness),
 * both verifiers built against it, a second authorization server with its own keys, and helpers
 * to ask the guard and read its denials.
 */
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import { createAuthorizationServer, type AuthorizationServer } from '../../src/authorization-server/index.js';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient as createClient } from '../../src/authorization-server/clients.js';
import { findBearerChallenge } from '../../src/core/www-authenticate.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { protectedResource, type ProtectedResource, type ProtectedResourceOptions } from '../../src/resource-server/guard.js';
import { introspectionVerifier } from '../../src/resource-server/introspection.js';
import type { TokenVerifier } from '../../src/resource-server/types.js';
import { jwtVerifier } from '../../src/resource-server/verify-jwt.js';
import { ISSUER, obtainTokens, postAs, registerServiceClient, RESOURCE, type Harness, type Revision, type TestClient } from '../helpers/harness.js';

export { createHarness, ISSUER, OTHER_RESOURCE, RESOURCE, REVISIONS, type Harness, type Revision } from '../helpers/harness.js';

/** A second, unrelated authorization server (own store, own keys) on another port. */
export const OTHER_ISSUER = 'http://127.0.0.1:9998';
export const METADATA_URL = 'http://127.0.0.1:9999/.well-known/oauth-protected-resource/mcp';

/**
 * A `fetch` that answers in-process from the authorization server whose origin the URL names,
 * and records each request as "METHOD /path" in `calls`. An unknown origin fails like a network error.
 */
export function routeFetch(servers: AuthorizationServer[], calls: string[] = []): typeof fetch {
  const byOrigin = new Map(servers.map((server) => [new URL(server.metadata.issuer).origin, server]));
  return async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    calls.push(`${request.method} ${url.pathname}`);
    const server = byOrigin.get(url.origin);
    if (!server) throw new TypeError('fetch failed', { cause: new Error(`connect ECONNREFUSED ${url.host}`) });
    return server.handle(request);
  };
}

/** How many recorded calls went to `path`. */
export function count(calls: string[], path: string): number {
  return calls.filter((call) => call.endsWith(` ${path}`)).length;
}

/** A resource server's own confidential client at the AS, created by an operator with `canIntrospect`. */
export async function addIntrospectionClient(h: Harness): Promise<{ clientId: string; clientSecret: string }> {
  const metadata = validateClientMetadata(
    { client_name: 'Context server', grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic' },
    h.server.metadata.scopes_supported,
  );
  const { client, clientSecret } = await createClient(h.store, metadata, h.clock.now, { registeredBy: 'admin', canIntrospect: true });
  return { clientId: client.clientId, clientSecret: clientSecret! };
}

export interface VerifierSetup {
  verifier: TokenVerifier;
  /** Every request the verifier made, as "METHOD /path". */
  calls: string[];
}

export interface VerifierOptions {
  /** More authorization servers the fetch can reach (each by its issuer's origin). */
  alsoReachable?: AuthorizationServer[];
  fetch?: typeof fetch;
  cacheSeconds?: number;
}

export interface VerifierKind {
  name: 'JWT' | 'introspection';
  create(h: Harness, options?: VerifierOptions): Promise<VerifierSetup>;
}

/** The two built-in verifiers, both on the harness clock and reaching the AS in-process. */
export const VERIFIERS: readonly VerifierKind[] = [
  {
    name: 'JWT',
    async create(h, options = {}) {
      const calls: string[] = [];
      const verifier = jwtVerifier({
        authorizationServers: [ISSUER],
        now: () => h.clock.now,
        fetch: options.fetch ?? routeFetch([h.server, ...(options.alsoReachable ?? [])], calls),
      });
      return { verifier, calls };
    },
  },
  {
    name: 'introspection',
    async create(h, options = {}) {
      const calls: string[] = [];
      const { clientId, clientSecret } = await addIntrospectionClient(h);
      const verifier = introspectionVerifier({
        authorizationServer: ISSUER,
        clientId,
        clientSecret,
        now: () => h.clock.now,
        fetch: options.fetch ?? routeFetch([h.server, ...(options.alsoReachable ?? [])], calls),
        ...(options.cacheSeconds === undefined ? {} : { cacheSeconds: options.cacheSeconds }),
      });
      return { verifier, calls };
    },
  },
];

/** The context server at RESOURCE, trusting the harness AS, with `verifier`. */
export function protect(h: Harness, verifier: TokenVerifier, overrides: Partial<ProtectedResourceOptions> = {}): ProtectedResource {
  return protectedResource({
    resource: RESOURCE,
    authorizationServers: [ISSUER],
    scopesSupported: h.server.metadata.scopes_supported,
    requiredScopes: ['mcp:tools'],
    verifier,
    ...overrides,
  });
}

/** An access token from a whole authorization code flow of `revision` (user alice). */
export async function accessToken(h: Harness, revision: Revision, options: { scope?: string; resource?: string } = {}): Promise<string> {
  // The resource goes into both the authorization and the token request, as a Revision B client sends it.
  const target = options.resource === undefined ? revision : ({ ...revision, resource: options.resource } as unknown as Revision);
  const { tokens } = await obtainTokens(h, target, options.scope === undefined ? {} : { scope: options.scope });
  return String(tokens.access_token);
}

/** A client_credentials token from `server` (Revision B sends `resource`, A does not). */
export async function serviceToken(h: Harness, revision: Revision): Promise<string> {
  const client: TestClient = await registerServiceClient(h);
  const response = await postAs(h, '/token', client, { grant_type: 'client_credentials', resource: revision.resource });
  assert.equal(response.status, 200, await response.clone().text());
  return ((await response.json()) as { access_token: string }).access_token;
}

/** A second authorization server with its own store and keys, reachable at OTHER_ISSUER, issuing for RESOURCE too. */
export function createOtherAuthorizationServer(clock: { now: number }): Harness {
  const store = createMemoryStore();
  const options = { issuer: OTHER_ISSUER, store, resources: [RESOURCE], now: () => clock.now };
  const server = createAuthorizationServer(options);
  return { server, options, store, clock, log: [], request: (path, init) => server.handle(new Request(new URL(path, OTHER_ISSUER), init)) };
}

/**
 * A JWT access token signed with `signer`'s current key, shaped like the AS's own (RFC 9068);
 * any claim or header field can be overridden (undefined removes a claim).
 */
export async function mintToken(
  signer: AuthorizationServer,
  now: number,
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  const key = await signer.keys.current();
  const payload: Record<string, unknown> = {
    iss: signer.metadata.issuer,
    sub: 'user-alice',
    aud: RESOURCE,
    client_id: 'client-1',
    scope: 'mcp:tools',
    jti: randomBytes(8).toString('hex'),
    iat: now,
    exp: now + 600,
    ...claims,
  };
  for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
  return new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt', ...header }).sign(key.key);
}

/** Asks the guard about one Authorization header value and gives its answer as a Response (200 JSON of the identity when allowed). */
export async function ask(protection: ProtectedResource, authorization?: string, requiredScopes?: string[]): Promise<Response> {
  const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
  const result = await protection.authenticate(new Request(protection.resource, { headers }), requiredScopes);
  return result.ok ? Response.json(result.auth) : result.response;
}

export function bearer(token: string): string {
  return `Bearer ${token}`;
}

/**
 * Asserts a guard denial: the status, a JSON body with only `error` and `error_description`, and
 * (except for 503) a Bearer challenge naming the metadata URL and, when given, the error code.
 * Returns the challenge's parameters.
 */
export async function expectDenied(
  response: Response,
  status: 400 | 401 | 403 | 503,
  error: string,
  metadataUrl = METADATA_URL,
): Promise<Record<string, string>> {
  const text = await response.text();
  assert.equal(response.status, status, `expected ${status} ${error}, got ${response.status}: ${text}`);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  const body = JSON.parse(text) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description']);
  assert.equal(body.error, error);
  assert.equal(typeof body.error_description, 'string');
  if (status === 503) {
    assert.equal(response.headers.get('www-authenticate'), null);
    return {};
  }
  const challenge = findBearerChallenge(response.headers.get('www-authenticate'));
  assert.ok(challenge, `a Bearer challenge in ${response.headers.get('www-authenticate')}`);
  assert.equal(challenge.resource_metadata, metadataUrl);
  // RFC 6750 §3.1: a request without credentials gets a challenge without an error code.
  if (error === 'unauthorized') assert.equal(challenge.error, undefined);
  else assert.equal(challenge.error, error);
  return challenge;
}

/** Listens on 127.0.0.1, port 0; resolves with the base URL. */
export function listen(server: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

export function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** The JSON-RPC request of an MCP `tools/call`, as a Streamable HTTP client sends it (stateless: no session). */
export function toolCall(name: string, authorization?: string): RequestInit {
  return {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      ...(authorization === undefined ? {} : { authorization }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } }),
  };
}

/** The structured result of a successful tools/call answer. */
export async function toolResult(response: Response): Promise<Record<string, unknown>> {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  const message = JSON.parse(text) as { result?: { structuredContent?: Record<string, unknown>; isError?: boolean }; error?: unknown };
  assert.equal(message.error, undefined, text);
  assert.ok(message.result?.structuredContent, text);
  assert.notEqual(message.result.isError, true, text);
  return message.result.structuredContent;
}
