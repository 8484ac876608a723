/**
 * Peer 1: the MCP TypeScript SDK's authorization server — `mcpAuthRouter` (Express) with the
 * SDK's own demo in-memory provider. The demo answers the refresh_token grant with "not
 * implemented", so the one method is filled in here the way the demo issues codes and tokens:
 * opaque random UUIDs in in-memory Maps, the old refresh token deleted and a new one issued at
 * every use (rotation, as our server and oidc-provider do). Nothing is durable and nothing is
 * signed. The token endpoint's per-address rate limit is turned off (all load comes from one
 * address); everything else is the router's default.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { DemoInMemoryAuthProvider } from '@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js';
import { mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { InvalidGrantError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { announce, chains } from './child.js';

interface RefreshRecord {
  clientId: string;
  scopes: string[];
  resource?: URL;
}

class RefreshingProvider extends DemoInMemoryAuthProvider {
  readonly refreshTokens = new Map<string, RefreshRecord>();
  /** The demo's own token Map is private; issued access tokens are kept the same way here. */
  readonly accessTokens = new Map<string, RefreshRecord & { expiresAt: number }>();

  issueRefreshToken(record: RefreshRecord): string {
    const token = randomUUID();
    this.refreshTokens.set(token, record);
    return token;
  }

  override async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string, scopes?: string[], resource?: URL): Promise<OAuthTokens> {
    const record = this.refreshTokens.get(refreshToken);
    if (!record || record.clientId !== client.client_id) throw new InvalidGrantError('Invalid refresh token');
    this.refreshTokens.delete(refreshToken);
    const granted = scopes && scopes.length > 0 ? scopes.filter((s) => record.scopes.includes(s)) : record.scopes;
    const accessToken = randomUUID();
    const expiresIn = 3600;
    this.accessTokens.set(accessToken, { clientId: client.client_id, scopes: granted, expiresAt: Date.now() + expiresIn * 1000, resource: resource ?? record.resource });
    return {
      access_token: accessToken,
      token_type: 'bearer',
      expires_in: expiresIn,
      scope: granted.join(' '),
      refresh_token: this.issueRefreshToken({ ...record, scopes: granted }),
    };
  }
}

const provider = new RefreshingProvider();
const clientId = 'bench-client';
await provider.clientsStore.registerClient({
  client_id: clientId,
  client_id_issued_at: Math.floor(Date.now() / 1000),
  redirect_uris: ['http://127.0.0.1:9/cb'],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  client_name: 'bench',
});
const resource = new URL('http://127.0.0.1/mcp');
const refreshTokens = Array.from({ length: chains() }, () => provider.issueRefreshToken({ clientId, scopes: ['mcp:tools'], resource }));

const app = express();
app.use(mcpAuthRouter({ provider, issuerUrl: new URL('http://127.0.0.1'), scopesSupported: ['mcp:tools'], tokenOptions: { rateLimit: false } }));
const listener: Server = app.listen(0, '127.0.0.1');
await new Promise<void>((resolve) => listener.once('listening', resolve));
announce({ port: (listener.address() as AddressInfo).port, clientId, refreshTokens }, () => {
  listener.closeAllConnections();
  listener.close();
});
