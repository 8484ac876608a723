import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { AuthorizationServer } from 'oauth4webapi';
import { randomToken } from '../core/secrets.js';
import { canonicalizeResourceUri } from '../core/uri.js';
import { validateCallback } from './authorize.js';
import { discover } from './discovery.js';
import { ClientError } from './errors.js';
import { toStoredGrant } from './grants.js';
import { startLoopback, type LoopbackCallback } from './loopback.js';
import { presentAuthorizationUrl, type PresentOptions } from './open-browser.js';
import { ContextClient } from './session.js';
import { FileTokenStore } from './token-store.js';
import type { TokenStore } from './types.js';

export interface McpSdkProviderOptions extends PresentOptions {
  serverUrl: string;
  store?: TokenStore;
  clientName?: string;
  scope?: string;
  /** Fixed loopback port; default random. */
  redirectPort?: number;
  /** How long `waitForAuthorizationCode` waits. Default 5 minutes. */
  authorizationTimeoutMs?: number;
  fetch?: typeof fetch;
}

/**
 * An OAuthClientProvider for the official MCP SDK: its transports then use our discovery (handed
 * over as discovery state), our token store (shared with the CLI and `ContextClient`), our
 * loopback callback and browser handling, and our `state` check.
 *
 *   const provider = await McpSdkOAuthProvider.create({ serverUrl });
 *   const transport = new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider });
 *   try { await client.connect(transport) } catch (e) {
 *     if (!(e instanceof UnauthorizedError)) throw e;
 *     await transport.finishAuth(await provider.waitForAuthorizationCode());
 *     await client.connect(new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider }));
 *   }
 */
export class McpSdkOAuthProvider implements OAuthClientProvider {
  private verifier: string | undefined;
  private expectedState: string | undefined;
  private discovered: OAuthDiscoveryState | undefined;
  private issuer: string | undefined;
  private context: ContextClient | undefined;

  private constructor(
    private readonly options: McpSdkProviderOptions,
    private readonly serverUrl: string,
    private readonly store: TokenStore,
    private loopback: LoopbackCallback,
  ) {}

  /** Starts the loopback callback first, since the SDK asks for the redirect URL synchronously. */
  static async create(options: McpSdkProviderOptions): Promise<McpSdkOAuthProvider> {
    const loopback = await startLoopback({
      ...(options.redirectPort ? { port: options.redirectPort } : {}),
      timeoutMs: options.authorizationTimeoutMs,
    });
    return new McpSdkOAuthProvider(options, canonicalizeResourceUri(options.serverUrl), options.store ?? new FileTokenStore(), loopback);
  }

  get redirectUrl(): string {
    return this.loopback.redirectUri;
  }

  get clientMetadata(): OAuthClientMetadata {
    // application_type is OpenID Connect Registration's; the SDK's type does not name it but sends it on.
    const metadata = {
      client_name: this.options.clientName ?? 'context-auth',
      application_type: 'native',
      redirect_uris: [this.loopback.redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...(this.options.scope ? { scope: this.options.scope } : {}),
    };
    return metadata;
  }

  state(): string {
    this.expectedState = randomToken(24);
    return this.expectedState;
  }

  /** Our discovery, handed to the SDK so it does not repeat it. */
  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    if (!this.discovered) {
      const found = await discover(this.serverUrl, { ...(this.options.fetch ? { fetch: this.options.fetch } : {}), onStep: (m) => this.options.onProgress?.(m) });
      this.issuer = found.issuer;
      this.discovered = {
        authorizationServerUrl: found.issuer,
        authorizationServerMetadata: found.authorizationServer as unknown as NonNullable<OAuthDiscoveryState['authorizationServerMetadata']>,
        ...(found.resourceMetadata ? { resourceMetadata: found.resourceMetadata as unknown as NonNullable<OAuthDiscoveryState['resourceMetadata']> } : {}),
        ...(found.resourceMetadataUrl ? { resourceMetadataUrl: found.resourceMetadataUrl } : {}),
      };
    }
    return this.discovered;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovered = state;
    this.issuer = state.authorizationServerUrl;
  }

  private async currentIssuer(): Promise<string> {
    if (!this.issuer) await this.discoveryState();
    return this.issuer!;
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    const issuer = await this.currentIssuer();
    const client = await this.store.getClient(issuer);
    if (!client) return undefined;
    return {
      client_id: client.clientId,
      ...(client.clientSecret ? { client_secret: client.clientSecret } : {}),
      redirect_uris: client.redirectUris,
      token_endpoint_auth_method: client.tokenEndpointAuthMethod,
      issuer,
    } as OAuthClientInformationMixed;
  }

  async saveClientInformation(info: OAuthClientInformationMixed): Promise<void> {
    const issuer = (info as { issuer?: string }).issuer ?? (await this.currentIssuer());
    const method = (info as { token_endpoint_auth_method?: string }).token_endpoint_auth_method;
    await this.store.saveClient({
      issuer,
      clientId: info.client_id,
      ...(info.client_secret ? { clientSecret: info.client_secret } : {}),
      tokenEndpointAuthMethod: method === 'client_secret_basic' || method === 'client_secret_post' ? method : info.client_secret ? 'client_secret_basic' : 'none',
      redirectUris: (info as { redirect_uris?: string[] }).redirect_uris ?? [this.loopback.redirectUri],
      source: 'dynamic',
      createdAt: Math.floor(Date.now() / 1000),
    });
  }

  /**
   * The stored tokens for the authorization server in use (a grant from another is never handed
   * to the SDK). A grant due for a refresh is refreshed here, the way ContextClient does it: under
   * the store's lock for that grant, reading the store again inside it, so two providers or
   * processes sharing the credentials file present one refresh token once.
   */
  async tokens(): Promise<OAuthTokens | undefined> {
    const issuer = await this.currentIssuer();
    let grant = await this.store.getGrant(this.serverUrl, issuer);
    if (!grant) return undefined;
    const refresher = this.refresher();
    if (grant.refreshToken && refresher.expiresSoon(grant)) {
      try {
        grant = await refresher.refresh(grant);
      } catch (error) {
        // The grant is dead and forgotten: the SDK authorizes anew. Otherwise (the server is
        // unreachable, say) the SDK gets what is stored and its 401 handling takes over.
        if (error instanceof ClientError && error.code === 'login_required') return undefined;
        this.options.onProgress?.(`Could not refresh the token (${(error as Error).message})`);
      }
    }
    const expiresIn = grant.expiresAt === undefined ? undefined : Math.max(0, grant.expiresAt - Math.floor(Date.now() / 1000));
    return {
      access_token: grant.accessToken,
      token_type: 'Bearer',
      ...(expiresIn === undefined ? {} : { expires_in: expiresIn }),
      ...(grant.refreshToken ? { refresh_token: grant.refreshToken } : {}),
      ...(grant.scope ? { scope: grant.scope } : {}),
      issuer: grant.issuer,
    } as OAuthTokens;
  }

  /** What refreshes for this provider: a non-interactive ContextClient on the same store (same locks). */
  private refresher(): ContextClient {
    this.context ??= new ContextClient({
      serverUrl: this.serverUrl,
      store: this.store,
      interactive: false,
      ...(this.options.fetch ? { fetch: this.options.fetch } : {}),
      ...(this.options.onProgress ? { onProgress: this.options.onProgress } : {}),
    });
    return this.context;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    const issuer = (tokens as { issuer?: string }).issuer ?? (await this.currentIssuer());
    const previous = await this.store.getGrant(this.serverUrl, issuer);
    const discovered = await this.discoveryState();
    const resource = typeof discovered?.resourceMetadata?.resource === 'string' ? discovered.resourceMetadata.resource : undefined;
    const client = await this.store.getClient(issuer);
    await this.store.saveGrant(
      toStoredGrant(tokens, {
        serverUrl: this.serverUrl,
        issuer,
        resource,
        revision: resource ? 'B' : 'A',
        clientId: client?.clientId ?? previous?.clientId ?? '',
        now: Math.floor(Date.now() / 1000),
        refreshToken: previous?.refreshToken,
      }),
    );
  }

  redirectToAuthorization(url: URL): Promise<void> {
    return presentAuthorizationUrl(url, this.options);
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.verifier = codeVerifier;
  }

  codeVerifier(): string {
    if (!this.verifier) throw new ClientError('authorization_failed', 'no authorization is in progress');
    return this.verifier;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    if (scope === 'all' || scope === 'tokens') await this.store.deleteGrant(this.serverUrl, await this.currentIssuer());
    if (scope === 'all' || scope === 'client') await this.store.deleteClient(await this.currentIssuer());
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
    if (scope === 'all' || scope === 'discovery') this.discovered = undefined;
  }

  /**
   * Waits for the browser to come back to the loopback callback and returns the code, after the
   * checks ContextClient makes too (validateCallback: `iss`, `state`, `error`).
   */
  async waitForAuthorizationCode(): Promise<string> {
    const params = await this.loopback.wait();
    // The callback server closes after one answer; listen again on the same port (the SDK keeps
    // using the same redirect URL) for a later step-up.
    this.loopback = await startLoopback({ port: Number(new URL(this.loopback.redirectUri).port), timeoutMs: this.options.authorizationTimeoutMs });
    const issuer = await this.currentIssuer();
    // The SDK may have handed over discovery state without metadata: then only the issuer is known.
    const metadata = (this.discovered?.authorizationServerMetadata ?? { issuer }) as unknown as AuthorizationServer;
    const client = await this.store.getClient(issuer);
    if (!client) throw new ClientError('authorization_failed', `no client is registered at ${issuer}`);
    const code = validateCallback(metadata, client.clientId, params, this.expectedState).get('code');
    if (!code) throw new ClientError('authorization_failed', 'the authorization response has no code');
    return code;
  }

  /** Stops the loopback callback server. */
  close(): Promise<void> {
    return this.loopback.close();
  }
}
