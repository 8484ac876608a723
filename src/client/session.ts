import * as oauth from 'oauth4webapi';
import { canonicalizeResourceUri } from '../core/uri.js';
import { authorizedFetch, type AuthFetch, type FetchSession } from './auth-fetch.js';
import { planAuthorization, redeemCallback } from './authorize.js';
import { discover, type Discovery } from './discovery.js';
import { ClientError } from './errors.js';
import { toStoredGrant, type GrantContext, type TokenSet } from './grants.js';
import { startLoopback } from './loopback.js';
import { presentAuthorizationUrl, type PresentOptions } from './open-browser.js';
import { asOAuthClient, isInvalidGrant, requestOptions, tokenError } from './oauth-requests.js';
import { obtainClient, preferredSecretMethod, type ClientRegistrationOptions } from './registration.js';
import { FileTokenStore } from './token-store.js';
import type { StoredClient, StoredGrant, TokenStore } from './types.js';

export interface ContextClientOptions extends ClientRegistrationOptions, PresentOptions {
  /** The context server, e.g. https://mcp.example.com/mcp. */
  serverUrl: string;
  /** Where registrations and tokens live. Default: a 0600 file in the user's config folder. */
  store?: TokenStore;
  /** 'authorization_code' (a person, through the browser; default) or 'client_credentials' (a program). */
  grantType?: 'authorization_code' | 'client_credentials';
  /** Scope to ask for; default: the 401 challenge's, else the server's scopes_supported. */
  scope?: string;
  /** Fixed loopback callback port; default: the one registered earlier, else a random one. */
  redirectPort?: number;
  /** How long to wait for the person to finish in the browser. Default 5 minutes. */
  authorizationTimeoutMs?: number;
  /** Refresh this many seconds before the access token expires. Default 60. */
  refreshLeewaySeconds?: number;
  /** When false, a missing or dead grant is an error (login_required) instead of a browser flow. */
  interactive?: boolean;
  chooseAuthorizationServers?: (servers: string[]) => string[] | Promise<string[]>;
}

/**
 * A connection to one context server: discovery, registration, the browser flow, token storage
 * and refresh, and `fetch`, which does all of it on demand. One instance per server.
 */
export class ContextClient implements FetchSession {
  readonly serverUrl: string;
  readonly store: TokenStore;
  private readonly options: ContextClientOptions;
  private readonly fetchImpl: typeof fetch;
  private readonly now: () => number;
  private discovery: Promise<Discovery> | undefined;
  /** `fetch` for the context server, authorizing as needed (auth-fetch.ts). */
  readonly fetch: AuthFetch;

  constructor(options: ContextClientOptions) {
    this.options = options;
    try {
      this.serverUrl = canonicalizeResourceUri(options.serverUrl);
    } catch (error) {
      throw new ClientError('discovery_failed', `not a context server URL: ${options.serverUrl} (${(error as Error).message})`);
    }
    this.store = options.store ?? new FileTokenStore();
    this.fetchImpl = options.fetch ?? fetch;
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000));
    this.fetch = authorizedFetch(this, { fetch: this.fetchImpl, interactive: options.interactive !== false, onProgress: (message) => this.progress(message) });
  }

  private progress(message: string): void {
    this.options.onProgress?.(message);
  }

  /** Discovery, done once per instance unless a fresh 401 challenge asks for it again. */
  async discover(wwwAuthenticate?: string | null): Promise<Discovery> {
    if (!this.discovery || wwwAuthenticate !== undefined) {
      this.progress(`Discovering the authorization server for ${this.serverUrl}`);
      this.discovery = discover(this.serverUrl, {
        fetch: this.fetchImpl,
        ...(wwwAuthenticate !== undefined ? { wwwAuthenticate } : {}),
        ...(this.options.chooseAuthorizationServers ? { chooseAuthorizationServers: this.options.chooseAuthorizationServers } : {}),
        onStep: (message) => this.progress(`  ${message}`),
      });
      this.discovery.catch(() => (this.discovery = undefined));
    }
    return this.discovery;
  }

  /** The stored grant for this server, if any. */
  grant(): Promise<StoredGrant | undefined> {
    return this.store.getGrant(this.serverUrl);
  }

  /**
   * Runs the whole authorization: discovery, a client, the browser (or the client credentials
   * grant for programs), the code exchange, and stores the tokens.
   */
  async login(options: { scope?: string; wwwAuthenticate?: string | null } = {}): Promise<StoredGrant> {
    const discovery = await this.discover(options.wwwAuthenticate);
    if (this.options.grantType === 'client_credentials') return this.clientCredentials(discovery, options.scope);
    if (this.options.interactive === false) throw new ClientError('login_required', `no valid authorization for ${this.serverUrl}; log in first`);

    const cached = this.options.clientId ? undefined : await this.store.getClient(discovery.issuer);
    const port = this.options.redirectPort ?? registeredLoopbackPort(cached);
    const loopback = await startLoopback({ ...(port ? { port } : {}), timeoutMs: this.options.authorizationTimeoutMs }).catch(async (error: unknown) => {
      // The port we registered with is taken: RFC 8252 servers accept any loopback port.
      if (port !== undefined && this.options.redirectPort === undefined) return startLoopback({ timeoutMs: this.options.authorizationTimeoutMs });
      throw error;
    });
    try {
      const client = await this.registeredClient(discovery, loopback.redirectUri);
      const scope = options.scope ?? this.options.scope ?? discovery.challengeScope ?? discovery.scopesSupported?.join(' ');
      const plan = await planAuthorization(discovery, client, loopback.redirectUri, scope || undefined);
      await presentAuthorizationUrl(plan.url, this.options);
      this.progress('Waiting for the browser…');
      const callback = await loopback.wait();
      this.progress('Exchanging the code for tokens');
      const tokens = await redeemCallback(discovery, client, plan, callback, this.fetchImpl);
      return await this.saveTokens(discovery, tokens, { clientId: client.clientId, requestedScope: scope });
    } finally {
      await loopback.close();
    }
  }

  private async registeredClient(discovery: Discovery, redirectUri: string): Promise<StoredClient> {
    const before = this.options.clientId ? undefined : await this.store.getClient(discovery.issuer);
    if (!before && !this.options.clientId && discovery.authorizationServer.registration_endpoint) this.progress(`Registering a client at ${discovery.issuer}`);
    return obtainClient(discovery, redirectUri, this.store, { ...this.options, fetch: this.fetchImpl, now: this.now });
  }

  private async clientCredentials(discovery: Discovery, scope: string | undefined): Promise<StoredGrant> {
    if (!this.options.clientId || !this.options.clientSecret) {
      throw new ClientError('registration_unavailable', 'the client credentials grant needs a client id and secret');
    }
    const client = await obtainClient(discovery, 'urn:ietf:wg:oauth:2.0:oob', this.store, { ...this.options, fetch: this.fetchImpl, now: this.now });
    const { client: oauthClient, auth } = asOAuthClient(client);
    const as = discovery.authorizationServer;
    const requested = scope ?? this.options.scope;
    const parameters: Record<string, string> = { ...(requested ? { scope: requested } : {}), ...(discovery.resource ? { resource: discovery.resource } : {}) };
    try {
      const response = await oauth.clientCredentialsGrantRequest(as, oauthClient, auth, parameters, requestOptions(this.fetchImpl, as.token_endpoint ?? discovery.issuer));
      const tokens = await oauth.processClientCredentialsResponse(as, oauthClient, response);
      return await this.saveTokens(discovery, tokens, { clientId: client.clientId, requestedScope: requested });
    } catch (error) {
      throw tokenError(error, 'the client credentials grant failed');
    }
  }

  private async saveTokens(discovery: Discovery, tokens: TokenSet, kept: Pick<GrantContext, 'clientId' | 'requestedScope' | 'refreshToken'>): Promise<StoredGrant> {
    const grant = toStoredGrant(tokens, { serverUrl: this.serverUrl, issuer: discovery.issuer, resource: discovery.resource, revision: discovery.revision, now: this.now(), ...kept });
    await this.store.saveGrant(grant);
    return grant;
  }

  /** Whether the grant is due for a refresh (within the leeway of its expiry). */
  expiresSoon(grant: StoredGrant): boolean {
    return grant.expiresAt !== undefined && grant.expiresAt - (this.options.refreshLeewaySeconds ?? 60) <= this.now();
  }

  /**
   * Refreshes the grant, one refresh at a time per grant across requests and processes. Inside
   * the lock the store is read again: if another request or process refreshed meanwhile, its
   * result is used instead of spending the (now rotated) refresh token again. The new refresh
   * token is stored before the new access token is handed out.
   */
  async refresh(stale: StoredGrant): Promise<StoredGrant> {
    return this.store.withLock(`grant ${stale.serverUrl} ${stale.issuer}`, async () => {
      const current = await this.store.getGrant(stale.serverUrl, stale.issuer);
      if (!current) throw new ClientError('login_required', `no stored authorization for ${this.serverUrl}`);
      if (current.accessToken !== stale.accessToken && !this.expiresSoon(current)) return current;
      if (!current.refreshToken) {
        if (this.options.grantType === 'client_credentials') return this.login();
        throw new ClientError('login_required', `the access token for ${this.serverUrl} expired and there is no refresh token`);
      }
      const discovery = await this.discover();
      const { client: oauthClient, auth } = asOAuthClient(await this.clientFor(current, discovery));
      const as = discovery.authorizationServer;
      try {
        const response = await oauth.refreshTokenGrantRequest(
          as,
          oauthClient,
          auth,
          current.refreshToken,
          requestOptions(this.fetchImpl, as.token_endpoint ?? discovery.issuer, current.resource ? { resource: current.resource } : undefined),
        );
        const tokens = await oauth.processRefreshTokenResponse(as, oauthClient, response);
        return await this.saveTokens(discovery, tokens, { clientId: current.clientId, requestedScope: current.scope, refreshToken: current.refreshToken });
      } catch (error) {
        const failure = tokenError(error, 'the refresh failed');
        if (isInvalidGrant(failure)) {
          // The grant is dead (expired, revoked, or a reuse was detected): forget it, start over.
          await this.store.deleteGrant(current.serverUrl, current.issuer);
          throw new ClientError('login_required', `the authorization for ${this.serverUrl} ended (${failure.message}); log in again`, { cause: failure });
        }
        throw failure;
      }
    });
  }

  /**
   * The client a stored grant belongs to: the one given in options, else the registration we
   * keep for its authorization server, else (a client id given once and not kept) a public client
   * with the grant's client id.
   */
  private async clientFor(grant: StoredGrant, discovery: Discovery): Promise<StoredClient> {
    if (this.options.clientId === grant.clientId) {
      return {
        issuer: grant.issuer,
        clientId: grant.clientId,
        ...(this.options.clientSecret ? { clientSecret: this.options.clientSecret } : {}),
        tokenEndpointAuthMethod: this.options.clientSecret ? preferredSecretMethod(discovery) : 'none',
        redirectUris: [],
        source: 'options',
        createdAt: this.now(),
      };
    }
    const stored = await this.store.getClient(grant.issuer);
    if (stored?.clientId === grant.clientId) return stored;
    return { issuer: grant.issuer, clientId: grant.clientId, tokenEndpointAuthMethod: 'none', redirectUris: [], source: 'options', createdAt: this.now() };
  }

  /** A usable access token: stored, refreshed ahead of expiry, or (interactively) a new login. */
  async accessToken(): Promise<string> {
    let grant = await this.grant();
    if (grant && this.expiresSoon(grant)) grant = await this.refreshOrLogin(grant);
    if (!grant) grant = await this.login();
    return grant.accessToken;
  }

  /** A refreshed grant, else (when the grant is dead and a person may be asked) a new login. */
  async refreshOrLogin(grant: StoredGrant): Promise<StoredGrant> {
    try {
      return await this.refresh(grant);
    } catch (error) {
      if (error instanceof ClientError && error.code === 'login_required' && this.options.interactive !== false) return this.login();
      throw error;
    }
  }

  /**
   * Forgets the stored tokens for this server, after asking the authorization server to revoke
   * the refresh token (RFC 7009) where it offers revocation. The revocation is best effort: the
   * tokens are forgotten even when the server cannot be reached.
   */
  async logout(): Promise<number> {
    const grant = await this.grant();
    if (grant?.refreshToken) {
      try {
        const discovery = await this.discover();
        if (discovery.authorizationServer.revocation_endpoint) {
          const { client: oauthClient, auth } = asOAuthClient(await this.clientFor(grant, discovery));
          const as = discovery.authorizationServer;
          await oauth.revocationRequest(as, oauthClient, auth, grant.refreshToken, requestOptions(this.fetchImpl, as.revocation_endpoint!, { token_type_hint: 'refresh_token' }));
        }
      } catch (error) {
        this.progress(`Could not revoke the token at the authorization server (${(error as Error).message}); forgetting it anyway`);
      }
    }
    return this.store.deleteGrant(this.serverUrl);
  }
}

/** The port of a loopback redirect URI registered earlier, so the same registration keeps working. */
function registeredLoopbackPort(client: StoredClient | undefined): number | undefined {
  const uri = client?.redirectUris.find((candidate) => candidate.startsWith('http://127.0.0.1:'));
  if (!uri) return undefined;
  const port = Number(new URL(uri).port);
  return Number.isInteger(port) && port > 0 ? port : undefined;
}

/**
 * `fetch` for one context server, authorizing as needed (auth-fetch.ts). It lives here, beside the
 * ContextClient it makes, so that auth-fetch.ts and this file do not import each other.
 */
export function createAuthFetch(options: ContextClientOptions): typeof fetch {
  return new ContextClient(options).fetch as typeof fetch;
}
