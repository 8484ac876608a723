/**
 * The floor under every server in the refresh table: Node's own HTTP server (`node:http`, no
 * framework) reading the same form POST and answering a fixed JSON body the size of ours, with
 * the same cache headers (ours adds its CORS headers, about 250 bytes). Nothing is looked up,
 * rotated, signed or stored. What a server costs per grant above this row is its own work; what
 * this row costs, no Node server can avoid.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { announce, chains } from './child.js';

const refreshToken = randomBytes(32).toString('base64url');
// An ES256 JWT access token of ours is about 520 characters; the body otherwise as ours.
const body = JSON.stringify({
  access_token: randomBytes(390).toString('base64url'),
  token_type: 'Bearer',
  expires_in: 600,
  refresh_token: refreshToken,
  scope: 'mcp:tools',
});
const headers = { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', Pragma: 'no-cache', 'Content-Length': String(Buffer.byteLength(body)) };

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const form = new URLSearchParams(Buffer.concat(chunks).toString());
    if (request.method !== 'POST' || request.url !== '/token' || form.get('grant_type') !== 'refresh_token' || !form.get('refresh_token')) {
      response.writeHead(400, { 'Content-Type': 'application/json' }).end('{"error":"invalid_request"}');
      return;
    }
    response.writeHead(200, headers).end(body);
  });
});
server.listen(0, '127.0.0.1');
await new Promise<void>((resolve) => server.once('listening', resolve));
announce({ port: (server.address() as AddressInfo).port, clientId: 'floor', refreshTokens: Array.from({ length: chains() }, () => refreshToken) }, () => {
  server.closeAllConnections();
  server.close();
});
