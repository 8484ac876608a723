import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { AuthorizationServer } from 'oauth4webapi';
import { randomToken } from '../core/secrets.js';
import { canonicalizeResourceUri } from '../core/uri.js';
import { validateCallback } from './authorize.js';
import { discover } from './discovery.js';
import { isDpopBound } from './dpop.js';
import { ClientError } from './errors.js';
import { grantLockName, PERSON, toStoredGrant } from './grants.js';
import { startLoopback, type LoopbackCallback } from './loopback.js';
import { presentAuthorizationUrl, type PresentOptions } from './open-browser.js';
import { applicationOf, DEFAULT_CLIENT_NAME } from './registration.js';
import { ContextClient } from './session.js';
import { FileTokenStore } from './token-store.js';
import type { GrantSelector, StoredGrant, TokenStore } from './types.js';

export interface McpSdkProviderOptions extends PresentOptions {
  serverUrl: string;
  store?: TokenStore;
  clientName?: string;
  /** What the registrations and tokens are filed under in a shared store: default `clientName` (as ContextClient's `applicationId`). */
  applicationId?: string;
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
/**
 * The longest the grant's lock is held for the SDK's own refresh (see tokens()) when the SDK gives
 * up without saying so (an error it throws): below the 30 s other holders wait for the lock.
 */
const SDK_REFRESH_HOLD_MS = 20_000;

export class McpSdkOAuthProvider implements OAuthClientProvider {
  private verifier: string | undefined;
  /** Set while the SDK's auth() runs: from its clientInformation() to its tokens() (see tokens()). */
  private inAuth = false;
  /** The grant's lock while the SDK refreshes with a refresh token we handed it; releases it. */
  private held: (() => void) | undefined;
  private expectedState: string | undefined;
  private discovered: OAuthDiscoveryState | undefined;
  private issuer: string | undefined;
  private context: ContextClient | undefined;

  private constructor(
    private readonly options: McpSdkProviderOptions,
    private readonly serverUrl: string,
    private readonly store: TokenStore,
    /** What this provider's registrations and tokens are filed under in the store. */
    readonly application: string,
    private loopback: LoopbackCallback,
  ) {}

  /** Starts the loopback callback first, since the SDK asks for the redirect URL synchronously. */
  static async create(options: McpSdkProviderOptions): Promise<McpSdkOAuthProvider> {
    const serverUrl = canonicalizeResourceUri(options.serverUrl);
    const application = applicationOf(options);
    const loopback = await startLoopback({
      ...(options.redirectPort ? { port: options.redirectPort } : {}),
      timeoutMs: options.authorizationTimeoutMs,
    });
    return new McpSdkOAuthProvider(options, serverUrl, options.store ?? new FileTokenStore(), application, loopback);
  }

  get redirectUrl(): string {
    return this.loopback.redirectUri;
  }

  get clientMetadata(): OAuthClientMetadata {
    // application_type is OpenID Connect Registration's; the SDK's type does not name it but sends it on.
    const metadata = {
      client_name: this.options.clientName ?? DEFAULT_CLIENT_NAME,
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
    // The SDK turns to a new authorization: no refresh of its follows in this auth() run.
    this.inAuth = false;
    this.release();
    this.expectedState = randomToken(24);
    this.loopback.expectState(this.expectedState);
    return this.expectedState;
  }

  /** Our discovery, handed to the SDK so it does not repeat it. */
  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    if (!this.discovered) {
      const found = await discover(this.serverUrl, {
        ...(this.options.fetch ? { fetch: this.options.fetch } : {}),
        onStep: (m) => this.options.onProgress?.(m),
      });
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
    // Only the SDK's auth() asks for this; its next tokens() call is the one before its refresh.
    this.inAuth = true;
    const issuer = await this.currentIssuer();
    const client = await this.store.getClient(this.application, issuer);
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
      application: this.application,
      issuer,
      clientId: info.client_id,
      ...(info.client_secret ? { clientSecret: info.client_secret } : {}),
      tokenEndpointAuthMethod:
        method === 'client_secret_basic' || method === 'client_secret_post' ? method : info.client_secret ? 'client_secret_basic' : 'none',
      redirectUris: (info as { redirect_uris?: string[] }).redirect_uris ?? [this.loopback.redirectUri],
      source: 'dynamic',
      createdAt: Math.floor(Date.now() / 1000),
    });
  }

  /**
   * The stored tokens for the authorization server in use (a grant from another is never handed
   * to the SDK). Refreshes are serialised like ContextClient's: under the store's lock for the
   * grant, reading the store again inside it, so two providers or processes sharing the
   * credentials file never present one refresh token twice.
   *
   * - Building a request's headers: a grant due for a refresh is refreshed here (ContextClient's
   *   refresh, under the lock), and the SDK gets the access token only, never the refresh token.
   * - Inside the SDK's auth() (after a 401 or 403), which refreshes with whatever refresh token this
   *   returns, outside any lock of ours: the lock is taken here and held until the SDK saves the
   *   new tokens (or turns to a new authorization, or gives up), and the refresh token handed over
   *   is the one in the store now, read inside the lock. Whoever holds the lock next reads the
   *   rotated one.
   */
  async tokens(): Promise<OAuthTokens | undefined> {
    const forRefresh = this.inAuth;
    this.inAuth = false;
    const issuer = await this.currentIssuer();
    if (forRefresh) {
      this.release();
      await this.hold(grantLockName(this.grants(issuer)));
      const current = await this.store.getGrant(this.grants(issuer));
      if (!current?.refreshToken || isDpopBound(current)) this.release();
      return current && sdkTokens(current, true);
    }
    let grant = await this.store.getGrant(this.grants(issuer));
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
    return sdkTokens(grant, false);
  }

  /** The person's grant from `issuer`: the SDK's flow is a person's sign-in. */
  private grants(issuer: string): GrantSelector & { issuer: string } {
    return { application: this.application, serverUrl: this.serverUrl, identity: PERSON, issuer };
  }

  /** Takes the grant's lock and keeps it until release() (or SDK_REFRESH_HOLD_MS). */
  private hold(name: string): Promise<void> {
    return new Promise<void>((acquired, failed) => {
      this.store
        .withLock(
          name,
          () =>
            new Promise<void>((release) => {
              const timer = setTimeout(release, SDK_REFRESH_HOLD_MS);
              timer.unref();
              this.held = () => {
                clearTimeout(timer);
                release();
              };
              acquired();
            }),
        )
        .catch(failed);
    });
  }

  private release(): void {
    const release = this.held;
    this.held = undefined;
    release?.();
  }

  /** What refreshes for this provider: a non-interactive ContextClient on the same store (same locks). */
  private refresher(): ContextClient {
    this.context ??= new ContextClient({
      serverUrl: this.serverUrl,
      store: this.store,
      applicationId: this.application,
      interactive: false,
      ...(this.options.fetch ? { fetch: this.options.fetch } : {}),
      ...(this.options.onProgress ? { onProgress: this.options.onProgress } : {}),
    });
    return this.context;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    // The end of an SDK refresh or code exchange: the lock goes once the new grant is stored.
    this.inAuth = false;
    try {
      await this.storeTokens(tokens);
    } finally {
      this.release();
    }
  }

  private async storeTokens(tokens: OAuthTokens): Promise<void> {
    const issuer = (tokens as { issuer?: string }).issuer ?? (await this.currentIssuer());
    const previous = await this.store.getGrant(this.grants(issuer));
    const discovered = await this.discoveryState();
    const resource = typeof discovered?.resourceMetadata?.resource === 'string' ? discovered.resourceMetadata.resource : undefined;
    const client = await this.store.getClient(this.application, issuer);
    await this.store.saveGrant(
      toStoredGrant(tokens, {
        application: this.application,
        identity: PERSON,
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
    // The SDK's refresh was refused; it forgets and starts over (taking the lock again if it refreshes).
    this.release();
    if (scope === 'all' || scope === 'tokens') await this.store.deleteGrant(this.grants(await this.currentIssuer()));
    if (scope === 'all' || scope === 'client') await this.store.deleteClient(this.application, await this.currentIssuer());
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
    if (scope === 'all' || scope === 'discovery') this.discovered = undefined;
  }

  /**
   * Waits for the browser to come back to the loopback callback and returns the code, after the
   * checks ContextClient makes too (validateCallback: `iss`, `state`, `error`).
   */
  async waitForAuthorizationCode(): Promise<string> {
    if (this.expectedState === undefined) throw new ClientError('authorization_failed', 'no authorization is in progress');
    const params = await this.loopback.wait();
    // The callback server closes after one answer; listen again on the same port (the SDK keeps
    // using the same redirect URL) for a later step-up.
    this.loopback = await startLoopback({ port: Number(new URL(this.loopback.redirectUri).port), timeoutMs: this.options.authorizationTimeoutMs });
    const issuer = await this.currentIssuer();
    // The SDK may have handed over discovery state without metadata: then only the issuer is known.
    const metadata = (this.discovered?.authorizationServerMetadata ?? { issuer }) as unknown as AuthorizationServer;
    const client = await this.store.getClient(this.application, issuer);
    if (!client) throw new ClientError('authorization_failed', `no client is registered at ${issuer}`);
    const code = validateCallback(metadata, client.clientId, params, this.expectedState).get('code');
    if (!code) throw new ClientError('authorization_failed', 'the authorization response has no code');
    return code;
  }

  /** Stops the loopback callback server. */
  close(): Promise<void> {
    this.release();
    return this.loopback.close();
  }
}

/**
 * A stored grant as the SDK takes it; the refresh token only for the SDK's own refresh. The SDK
 * presents tokens as bearer tokens and makes no DPoP proofs: a DPoP-bound grant is refused plainly
 * rather than sent where it can only fail (or forgotten for a bearer grant in its place).
 */
function sdkTokens(grant: StoredGrant, withRefreshToken: boolean): OAuthTokens {
  if (isDpopBound(grant)) {
    throw new ClientError(
      'dpop_unsupported',
      `the authorization for ${grant.serverUrl} is DPoP-bound, and the MCP SDK's auth provider sends bearer tokens only; give the transport ContextClient's fetch instead`,
    );
  }
  const expiresIn = grant.expiresAt === undefined ? undefined : Math.max(0, grant.expiresAt - Math.floor(Date.now() / 1000));
  return {
    access_token: grant.accessToken,
    token_type: 'Bearer',
    ...(expiresIn === undefined ? {} : { expires_in: expiresIn }),
    ...(withRefreshToken && grant.refreshToken ? { refresh_token: grant.refreshToken } : {}),
    ...(grant.scope ? { scope: grant.scope } : {}),
    issuer: grant.issuer,
  } as OAuthTokens;
}
