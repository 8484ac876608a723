/**
 * Peer 1: the MCP TypeScript SDK's authorization server — `mcpAuthRouter` (Express) with the
 * SDK's own demo in-memory provider. The demo answers the refresh_token grant with "not
 * implemented", so the one method is filled in here the way the demo issues codes and tokens:
 * opaque random UUIDs in in-memory Maps, the old refresh token deleted and a new one issued at
 * every use (rotation, as our server and oidc-provider do). Nothing is durable and nothing is
 * signed. The token and authorization endpoints' per-address rate limits are turned off (all
 * load comes from one address); everything else is the router's default. For the flows bench the
 * demo's authorize (which approves at once, with no person) is used as it is, and its code
 * exchange is given a refresh token like the other servers issue.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { DemoInMemoryAuthProvider } from '@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js';
import { mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { InvalidGrantError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { announce, chains, flowsWanted } from './child.js';

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

  /**
   * The demo's code exchange issues no refresh token; ours and oidc-provider do, so the flows
   * bench adds one in the same way (the demo's own exchange runs unchanged first).
   */
  override async exchangeAuthorizationCode(
    client: OAuthClientInformationFull,
    code: string,
    verifier?: string,
    redirectUri?: string,
    resource?: URL,
  ): Promise<OAuthTokens> {
    const tokens = await super.exchangeAuthorizationCode(client, code, verifier);
    return { ...tokens, refresh_token: this.issueRefreshToken({ clientId: client.client_id, scopes: tokens.scope ? tokens.scope.split(' ') : [], resource }) };
  }

  override async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string, scopes?: string[], resource?: URL): Promise<OAuthTokens> {
    const record = this.refreshTokens.get(refreshToken);
    if (!record || record.clientId !== client.client_id) throw new InvalidGrantError('Invalid refresh token');
    this.refreshTokens.delete(refreshToken);
    const granted = scopes && scopes.length > 0 ? scopes.filter((s) => record.scopes.includes(s)) : record.scopes;
    const accessToken = randomUUID();
    const expiresIn = 3600;
    this.accessTokens.set(accessToken, {
      clientId: client.client_id,
      scopes: granted,
      expiresAt: Date.now() + expiresIn * 1000,
      resource: resource ?? record.resource,
    });
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
app.use(
  mcpAuthRouter({
    provider,
    issuerUrl: new URL('http://127.0.0.1'),
    scopesSupported: ['mcp:tools'],
    tokenOptions: { rateLimit: false },
    authorizationOptions: { rateLimit: false },
  }),
);
const listener: Server = app.listen(0, '127.0.0.1');
await new Promise<void>((resolve) => listener.once('listening', resolve));
// The demo's authorize approves at once for a made-up user: a flow needs no person, so no cookies.
const flow = flowsWanted()
  ? { authorizePath: '/authorize', redirectUri: 'http://127.0.0.1:9/cb', scope: 'mcp:tools', resource: resource.href, cookies: [] }
  : undefined;
announce({ port: (listener.address() as AddressInfo).port, clientId, refreshTokens, flow }, () => {
  listener.closeAllConnections();
  listener.close();
});
