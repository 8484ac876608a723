/**
 * The MCP conformance suite's token audience scenario for servers, not in a release yet:
 * `auth-token-audience-validation` of https://github.com/modelcontextprotocol/conformance/pull/386
 * (src/scenarios/server/auth-token-audience.ts at commit
 * 2ce002402c5bc58a8f08ffcb7891af32e443ddb0). The scenario's signing authorization server (RS256,
 * kid `mcp-conformance-mock-as`, keys at `/.well-known/jwks.json`) mints the tokens; the server is
 * the official MCP SDK behind our guard trusting that issuer, its own URL the audience. Each check
 * sends `initialize` with one token.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { generateKeyPair, SignJWT } from 'jose';
import { startProtectedMcpServer, type ProtectedMcpServer } from './protected-mcp-server.js';
import { startSigningAuthorizationServer, type SigningAuthorizationServer } from './signing-authorization-server.js';

const KID = 'mcp-conformance-mock-as';

describe('upcoming conformance: auth-token-audience-validation against our guard', { timeout: 300_000 }, () => {
  let as: SigningAuthorizationServer;
  let server: ProtectedMcpServer;

  before(async () => {
    as = await startSigningAuthorizationServer({ alg: 'RS256', kid: KID, jwksPath: '/.well-known/jwks.json' });
    server = await startProtectedMcpServer({ authorizationServers: [as.issuer] });
  });

  after(async () => {
    await server?.close();
    await as?.close();
  });

  /** The scenario's tokens: RS256, typ at+jwt, client_id, sub, jti; `aud` only when given; expired ones issued an hour before. */
  function token(options: { audience?: string; expiresInSeconds?: number } = {}, key: CryptoKey = as.privateKey): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const expiresIn = options.expiresInSeconds ?? 300;
    const jwt = new SignJWT({ client_id: 'mcp-conformance-client' })
      .setProtectedHeader({ alg: 'RS256', kid: KID, typ: 'at+jwt' })
      .setIssuer(as.issuer)
      .setSubject('mcp-conformance-user')
      .setJti(randomUUID())
      .setIssuedAt(expiresIn < 0 ? now + expiresIn - 3600 : now)
      .setExpirationTime(now + expiresIn);
    if (options.audience !== undefined) jwt.setAudience(options.audience);
    return jwt.sign(key);
  }

  async function initialize(bearer?: string): Promise<number> {
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'conformance', version: '1.0.0' } },
      }),
    });
    await response.body?.cancel();
    return response.status;
  }

  it('auth-unauthenticated-request-rejected: 401 without a token', async () => {
    assert.equal(await initialize(), 401);
  });

  it('auth-valid-audience-token-accepted: 2xx for a token naming this server', async () => {
    const status = await initialize(await token({ audience: server.url }));
    assert.ok(status >= 200 && status < 300, String(status));
  });

  it('auth-wrong-audience-token-rejected: 401 for a token naming another resource', async () => {
    assert.equal(await initialize(await token({ audience: 'https://another-resource.example.com/mcp' })), 401);
  });

  it('auth-missing-audience-token-rejected: 401 for a token with no aud', async () => {
    assert.equal(await initialize(await token({})), 401);
  });

  it('auth-expired-token-rejected: 401 for a token that expired ten minutes ago', async () => {
    assert.equal(await initialize(await token({ audience: server.url, expiresInSeconds: -600 })), 401);
  });

  it('auth-untrusted-token-rejected: 401 for a token signed by a key the issuer does not publish', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    assert.equal(await initialize(await token({ audience: server.url }, privateKey)), 401);
  });
});
