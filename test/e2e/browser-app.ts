/**
 * An application a person approves in the browser tests: its loopback callback, which keeps the
 * query of every redirect it receives, its registration at the server with the authorization URL
 * (PKCE, `state`, the demo's scope and resource) that starts the person's approval, the approval
 * itself and the tokens it yields, and the checks that those tokens work or stopped working.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Locator, Page } from 'playwright-core';
import { pkcePair } from '../helpers/harness.js';

/** A loopback server answering `/callback`, pushing each redirect's query onto `arrived`. */
export async function startCallback(arrived: URLSearchParams[]): Promise<{ server: Server; redirectUri: string }> {
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === '/callback') arrived.push(url.searchParams);
    response.writeHead(200, { 'content-type': 'text/plain' }).end('done');
  }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, redirectUri: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback` };
}

/** Registers a public client (dynamic registration) and makes the URL of its authorization request for the demo's /mcp. */
export async function registerBrowserApp(issuer: string, redirectUri: string): Promise<{ client: { client_id: string }; verifier: string; authorize: URL }> {
  const registration = await fetch(`${issuer}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'E2E Notes',
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
    }),
  });
  assert.equal(registration.status, 201, await registration.clone().text());
  const client = (await registration.json()) as { client_id: string };
  const { verifier, challenge } = pkcePair();
  const authorize = new URL(`${issuer}/authorize`);
  const params = {
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'st',
    scope: 'mcp:tools',
    resource: `${issuer}/mcp`,
  };
  for (const [key, value] of Object.entries(params)) authorize.searchParams.set(key, value);
  return { client, verifier, authorize };
}

export interface AppTokens {
  access_token: string;
  refresh_token: string;
}

/** The person signs in on the authorization page and reaches the consent page: its Approve button. */
export async function signInToConsent(page: Page, authorize: URL, issuer: string, user: { username: string; password: string }): Promise<Locator> {
  await page.goto(authorize.href);
  await page.fill('input[name="username"]', user.username);
  await page.fill('input[name="password"]', user.password);
  await Promise.all([page.waitForURL(new RegExp(`^${issuer}/interaction/`)), page.locator('button[type="submit"]').click()]);
  const approve = page.locator('button[name="decision"][value="approve"]');
  await approve.waitFor();
  return approve;
}

/** Approves, and redeems the code the application's callback received: its tokens. */
export async function approveAndRedeem(
  page: Page,
  approve: Locator,
  app: { issuer: string; redirectUri: string; arrived: URLSearchParams[]; clientId: string; verifier: string },
): Promise<AppTokens> {
  await Promise.all([page.waitForURL((u) => u.href.startsWith(app.redirectUri)), approve.click()]);
  const code = app.arrived[0]?.get('code');
  assert.ok(code, 'a code reached the application');
  const redeemed = await fetch(`${app.issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: app.verifier,
      redirect_uri: app.redirectUri,
      client_id: app.clientId,
      resource: `${app.issuer}/mcp`,
    }),
  });
  assert.equal(redeemed.status, 200, await redeemed.clone().text());
  return (await redeemed.json()) as AppTokens;
}

/** The status of tools/list at the demo's /mcp with this access token. */
export async function toolsListStatus(issuer: string, accessToken: string): Promise<number> {
  const response = await fetch(`${issuer}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${accessToken}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
  await response.body?.cancel();
  return response.status;
}

/** After a revocation: the refresh token gets invalid_grant and the co-hosted server refuses the access token. */
export async function assertTokensStopped(issuer: string, clientId: string, tokens: AppTokens): Promise<void> {
  const refreshed = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId }),
  });
  assert.equal(refreshed.status, 400);
  assert.equal(((await refreshed.json()) as { error: string }).error, 'invalid_grant');
  assert.equal(await toolsListStatus(issuer, tokens.access_token), 401, 'the access token is refused at the co-hosted server');
}
