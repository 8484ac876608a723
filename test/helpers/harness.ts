/**
 * An authorization server on the in-memory store with a controllable clock, and small helpers
 * that speak to it through its Web handler the way a client and a browser would.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createAuthorizationServer, type AuthorizationServer, type AuthorizationServerOptions } from '../../src/authorization-server/index.js';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient as createClient } from '../../src/authorization-server/clients.js';
import { hashPassword } from '../../src/core/passwords.js';
import { createMemoryStore } from '../../src/store/memory.js';
import type { FullStore, Store } from '../../src/store/store.js';

export const ISSUER = 'http://127.0.0.1:9999';
export const RESOURCE = 'http://127.0.0.1:9999/mcp';
export const OTHER_RESOURCE = 'http://127.0.0.1:9999/other';
export const REDIRECT_URI = 'http://127.0.0.1:33333/callback';

/** The two revisions, as data: what differs is whether the client sends `resource`. */
export const REVISIONS = [
  { name: 'Revision A (2025-03-26)', resource: undefined },
  { name: 'Revision B (2025-06-18)', resource: RESOURCE },
] as const;
export type Revision = (typeof REVISIONS)[number];

export interface Harness {
  server: AuthorizationServer;
  /** The options the server was made with, for a test that needs its context (createServerContext) or its resolved settings. */
  options: AuthorizationServerOptions;
  /** The store, with every capability, for setting up and inspecting (the server may be given less of it: `serverStore`). */
  store: FullStore;
  clock: { now: number };
  log: Record<string, unknown>[];
  request(path: string, init?: RequestInit): Promise<Response>;
}

export interface HarnessOptions extends Partial<Omit<AuthorizationServerOptions, 'store'>> {
  store?: FullStore;
  /** What the server is given of the store (a view with fewer capabilities); the store itself by default. */
  serverStore?: (store: FullStore) => Store;
}

export function createHarness(harnessOptions: HarnessOptions = {}): Harness {
  const { serverStore, ...overrides } = harnessOptions;
  const store = overrides.store ?? createMemoryStore();
  const clock = { now: 1_800_000_000 };
  const log: Record<string, unknown>[] = [];
  const options: AuthorizationServerOptions = {
    issuer: ISSUER,
    resources: [RESOURCE, OTHER_RESOURCE],
    now: () => clock.now,
    log: (event) => log.push(event),
    ...overrides,
    store: serverStore ? serverStore(store) : store,
  };
  const server = createAuthorizationServer(options);
  return {
    server,
    options,
    store,
    clock,
    log,
    request: (path, init) => server.handle(new Request(new URL(path, ISSUER), init)),
  };
}

/** A page's HTML with identifiers (pages/html.ts token()) read as plain `<code>` text, for matching. */
export function plainTokens(html: string): string {
  return html.replace(
    /<code class="token">((?:<wbr>|<span>[^<]*<\/span>)*)<\/code>/g,
    (_, inner: string) => `<code>${inner.replace(/<wbr>|<\/?span>/g, '')}</code>`,
  );
}

export function form(values: Record<string, string | undefined>): URLSearchParams {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) if (value !== undefined) params.append(key, value);
  return params;
}

export function postForm(h: Harness, path: string, values: Record<string, string | undefined>, headers: Record<string, string> = {}): Promise<Response> {
  return h.request(path, { method: 'POST', body: form(values), headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } });
}

export function basic(clientId: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export interface TestClient {
  client_id: string;
  client_secret?: string;
  [key: string]: unknown;
}

export async function registerClient(h: Harness, metadata: Record<string, unknown> = {}): Promise<TestClient> {
  const response = await h.request('/register', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Test Client',
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      ...metadata,
    }),
  });
  if (response.status !== 201) throw new Error(`registration failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as TestClient;
}

export async function addUser(h: Harness, username = 'alice', password = 'correct horse battery'): Promise<{ id: string; username: string; password: string }> {
  const id = `user-${username}`;
  await h.store.createUser({ id, username, passwordHash: await hashPassword(password), createdAt: h.clock.now });
  return { id, username, password };
}

/** A minimal cookie jar: what a browser would keep between our hops. */
export class Browser {
  private cookies = new Map<string, string>();
  private readonly send: (path: string, init: RequestInit) => Promise<Response>;

  /** Speaks to a harness in-process, or to anything through `send` (a real server over HTTP). */
  constructor(target: Harness | ((path: string, init: RequestInit) => Promise<Response>)) {
    this.send = typeof target === 'function' ? target : (path, init) => target.request(path, init);
  }

  async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set('cookie', this.cookieHeader());
    const response = await this.send(path, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return response;
  }

  /** Posts a form, with what else a browser would send (`Origin`, `Sec-Fetch-Site`) in `headers`. */
  submit(path: string, values: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
    return this.fetch(path, { method: 'POST', body: form(values), headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } });
  }

  /** The value of one of its cookies. */
  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  /** The Cookie header it sends. */
  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  clearCookies(): void {
    this.cookies.clear();
  }
}

/** Reads the hidden CSRF token and the form action out of a login or consent page. */
export function parseForm(html: string): { action: string; csrf: string } {
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!action || !csrf) throw new Error(`no form on the page:\n${html.slice(0, 500)}`);
  return { action: action.replace(/&amp;/g, '&'), csrf };
}

export function authorizeUrl(params: Record<string, string | undefined>): string {
  return `/authorize?${form(params).toString()}`;
}

export interface AuthorizeOptions {
  client: TestClient;
  user: { username: string; password: string };
  resource?: string | undefined;
  scope?: string;
  state?: string;
  redirectUri?: string;
  browser?: Browser;
  decision?: 'approve' | 'deny';
  /** OpenID Connect's nonce, sent when given. */
  nonce?: string;
}

/**
 * Drives GET /authorize → login form → consent form like a browser, and returns the final
 * redirect's URL (with code or error) and the PKCE verifier to redeem the code with.
 */
export async function authorize(h: Harness, options: AuthorizeOptions): Promise<{ location: URL; verifier: string; browser: Browser }> {
  const browser = options.browser ?? new Browser(h);
  const { verifier, challenge } = pkcePair();
  const response = await browser.fetch(
    authorizeUrl({
      response_type: 'code',
      client_id: options.client.client_id,
      redirect_uri: options.redirectUri ?? REDIRECT_URI,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: options.state ?? 'state-123',
      scope: options.scope,
      resource: options.resource,
      nonce: options.nonce,
    }),
  );
  const location = await signInAndConsent(browser, response, options.user, options.decision ?? 'approve', ISSUER);
  return { location, verifier, browser };
}

/**
 * From the /authorize response on: fills the login form and the consent form like a person
 * would, and returns the URL the server finally sends the browser to (the client's callback).
 */
export async function signInAndConsent(
  browser: Browser,
  first: Response,
  user: { username: string; password: string },
  decision: 'approve' | 'deny',
  base: string,
  /** Collects the HTML of every page shown (sign-in, consent). */
  pages: string[] = [],
): Promise<URL> {
  let response = first;
  for (let hop = 0; hop < 5; hop++) {
    if (response.status !== 303) throw new Error(`unexpected ${response.status}: ${(await response.text()).slice(0, 300)}`);
    const location = new URL(response.headers.get('location')!, base);
    if (location.origin !== new URL(base).origin || !location.pathname.includes('/interaction/')) return location;
    const page = await browser.fetch(location.pathname);
    const html = await page.text();
    pages.push(html);
    const { action, csrf } = parseForm(html);
    if (html.includes('name="password"')) {
      response = await browser.submit(action, { csrf, step: 'login', username: user.username, password: user.password });
    } else {
      response = await browser.submit(action, { csrf, step: 'consent', decision });
    }
  }
  throw new Error('too many hops');
}

export async function redeemCode(
  h: Harness,
  client: TestClient,
  code: string,
  verifier: string,
  extra: Record<string, string | undefined> = {},
): Promise<Response> {
  return postForm(h, '/token', {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    redirect_uri: REDIRECT_URI,
    client_id: client.client_id,
    ...extra,
  });
}

/** Registers a public client, signs a user in, consents and redeems the code: a whole Revision A or B flow. */
export async function obtainTokens(
  h: Harness,
  revision: Revision,
  options: Partial<AuthorizeOptions> = {},
): Promise<{ client: TestClient; tokens: Record<string, unknown> }> {
  const client = options.client ?? (await registerClient(h));
  const existing = await h.store.getUser({ username: 'alice' });
  const user = options.user ?? (existing ? { username: 'alice', password: 'correct horse battery' } : await addUser(h));
  const { location, verifier } = await authorize(h, { client, user, resource: revision.resource, ...options });
  const code = location.searchParams.get('code');
  if (!code) throw new Error(`no code: ${location}`);
  const response = await redeemCode(h, client, code, verifier, { resource: revision.resource });
  if (response.status !== 200) throw new Error(`token failed: ${response.status} ${await response.text()}`);
  return { client, tokens: (await response.json()) as Record<string, unknown> };
}

/** The claims of a JWT, unverified: for asserting what a token says (aud, scope), not whether it is valid. */
export function jwtClaims(token: unknown): Record<string, unknown> {
  if (typeof token !== 'string') throw new Error(`not a token: ${String(token)}`);
  const payload = token.split('.')[1];
  if (!payload) throw new Error('not a JWT');
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** A valid authorization request's parameters for `client`, with a fresh PKCE pair; override any of them. */
export function authorizationRequest(
  client: TestClient,
  revision: Revision,
  overrides: Record<string, string | undefined> = {},
): { params: Record<string, string | undefined>; verifier: string } {
  const { verifier, challenge } = pkcePair();
  return {
    verifier,
    params: {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'state-123',
      resource: revision.resource,
      ...overrides,
    },
  };
}

/**
 * Follows an /authorize response through the login and consent pages like `authorize` does, and
 * returns the final redirect (to the client) and the pages seen on the way ('login', 'consent').
 */
export async function completeInteraction(
  browser: Browser,
  response: Response,
  options: { user: { username: string; password: string }; decision?: 'approve' | 'deny' },
): Promise<{ location: URL; pages: ('login' | 'consent')[] }> {
  const pages: ('login' | 'consent')[] = [];
  for (let hop = 0; hop < 5; hop++) {
    if (response.status !== 303) throw new Error(`unexpected ${response.status}: ${(await response.text()).slice(0, 300)}`);
    const location = new URL(response.headers.get('location')!, ISSUER);
    if (location.origin !== ISSUER || !location.pathname.startsWith('/interaction/')) return { location, pages };
    const html = await (await browser.fetch(location.pathname)).text();
    const { action, csrf } = parseForm(html);
    if (html.includes('name="password"')) {
      pages.push('login');
      response = await browser.submit(action, { csrf, step: 'login', username: options.user.username, password: options.user.password });
    } else {
      pages.push('consent');
      response = await browser.submit(action, { csrf, step: 'consent', decision: options.decision ?? 'approve' });
    }
  }
  throw new Error('too many hops');
}

/** Asserts an OAuth JSON error response (RFC 6749 §5.2) with this status (and code) and returns its body. */
export async function expectOAuthError(response: Response, status: number, error?: string): Promise<{ error: string; error_description?: string }> {
  const text = await response.text();
  assert.equal(response.status, status, `expected ${status} ${error ?? ''}, got ${response.status}: ${text.slice(0, 300)}`);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  const body = JSON.parse(text) as { error: string; error_description?: string };
  assert.equal(typeof body.error, 'string');
  if (error !== undefined) assert.equal(body.error, error, text);
  assert.doesNotMatch(text, /\n\s+at |stack/i, 'no stack trace in an error body');
  return body;
}

/** POSTs a form to `path`, authenticating as `client` with the method it registered (none, Basic or post). */
export function postAs(h: Harness, path: string, client: TestClient, values: Record<string, string | undefined>): Promise<Response> {
  const method = client.token_endpoint_auth_method;
  if (method === 'client_secret_basic') return postForm(h, path, values, { authorization: basic(client.client_id, client.client_secret!) });
  const secret = method === 'client_secret_post' ? client.client_secret : undefined;
  return postForm(h, path, { client_id: client.client_id, client_secret: secret, ...values });
}

/** Registers a confidential client for client_credentials only (no redirect URIs). */
/** A client_credentials client, created as an operator would (open registration refuses them). */
export async function registerServiceClient(
  h: Harness,
  method: 'client_secret_basic' | 'client_secret_post' = 'client_secret_basic',
  metadata: Record<string, unknown> = {},
): Promise<TestClient> {
  const valid = validateClientMetadata(
    { token_endpoint_auth_method: method, grant_types: ['client_credentials'], ...metadata },
    h.server.metadata.scopes_supported,
  );
  const { client, clientSecret } = await createClient(h.store, valid, h.clock.now, { registeredBy: 'admin' });
  return { client_id: client.clientId, client_secret: clientSecret!, token_endpoint_auth_method: method };
}

/** A resource server: a confidential client an operator created with `canIntrospect` (not via /register). */
export async function addResourceServer(h: Harness): Promise<TestClient> {
  const metadata = validateClientMetadata({ client_name: 'Resource server', grant_types: ['client_credentials'] }, h.server.metadata.scopes_supported);
  const { client, clientSecret } = await createClient(h.store, metadata, h.clock.now, { registeredBy: 'admin', canIntrospect: true });
  return { client_id: client.clientId, client_secret: clientSecret!, token_endpoint_auth_method: 'client_secret_basic' };
}

/** POST /introspect as `caller`; fails unless the answer is 200. */
export async function introspect(h: Harness, token: unknown, caller: TestClient): Promise<Record<string, unknown>> {
  const response = await postAs(h, '/introspect', caller, { token: String(token) });
  if (response.status !== 200) throw new Error(`introspection failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

/** Like `obtainTokens` for any client: the code is redeemed with the client's own authentication method. */
export async function obtainTokensAs(
  h: Harness,
  revision: Revision,
  client: TestClient,
  options: Partial<AuthorizeOptions> = {},
): Promise<Record<string, string>> {
  const existing = await h.store.getUser({ username: 'alice' });
  const user = options.user ?? (existing ? { username: 'alice', password: 'correct horse battery' } : await addUser(h));
  const { location, verifier } = await authorize(h, { client, user, resource: revision.resource, ...options });
  const code = location.searchParams.get('code');
  if (!code) throw new Error(`no code: ${location}`);
  const response = await postAs(h, '/token', client, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    redirect_uri: options.redirectUri ?? REDIRECT_URI,
    resource: revision.resource,
  });
  if (response.status !== 200) throw new Error(`token failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, string>;
}
