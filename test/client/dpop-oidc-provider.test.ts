/**
 * DPoP against a real authorization server: node-oidc-provider (OpenID Certified) with its DPoP
 * feature on and nonces required, issuing JWT access tokens for a resource by the client
 * credentials grant. ContextClient must come back with a token of type DPoP whose `cnf.jkt` is the
 * thumbprint of the key it keeps with the grant, having answered the provider's use_dpop_nonce.
 * The resource here only says where its authorization server is and that it wants DPoP-bound
 * tokens, and checks what it is sent with core's DpopProofVerifier.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { decodeJwt, exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';
import { DpopProofVerifier, jwkThumbprint } from '../../src/core/dpop.js';
import { ContextClient } from '../../src/client/session.js';
import { MemoryTokenStore } from '../../src/client/token-store.js';
import { serveHandler, type ServedApp } from './setup.js';

const CLIENT_ID = 'robot';
const CLIENT_SECRET = 'a-robot-secret-for-the-test-provider';

describe('DPoP with node-oidc-provider (client credentials, nonces required)', () => {
  let providerServer: http.Server;
  let issuer: string;
  let resource: ServedApp;
  let resourceUrl: string;
  /** What the resource saw: the scheme and the proof's key thumbprint. */
  const seen: Array<{ scheme: string; jkt?: string; cnfJkt?: string }> = [];
  /** What the provider answered at its token endpoint. */
  const tokenAnswers: Array<{ status: number; nonceAsked: boolean }> = [];

  before(async () => {
    // The resource first: the provider's resource indicator names it.
    const verifier = new DpopProofVerifier();
    resource = await serveHandler((request) => {
      const url = new URL(request.url);
      const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
        new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
      if (url.pathname === '/.well-known/oauth-protected-resource/mcp') {
        return json({ resource: resourceUrl, authorization_servers: [issuer], dpop_bound_access_tokens_required: true });
      }
      const authorization = request.headers.get('authorization');
      if (!authorization) {
        return json({}, 401, { 'www-authenticate': `DPoP algs="ES256", resource_metadata="${url.origin}/.well-known/oauth-protected-resource/mcp"` });
      }
      const [scheme, token] = authorization.split(' ') as [string, string];
      const checked = verifier.check({
        proof: request.headers.get('dpop') ?? '',
        method: request.method,
        url: request.url,
        now: Math.floor(Date.now() / 1000),
        accessToken: token,
      });
      const cnfJkt = (decodeJwt(token).cnf as { jkt?: string } | undefined)?.jkt;
      seen.push({ scheme, ...(checked.ok ? { jkt: checked.proof.jkt } : {}), ...(cnfJkt ? { cnfJkt } : {}) });
      if (scheme !== 'DPoP' || !checked.ok || checked.proof.jkt !== cnfJkt) return json({}, 401, { 'www-authenticate': 'DPoP error="invalid_token"' });
      return json({ ok: true });
    });
    resourceUrl = `${resource.origin}/mcp`;

    providerServer = http.createServer();
    await new Promise<void>((resolve) => providerServer.listen(0, '127.0.0.1', resolve));
    issuer = `http://127.0.0.1:${(providerServer.address() as AddressInfo).port}`;
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const provider = new Provider(issuer, {
      clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, grant_types: ['client_credentials'], response_types: [], redirect_uris: [] }],
      jwks: { keys: [{ ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig', kid: 'test-key' }] },
      scopes: ['mcp'],
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        dPoP: { enabled: true, nonceSecret: randomBytes(32), requireNonce: () => true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => resourceUrl,
          useGrantedResource: () => true,
          getResourceServerInfo: () => ({ scope: 'mcp', audience: resourceUrl, accessTokenFormat: 'jwt' as const, jwt: { sign: { alg: 'RS256' } } }),
        },
      },
    });
    const callback = provider.callback();
    providerServer.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.url?.startsWith('/token')) {
        res.on('finish', () => tokenAnswers.push({ status: res.statusCode, nonceAsked: res.getHeader('dpop-nonce') !== undefined && res.statusCode === 400 }));
      }
      callback(req, res);
    });
  });

  after(async () => {
    providerServer.closeAllConnections();
    await new Promise<void>((resolve) => providerServer.close(() => resolve()));
    await resource.close();
  });

  it('gets a DPoP-bound token whose cnf.jkt is the thumbprint of the key kept with the grant, and presents it with proofs', async () => {
    const client = new ContextClient({
      serverUrl: resourceUrl,
      store: new MemoryTokenStore(),
      grantType: 'client_credentials',
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      scope: 'mcp',
    });
    const response = await client.fetch(resourceUrl, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    assert.equal(response.status, 200, JSON.stringify(seen));

    const grant = (await client.grant())!;
    assert.equal(grant.tokenType, 'DPoP');
    const jkt = jwkThumbprint(grant.dpopKey!.publicJwk as Record<string, unknown>);
    const claims = decodeJwt(grant.accessToken);
    assert.deepEqual(claims.cnf, { jkt });
    assert.equal(claims.aud, resourceUrl);
    // The provider asked for a nonce first; the client answered it once, and got the token.
    assert.deepEqual(
      tokenAnswers.map((a) => a.status),
      [400, 200],
    );
    assert.equal(tokenAnswers[0]!.nonceAsked, true);
    assert.deepEqual(seen.at(-1), { scheme: 'DPoP', jkt, cnfJkt: jkt });
  });
});
