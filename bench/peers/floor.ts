/**
 * The floor under every server in the refresh and machine-grants tables: Node's own HTTP server
 * (`node:http`, no framework) reading the same form POST and answering a fixed JSON body the size
 * of ours (a client_credentials answer has no refresh token), with
 * the same cache headers (ours adds its CORS headers, about 250 bytes). Nothing is looked up,
 * rotated, signed or stored. What a server costs per grant above this row is its own work; what
 * this row costs, no Node server can avoid.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { announce, chains, machineJwk, type MachineSetup } from './child.js';

const refreshToken = randomBytes(32).toString('base64url');
// An ES256 JWT access token of ours is about 520 characters; the body otherwise as ours.
const body = JSON.stringify({
  access_token: randomBytes(390).toString('base64url'),
  token_type: 'Bearer',
  expires_in: 600,
  refresh_token: refreshToken,
  scope: 'mcp:tools',
});
const machineBody = JSON.stringify({ ...(JSON.parse(body) as Record<string, unknown>), refresh_token: undefined });
const headers = { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', Pragma: 'no-cache', 'Content-Length': String(Buffer.byteLength(body)) };
const machineHeaders = { ...headers, 'Content-Length': String(Buffer.byteLength(machineBody)) };

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const form = new URLSearchParams(Buffer.concat(chunks).toString());
    const grantType = form.get('grant_type');
    if (
      request.method !== 'POST' ||
      request.url !== '/token' ||
      !(grantType === 'client_credentials' || (grantType === 'refresh_token' && form.get('refresh_token')))
    ) {
      response.writeHead(400, { 'Content-Type': 'application/json' }).end('{"error":"invalid_request"}');
      return;
    }
    if (grantType === 'refresh_token') response.writeHead(200, headers).end(body);
    else response.writeHead(200, machineHeaders).end(machineBody);
  });
});
server.listen(0, '127.0.0.1');
await new Promise<void>((resolve) => server.once('listening', resolve));
// Credentials nobody checks, so the machine-grants bench sends the floor the requests it sends the others.
const machine: MachineSetup | undefined = machineJwk() && {
  audience: 'floor',
  resource: 'http://127.0.0.1/mcp',
  scope: 'mcp:tools',
  secretClient: { clientId: 'floor', secret: 'floor' },
  keyClientId: 'floor',
};
announce(
  { port: (server.address() as AddressInfo).port, clientId: 'floor', refreshTokens: Array.from({ length: chains() }, () => refreshToken), machine },
  () => {
    server.closeAllConnections();
    server.close();
  },
);
