/**
 * Peer 3: Better Auth with its MCP plugin (`@better-auth/mcp`, which is its OAuth 2.1 provider
 * plugin configured for an MCP resource) and its JWT plugin, on SQLite through better-sqlite3, as
 * its documentation sets it up for an MCP server: `database` a better-sqlite3 Database on a file
 * (Better Auth sets no pragmas, so SQLite's own defaults apply), the schema made by its own
 * `getMigrations`, served by its `toNodeHandler` on node:http. Its defaults are kept: access
 * tokens are JWTs for the resource signed by the JWT plugin's key (EdDSA), refresh tokens are
 * opaque, stored hashed and rotated at every use (with the MCP plugin's 30 s window in which a
 * rotated token's retry gets the same answer back). Its rate limits are turned off, as for the
 * other peers (all load comes from one address).
 *
 * Chains are made the way a person and a client make them, over its own handler before it
 * listens: a user signs up with email and password, an administrator registers the public client
 * (`adminCreateOAuthClient`), and each chain is one authorization code flow (PKCE) of that
 * signed-in user — the consent given once on the consent endpoint — whose code is redeemed for a
 * refresh token (`offline_access`).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mcp } from '@better-auth/mcp';
import Database from 'better-sqlite3';
import { betterAuth } from 'better-auth';
import { getMigrations } from 'better-auth/db/migration';
import { toNodeHandler } from 'better-auth/node';
import { jwt } from 'better-auth/plugins';
import { announce, chains, flowsWanted, type FlowSetup } from './child.js';

const BASE_PATH = '/api/auth';
const RESOURCE = 'http://127.0.0.1/mcp';
const REDIRECT_URI = 'http://127.0.0.1:9/cb';
const SCOPE = 'mcp:tools offline_access';
const USER = { email: 'bench@example.invalid', password: 'bench password 123' };

const server = http.createServer();
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = (server.address() as AddressInfo).port;
const origin = `http://127.0.0.1:${port}`;

const folder = mkdtempSync(join(tmpdir(), 'ca-bench-better-auth-'));
const database = new Database(join(folder, 'better-auth.db'));
const options = {
  baseURL: origin,
  basePath: BASE_PATH,
  secret: 'bench secret, not a secret: 32 characters or more',
  database,
  emailAndPassword: { enabled: true },
  rateLimit: { enabled: false },
  telemetry: { enabled: false },
  plugins: [
    jwt(),
    mcp({
      loginPage: '/sign-in',
      consentPage: '/consent',
      resource: RESOURCE,
      scopes: ['openid', 'profile', 'email', 'offline_access', 'mcp:tools'],
      rateLimit: { token: false, authorize: false },
    }),
  ],
};
const { runMigrations } = await getMigrations(options);
await runMigrations();
const auth = betterAuth(options);

/** One request through Better Auth's own handler (no socket), as its server-side callers do. */
const call = (path: string, init: RequestInit = {}): Promise<Response> =>
  auth.handler(new Request(`${origin}${BASE_PATH}${path}`, { redirect: 'manual', ...init }));

/** The Cookie header a browser sends after an answer that set these cookies. */
const cookieOf = (headers: Headers): string =>
  headers
    .getSetCookie()
    .map((line) => line.split(';')[0])
    .join('; ');
const cookie = cookieOf((await auth.api.signUpEmail({ body: { ...USER, name: 'bench' }, returnHeaders: true })).headers);
const client = await auth.api.adminCreateOAuthClient({
  headers: new Headers({ cookie }),
  body: {
    client_name: 'bench',
    application_type: 'native',
    redirect_uris: [REDIRECT_URI],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    scope: SCOPE,
  },
});
const clientId = client.client_id;

/** One authorization code flow of the signed-in user; the consent page's answer when asked. Resolves with the refresh token. */
async function chain(): Promise<string> {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope: SCOPE,
    resource: RESOURCE,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 's',
  });
  const authorized = await call(`/oauth2/authorize?${query}`, { headers: { cookie } });
  let location = authorized.headers.get('location') ?? '';
  if (location.startsWith('/consent')) {
    const consent = await call('/oauth2/consent', {
      method: 'POST',
      headers: { cookie, origin, 'content-type': 'application/json' },
      body: JSON.stringify({ accept: true, oauth_query: location.slice(location.indexOf('?') + 1) }),
    });
    location = ((await consent.json()) as { url?: string }).url ?? '';
  }
  const code = location.startsWith(REDIRECT_URI) ? new URL(location).searchParams.get('code') : null;
  if (!code) throw new Error(`better-auth setup: authorize answered ${authorized.status} ${location || (await authorized.text()).slice(0, 300)}`);
  const body = new URLSearchParams({
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    redirect_uri: REDIRECT_URI,
    client_id: clientId,
    resource: RESOURCE,
  });
  const tokens = await call('/oauth2/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
  const parsed = (await tokens.json()) as { refresh_token?: string };
  if (!parsed.refresh_token) throw new Error(`better-auth setup: token answered ${tokens.status} ${JSON.stringify(parsed).slice(0, 300)}`);
  return parsed.refresh_token;
}

const refreshTokens: string[] = [];
for (let i = 0; i < chains(); i++) refreshTokens.push(await chain());

/** Flows bench: one browser per chain, each signed in with the password; the consent is already remembered. */
let flow: FlowSetup | undefined;
if (flowsWanted()) {
  const cookies: string[] = [];
  for (let i = 0; i < chains(); i++) cookies.push(cookieOf((await auth.api.signInEmail({ body: USER, returnHeaders: true })).headers));
  flow = { authorizePath: `${BASE_PATH}/oauth2/authorize`, redirectUri: REDIRECT_URI, scope: SCOPE, resource: RESOURCE, cookies };
}

server.on('request', toNodeHandler(auth));
const sqlite = {
  journalMode: String(database.pragma('journal_mode', { simple: true })),
  synchronous: Number(database.pragma('synchronous', { simple: true })),
};
announce({ port, clientId, refreshTokens, tokenPath: `${BASE_PATH}/oauth2/token`, sqlite, flow }, () => {
  server.closeAllConnections();
  server.close();
  database.close();
  rmSync(folder, { recursive: true, force: true });
});
