/**
 * checkContextServerUrl tells a wrong URL apart from a context server's: nothing there (404), an
 * authorization server's issuer, endpoint or metadata, a server that answers otherwise; and takes
 * a context server (a 401, or a JSON-RPC answer to a client it lets in) or a server error for
 * what they are, not for a wrong URL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { checkContextServerUrl } from '../../src/client/server-url.js';
import { clientError, serveHandler, startContextServer, type ContextServer, type ServedApp } from './setup.js';

describe('checkContextServerUrl', () => {
  let server: ContextServer;
  let other: ServedApp;
  before(async () => {
    server = await startContextServer();
    other = await serveHandler((request) => {
      const path = new URL(request.url).pathname;
      if (path === '/open')
        return Response.json({
          jsonrpc: '2.0',
          id: 0,
          result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'open', version: '1' } },
        });
      if (path === '/broken') return new Response('oops', { status: 500 });
      return new Response('<h1>Welcome</h1>', { headers: { 'content-type': 'text/html' } });
    });
  });
  after(async () => {
    await server.close();
    await other.close();
  });

  const wrong = async (url: string, message: RegExp) => clientError('not_a_context_server', message)(await checkContextServerUrl(url));

  it('a context server that asks for a token, or lets the client in: not a wrong URL', async () => {
    assert.equal(await checkContextServerUrl(server.serverUrl), undefined);
    assert.equal(await checkContextServerUrl(`${other.origin}/open`), undefined);
  });

  it('a server error says nothing of the URL', async () => {
    assert.equal(await checkContextServerUrl(`${other.origin}/broken`), undefined);
  });

  it('an authorization server’s issuer, endpoint or metadata: names it, and the context server its origin names', async () => {
    const here = `give the context server's URL instead, here ${server.serverUrl}`;
    await wrong(server.issuer, new RegExp(`is the authorization server ${server.issuer} \\(its issuer\\).*${here}`));
    await wrong(`${server.issuer}/register`, /\(its registration_endpoint\)/);
    await wrong(`${server.issuer}/.well-known/oauth-authorization-server`, /\(its metadata\)/);
  });

  it('nothing there (404), and a server that answers but not as a context server', async () => {
    await wrong(
      `${server.issuer}/mpc`,
      new RegExp(
        `^nothing at ${server.issuer}/mpc \\(404\\): is the path right\\? Context servers usually end in /mcp; the context server here is ${server.serverUrl}$`,
      ),
    );
    await wrong(
      `${other.origin}/mcp`,
      /is not a context server: it answered an MCP request with HTTP 200 \(text\/html\), not with a 401 asking for a token nor with JSON-RPC$/,
    );
  });
});
