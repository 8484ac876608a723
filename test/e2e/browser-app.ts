/**
 * An application a person approves in the browser tests: its loopback callback, which keeps the
 * query of every redirect it receives, and its registration at the server with the authorization
 * URL (PKCE, `state`, the demo's scope and resource) that starts the person's approval.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
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
    body: JSON.stringify({ client_name: 'E2E Notes', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'] }),
  });
  assert.equal(registration.status, 201, await registration.clone().text());
  const client = (await registration.json()) as { client_id: string };
  const { verifier, challenge } = pkcePair();
  const authorize = new URL(`${issuer}/authorize`);
  const params = { response_type: 'code', client_id: client.client_id, redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: 'S256', state: 'st', scope: 'mcp:tools', resource: `${issuer}/mcp` };
  for (const [key, value] of Object.entries(params)) authorize.searchParams.set(key, value);
  return { client, verifier, authorize };
}
