/**
 * Peer 2: node-oidc-provider (OpenID Certified) with its default in-memory adapter, resource
 * indicators on and JWT access tokens (RS256, a 2048-bit key) for our resource, refresh tokens
 * rotated at every use. No `openid` scope is granted, so a refresh issues an access token and a
 * refresh token and no ID token, as our server and the SDK do. The grant and its refresh tokens
 * are made through the provider's own models before it listens.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';
import { announce, chains } from './child.js';

const RESOURCE = 'http://127.0.0.1/mcp';
const clientId = 'bench-client';
const accountId = 'bench-user';

const server = http.createServer();
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = (server.address() as AddressInfo).port;
const issuer = `http://127.0.0.1:${port}`;

const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const provider = new Provider(issuer, {
  clients: [{ client_id: clientId, token_endpoint_auth_method: 'none', redirect_uris: ['http://127.0.0.1:9/cb'], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] }],
  jwks: { keys: [{ ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig', kid: 'bench-key' }] },
  cookies: { keys: ['bench cookie key, not a secret'] },
  scopes: ['offline_access', 'mcp:tools'],
  features: {
    devInteractions: { enabled: false },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => RESOURCE,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({ scope: 'mcp:tools', audience: RESOURCE, accessTokenFormat: 'jwt', accessTokenTTL: 3600 }),
    },
  },
  rotateRefreshToken: true,
  ttl: { Grant: 14 * 24 * 3600, RefreshToken: 14 * 24 * 3600, AccessToken: 3600 },
  findAccount: async (_ctx, id) => (id === accountId ? { accountId: id, claims: async () => ({ sub: id }) } : undefined),
});
// Silence the per-request "server_error" logging paths; errors still fail the bench (non-200).
provider.on('server_error', (_ctx, error) => console.error(error));

const client = await provider.Client.find(clientId);
if (!client) throw new Error('client not registered');
const refreshTokens: string[] = [];
for (let chain = 0; chain < chains(); chain++) {
  const grant = new provider.Grant({ accountId, clientId });
  grant.addResourceScope(RESOURCE, 'mcp:tools');
  const grantId = await grant.save();
  const refreshToken = new provider.RefreshToken({ client, accountId, grantId, scope: 'mcp:tools', resource: RESOURCE, gty: 'authorization_code' });
  refreshTokens.push(await refreshToken.save());
}

server.on('request', provider.callback());
announce({ port, clientId, refreshTokens }, () => {
  server.closeAllConnections();
  server.close();
});
