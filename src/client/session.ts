import * as oauth from 'oauth4webapi';
import type { DpopKeyPair } from '../core/dpop.js';
import { canonicalizeResourceUri } from '../core/uri.js';
import { authorizedFetch, type AuthFetch, type FetchSession } from './auth-fetch.js';
import { planAuthorization, redeemCallback, validateCallback } from './authorize.js';
import { checkServerAccepts, importSigningKey, privateKeyJwt, type ClientPrivateKey, type SigningKey } from './client-assertion.js';
import {
  deviceAuthorizationEndpoint,
  deviceCodeInfo,
  pollForTokens,
  realSleep,
  requestDeviceCode,
  type DeviceCodeInfo,
  type DeviceFlowContext,
  type Sleep,
} from './device.js';
import { discover, discoverIssuer, type Discovery } from './discovery.js';
import { DpopProofs, isDpopBound, newDpopKey, resourceWantsDpop } from './dpop.js';
import { ClientError, signInStopped } from './errors.js';
import { describeIdentity, grantLockName, PERSON, sameIdentity, toStoredGrant, type GrantContext, type TokenSet } from './grants.js';
import { askForAssertion, jwtBearerGrant, type AssertionCallback } from './jwt-bearer.js';
import { startLoopback } from './loopback.js';
import { presentAuthorizationUrl, type PresentOptions } from './open-browser.js';
import { failureReason } from './network-errors.js';
import { asOAuthClient, isInvalidClient, isInvalidGrant, tokenError, tokenRequest, type DpopTokenBinding } from './oauth-requests.js';
import { applicationOf, obtainClient, preferredSecretMethod, type ClientPurpose, type ClientRegistrationOptions } from './registration.js';
import { FileTokenStore } from './token-store.js';
import { revocationOf, revokeAt, type Revocation } from './revocation.js';
import type { GrantIdentity, GrantSelector, ProgramGrantType, StoredClient, StoredGrant, TokenStore } from './types.js';

export interface ContextClientOptions extends ClientRegistrationOptions, PresentOptions {
  /** The context server, e.g. https://mcp.example.com/mcp. */
  serverUrl: string;
  /**
   * Where registrations and tokens live, filed under this application's `applicationId`. Default:
   * a 0600 file in the user's config folder, shared with the CLI and other applications.
   */
  store?: TokenStore;
  /**
   * 'authorization_code' (a person, through the browser; default), 'device_code' (a person who
   * signs in on another device with a code, RFC 8628: for machines without a browser),
   * 'client_credentials' (a program with its own credentials), or 'jwt-bearer' (RFC 7523: a
   * program presenting a JWT someone else issued, given by `assertion`).
   */
  grantType?: 'authorization_code' | 'device_code' | 'client_credentials' | 'jwt-bearer';
  /**
   * For the device_code grant: shows the person the page to open and the code to type there.
   * Default: both printed through `onProgress`. The sign-in then waits for them, polling the
   * authorization server.
   */
  onDeviceCode?: (code: DeviceCodeInfo) => void | Promise<void>;
  /** How the device_code grant waits between polls; tests pass a fake clock's. Default: a timer. */
  sleep?: Sleep;
  /**
   * For the jwt-bearer grant: gives the JWT to present, for the authorization server, resource
   * and scope in its argument. Asked for each token request (there is no refresh token: when the
   * access token expires or is refused, it is asked again). `workloadTokenFile(path)` reads a
   * workload identity token file; `enterpriseAssertion(…)` gets an ID-JAG from an identity provider.
   */
  assertion?: AssertionCallback;
  /**
   * For the client credentials and jwt-bearer grants, instead of `clientSecret`: the client's private key (a
   * CryptoKey, KeyObject, private JWK or PEM), which signs a short-lived JWT for each token request
   * (private_key_jwt, RFC 7523). The authorization server holds the public key.
   */
  privateKey?: ClientPrivateKey;
  /** The key's JWS algorithm; default from the key (ES256 for P-256, RS256 for RSA, EdDSA for Ed25519). */
  privateKeyAlg?: string;
  /** The `kid` the assertion names, where the authorization server holds several keys for the client. */
  keyId?: string;
  /**
   * DPoP (RFC 9449): true binds each new grant's tokens to a key pair made for it (kept with the
   * grant in the store), proven at every token request and with every use of the token; false never
   * does. Default: only when the resource asks for it (its 401 challenges with the DPoP scheme, or
   * its metadata sets dpop_bound_access_tokens_required), or the grant being replaced was DPoP-bound.
   */
  dpop?: boolean;
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
  /**
   * Told when the person is sent to the browser ('started') and when the browser is back or the
   * wait ended ('ended'): a caller's own request timeout can stop while a person signs in.
   */
  onSignIn?: (phase: 'started' | 'ended') => void;
  chooseAuthorizationServers?: (servers: string[]) => string[] | Promise<string[]>;
}

/**
 * A connection to one context server: discovery, registration, the browser flow, token storage
 * and refresh, and `fetch`, which does all of it on demand. One instance per server.
 */
export class ContextClient implements FetchSession {
  readonly serverUrl: string;
  readonly store: TokenStore;
  /** What this client's registrations and tokens are filed under in the store (`applicationId`). */
  readonly application: string;
  /**
   * Whose grant this client uses and keeps: the program `clientId` with its grant, for
   * 'client_credentials' and 'jwt-bearer'; else the person who signs in through the application.
   */
  readonly identity: GrantIdentity;
  private readonly options: ContextClientOptions;
  private readonly fetchImpl: typeof fetch;
  private readonly now: () => number;
  private discovery: Promise<Discovery> | undefined;
  private signingKey: Promise<SigningKey> | undefined;
  /** DPoP proofs and the nonces servers gave, shared by token and resource requests. */
  private readonly proofs: DpopProofs;
  /** `fetch` for the context server, authorizing as needed (auth-fetch.ts). */
  readonly fetch: AuthFetch;

  constructor(options: ContextClientOptions) {
    this.options = options;
    try {
      this.serverUrl = canonicalizeResourceUri(options.serverUrl);
    } catch (error) {
      throw new ClientError('discovery_failed', `not a context server URL: ${options.serverUrl} (${(error as Error).message})`);
    }
    if (options.privateKey !== undefined) {
      if (!isUnattended(options.grantType))
        throw new ClientError('registration_unavailable', "privateKey is for grantType 'client_credentials' or 'jwt-bearer'");
      if (!options.clientId) throw new ClientError('registration_unavailable', 'privateKey needs the clientId it authenticates');
      if (options.clientSecret) throw new ClientError('registration_unavailable', 'give either clientSecret or privateKey, not both');
    }
    if (options.grantType === 'jwt-bearer') {
      if (!options.assertion)
        throw new ClientError('registration_unavailable', "grantType 'jwt-bearer' needs the assertion callback that gives the JWT to present");
      if (!options.clientId) throw new ClientError('registration_unavailable', "grantType 'jwt-bearer' needs the clientId it is issued to");
    } else if (options.assertion) {
      throw new ClientError('registration_unavailable', "assertion is for grantType 'jwt-bearer'");
    }
    // The client id is the program's identity: its grant is stored and found under it.
    if (options.grantType === 'client_credentials' && !options.clientId) {
      throw new ClientError('registration_unavailable', "grantType 'client_credentials' needs the clientId it authenticates as");
    }
    this.application = applicationOf(options);
    this.identity = isUnattended(options.grantType) ? { kind: 'program', grantType: options.grantType, clientId: options.clientId! } : PERSON;
    this.store = options.store ?? new FileTokenStore();
    this.fetchImpl = options.fetch ?? fetch;
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000));
    this.proofs = new DpopProofs(this.now);
    this.fetch = authorizedFetch(this, {
      fetch: this.fetchImpl,
      proofs: this.proofs,
      interactive: options.interactive !== false,
      onProgress: (message) => this.progress(message),
    });
  }

  /** A program's grant, renewed by asking the token endpoint again: nobody is sent to a browser. */
  get unattended(): boolean {
    return isUnattended(this.options.grantType);
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

  /** This client's grants in the store: its application's and identity's, for this server (from `issuer`, or any). */
  private grants(issuer?: string): GrantSelector {
    return { application: this.application, serverUrl: this.serverUrl, identity: this.identity, ...(issuer === undefined ? {} : { issuer }) };
  }

  /**
   * The stored grant of this client's identity for this server, if any. A person's grant made
   * with another client than the `clientId` given is not this client's: a login replaces it.
   */
  async grant(): Promise<StoredGrant | undefined> {
    const grant = await this.store.getGrant(this.grants());
    if (grant && this.options.clientId && grant.clientId !== this.options.clientId) return undefined;
    return grant;
  }

  /**
   * Runs the whole authorization: discovery, a client, the browser (or the client credentials
   * grant for programs), the code exchange, and stores the tokens.
   */
  async login(options: { scope?: string; wwwAuthenticate?: string | null; signal?: AbortSignal } = {}): Promise<StoredGrant> {
    // Nobody to ask: fail before any request, rather than discover and register for nothing.
    if (!this.unattended && this.options.interactive === false) {
      throw new ClientError(
        'login_required',
        `no valid authorization of ${describeIdentity(this.identity)} for ${this.serverUrl}, and this client may not start a sign-in (interactive: false); log in first`,
      );
    }
    const discovery = await this.discover(options.wwwAuthenticate);
    const wasBound = isDpopBound(await this.grant());
    if (this.options.grantType === 'client_credentials') return this.clientCredentials(discovery, options.scope, wasBound);
    if (this.options.grantType === 'jwt-bearer') return this.jwtBearer(discovery, options.scope, wasBound);
    if (this.options.grantType === 'device_code') return this.deviceFlow(discovery, options.scope, wasBound, options.signal);

    const cached = this.options.clientId ? undefined : await this.store.getClient(this.application, discovery.issuer);
    const port = this.options.redirectPort ?? registeredLoopbackPort(cached);
    const loopback = await startLoopback({ ...(port ? { port } : {}), timeoutMs: this.options.authorizationTimeoutMs }).catch(async (error: unknown) => {
      // The port we registered with is taken: RFC 8252 servers accept any loopback port.
      if (port !== undefined && this.options.redirectPort === undefined) return startLoopback({ timeoutMs: this.options.authorizationTimeoutMs });
      throw error;
    });
    try {
      const { discovery: chosen, client } = await this.registeredClientAtAny(discovery, { redirectUri: loopback.redirectUri });
      const scope = options.scope ?? this.options.scope ?? chosen.challengeScope ?? chosen.scopesSupported?.join(' ');
      const dpop = this.dpopFor(chosen, wasBound);
      const plan = await planAuthorization(chosen, client, loopback.redirectUri, scope || undefined);
      loopback.expectState(plan.state);
      const callback = await this.browserStep(plan.url, loopback.wait, options.signal);
      // A refusal (checked like a code: state, iss) is reported as it is, before any word of exchanging.
      if (callback.has('error')) validateCallback(chosen.authorizationServer, client.clientId, callback, plan.state);
      this.progress('Exchanging the code for tokens');
      const tokens = await redeemCallback(chosen, client, plan, callback, this.fetchImpl, dpop);
      return await this.saveTokens(chosen, tokens, { clientId: client.clientId, requestedScope: scope, dpopKey: dpop?.key });
    } finally {
      await loopback.close();
    }
  }

  /** Sends the person to the browser and waits for the callback (or for `signal`), telling onSignIn around it. */
  private async browserStep(url: URL, wait: () => Promise<URLSearchParams>, signal: AbortSignal | undefined): Promise<URLSearchParams> {
    this.options.onSignIn?.('started');
    try {
      await presentAuthorizationUrl(url, this.options);
      this.progress('Waiting for the browser…');
      return await untilAborted(wait(), signal);
    } finally {
      this.options.onSignIn?.('ended');
    }
  }

  /**
   * A client at the authorization server discovery chose, else (its registration failing or
   * unavailable) at the next one the resource lists, in the order discovery tried them.
   */
  private async registeredClientAtAny(discovery: Discovery, purpose: ClientPurpose): Promise<{ discovery: Discovery; client: StoredClient }> {
    const start = Math.max(0, discovery.candidates.indexOf(discovery.issuer));
    const issuers = [discovery.issuer, ...discovery.candidates.slice(start + 1)];
    let firstFailure: unknown;
    for (const issuer of issuers) {
      try {
        const at = await discoverIssuer(discovery, issuer, this.fetchImpl);
        // The device flow needs a server that offers it: one that does not is passed over before registering there.
        if ('device' in purpose) deviceAuthorizationEndpoint(at.authorizationServer);
        return { discovery: at, client: await this.registeredClient(at, purpose) };
      } catch (error) {
        const code = error instanceof ClientError ? error.code : undefined;
        // A client given in options is the caller's choice: no falling back to another server.
        if (
          this.options.clientId ||
          !(
            code === 'registration_failed' ||
            code === 'registration_unavailable' ||
            code === 'no_authorization_server' ||
            code === 'discovery_failed' ||
            code === 'metadata_mismatch'
          )
        )
          throw error;
        firstFailure ??= error;
        if (issuer !== issuers.at(-1)) this.progress(`${(error as Error).message}; trying the next authorization server`);
      }
    }
    throw firstFailure;
  }

  private async registeredClient(discovery: Discovery, purpose: ClientPurpose): Promise<StoredClient> {
    const before = this.options.clientId ? undefined : await this.store.getClient(this.application, discovery.issuer);
    if (!before && !this.options.clientId && discovery.authorizationServer.registration_endpoint) this.progress(`Registering a client at ${discovery.issuer}`);
    return obtainClient(discovery, purpose, this.store, { ...this.options, applicationId: this.application, fetch: this.fetchImpl, now: this.now });
  }

  /**
   * The device authorization grant (RFC 8628): a code for the person to enter on any device with a
   * browser, then the token endpoint polled until they have signed in there (or refused, or the
   * code expired, or `signal` stopped the wait).
   */
  private async deviceFlow(discovery: Discovery, requestedScope: string | undefined, wasBound: boolean, signal: AbortSignal | undefined): Promise<StoredGrant> {
    const { discovery: chosen, client } = await this.registeredClientAtAny(discovery, { device: true });
    const scope = requestedScope ?? this.options.scope ?? chosen.challengeScope ?? chosen.scopesSupported?.join(' ');
    const dpop = this.dpopFor(chosen, wasBound);
    const { client: oauthClient, auth } = asOAuthClient(client);
    const context: DeviceFlowContext = {
      as: chosen.authorizationServer,
      client: oauthClient,
      auth,
      fetch: this.fetchImpl,
      now: this.now,
      sleep: this.options.sleep ?? realSleep,
      ...(signal ? { signal } : {}),
      ...(dpop ? { dpop } : {}),
    };
    this.progress(`Asking ${chosen.issuer} for a sign-in code`);
    const answer = await requestDeviceCode(context, { ...(scope ? { scope } : {}), ...(chosen.resource ? { resource: chosen.resource } : {}) });
    const issuedAt = this.now();
    this.options.onSignIn?.('started');
    try {
      await this.presentDeviceCode(deviceCodeInfo(answer));
      const tokens = await pollForTokens(context, answer, issuedAt, chosen.resource);
      return await this.saveTokens(chosen, tokens, { clientId: client.clientId, requestedScope: scope || undefined, dpopKey: dpop?.key });
    } finally {
      this.options.onSignIn?.('ended');
    }
  }

  /** Shows the person the device code: through the caller's onDeviceCode, else as progress lines. */
  private async presentDeviceCode(code: DeviceCodeInfo): Promise<void> {
    if (this.options.onDeviceCode) return this.options.onDeviceCode(code);
    // The URL on a line of its own: the CLI prints such lines even when told to be quiet.
    this.progress(`To sign in, open this page on any device with a browser:\n${code.verificationUri}`);
    this.progress(`and enter the code ${code.userCode} (it expires in ${Math.round(code.expiresIn / 60)} min)`);
    if (code.verificationUriComplete) this.progress(`Or open the page with the code filled in:\n${code.verificationUriComplete}`);
    this.progress('Waiting for the sign-in…');
  }

  /**
   * A new grant's DPoP binding, with a key of its own, when DPoP is asked for (option, the
   * resource, or the grant it replaces); else none.
   */
  private dpopFor(discovery: Discovery, wasBound: boolean): DpopTokenBinding | undefined {
    const wanted = this.options.dpop ?? (wasBound || resourceWantsDpop(discovery));
    return wanted ? this.binding(newDpopKey(discovery)) : undefined;
  }

  private binding(key: DpopKeyPair | undefined): DpopTokenBinding | undefined {
    return key ? { key, proofs: this.proofs } : undefined;
  }

  private async clientCredentials(discovery: Discovery, scope: string | undefined, wasBound: boolean): Promise<StoredGrant> {
    if (!this.options.clientId || (!this.options.clientSecret && this.options.privateKey === undefined)) {
      throw new ClientError('registration_unavailable', 'the client credentials grant needs a client id and a secret or private key');
    }
    const client = await obtainClient(discovery, 'urn:ietf:wg:oauth:2.0:oob', this.store, {
      ...this.options,
      applicationId: this.application,
      fetch: this.fetchImpl,
      now: this.now,
    });
    const as = discovery.authorizationServer;
    const { client: oauthClient, auth } = await this.authenticatedAs(client, as);
    const requested = scope ?? this.options.scope;
    const parameters: Record<string, string> = { ...(requested ? { scope: requested } : {}), ...(discovery.resource ? { resource: discovery.resource } : {}) };
    const dpop = this.dpopFor(discovery, wasBound);
    try {
      const response = await tokenRequest(this.fetchImpl, as.token_endpoint ?? discovery.issuer, dpop, undefined, (options) =>
        oauth.clientCredentialsGrantRequest(as, oauthClient, auth, parameters, options),
      );
      const tokens = await oauth.processClientCredentialsResponse(as, oauthClient, response);
      return await this.saveTokens(discovery, tokens, { clientId: client.clientId, requestedScope: requested, dpopKey: dpop?.key });
    } catch (error) {
      throw tokenError(error, 'the client credentials grant failed');
    }
  }

  /**
   * The jwt-bearer grant: the assertion the callback gives for this authorization server and
   * resource, authenticated as the client is configured (secret, private key, or none). A refusal
   * is thrown as it is: no second try, and no other grant.
   */
  private async jwtBearer(discovery: Discovery, scope: string | undefined, wasBound: boolean): Promise<StoredGrant> {
    const client = await obtainClient(discovery, 'urn:ietf:wg:oauth:2.0:oob', this.store, {
      ...this.options,
      applicationId: this.application,
      fetch: this.fetchImpl,
      now: this.now,
    });
    const as = discovery.authorizationServer;
    if (typeof as.token_endpoint !== 'string') throw new ClientError('metadata_mismatch', `${discovery.issuer} names no token_endpoint`);
    const { client: oauthClient, auth } = await this.authenticatedAs(client, as);
    const requested = scope ?? this.options.scope;
    // Revision A has no resource metadata: the server's canonical URI is its resource identifier.
    const resource = discovery.resource ?? this.serverUrl;
    this.progress(`Asking ${discovery.issuer} for a token with the jwt-bearer grant`);
    const assertion = await askForAssertion(this.options.assertion!, {
      issuer: discovery.issuer,
      tokenEndpoint: as.token_endpoint,
      resource,
      ...(requested ? { scope: requested } : {}),
    });
    const dpop = this.dpopFor(discovery, wasBound);
    const tokens = await jwtBearerGrant(as, oauthClient, auth, { assertion, resource, ...(requested ? { scope: requested } : {}) }, this.fetchImpl, dpop);
    return this.saveTokens(discovery, tokens, { clientId: client.clientId, requestedScope: requested, dpopKey: dpop?.key });
  }

  /** oauth4webapi's client and authentication: our private key for the client it belongs to, else the client's secret (or none). */
  private async authenticatedAs(client: StoredClient, as: oauth.AuthorizationServer): Promise<{ client: oauth.Client; auth: oauth.ClientAuth }> {
    if (this.options.privateKey === undefined || client.source !== 'options' || client.clientId !== this.options.clientId) return asOAuthClient(client);
    this.signingKey ??= importSigningKey(this.options.privateKey, this.options.privateKeyAlg);
    const signing = await this.signingKey;
    checkServerAccepts(as, signing.alg);
    return { client: { client_id: client.clientId, token_endpoint_auth_method: 'private_key_jwt' }, auth: privateKeyJwt(signing, this.options.keyId) };
  }

  private async saveTokens(
    discovery: Discovery,
    tokens: TokenSet,
    kept: Pick<GrantContext, 'clientId' | 'requestedScope' | 'refreshToken' | 'dpopKey'>,
  ): Promise<StoredGrant> {
    const grant = toStoredGrant(tokens, {
      application: this.application,
      identity: this.identity,
      serverUrl: this.serverUrl,
      issuer: discovery.issuer,
      resource: discovery.resource,
      revision: discovery.revision,
      now: this.now(),
      ...kept,
    });
    if (kept.dpopKey && !isDpopBound(grant))
      this.progress(`${discovery.issuer} declined DPoP and issued a bearer token (token_type ${tokens.token_type ?? 'missing'}); it is used as one`);
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
    const own = { ...this.grants(stale.issuer), issuer: stale.issuer };
    return this.store.withLock(grantLockName(own), async () => {
      const current = await this.store.getGrant(own);
      if (!current) throw new ClientError('login_required', `no stored authorization of ${describeIdentity(this.identity)} for ${this.serverUrl}`);
      if (current.accessToken !== stale.accessToken && !this.expiresSoon(current)) return current;
      if (!current.refreshToken) {
        if (this.unattended) return this.login();
        throw new ClientError('login_required', `the access token for ${this.serverUrl} expired and there is no refresh token`);
      }
      // The refresh token goes to the authorization server that issued it and to no other
      // (SEP-2352): with its own metadata, and only while the resource still lists it.
      const discovery = await this.issuerOf(current);
      const client = await this.clientFor(current, discovery);
      const as = discovery.authorizationServer;
      const { client: oauthClient, auth } = await this.authenticatedAs(client, as);
      try {
        // A DPoP-bound grant refreshes with its own key (RFC 9449 §5: the refresh token of a public client is bound to it too).
        const refreshToken = current.refreshToken;
        const response = await tokenRequest(
          this.fetchImpl,
          as.token_endpoint ?? discovery.issuer,
          this.binding(current.dpopKey),
          current.resource ? { resource: current.resource } : undefined,
          (options) => oauth.refreshTokenGrantRequest(as, oauthClient, auth, refreshToken, options),
        );
        const tokens = await oauth.processRefreshTokenResponse(as, oauthClient, response);
        return await this.saveTokens(discovery, tokens, {
          clientId: current.clientId,
          requestedScope: current.scope,
          refreshToken: current.refreshToken,
          dpopKey: current.dpopKey,
        });
      } catch (error) {
        const failure = tokenError(error, 'the refresh failed');
        if (isInvalidGrant(failure) || isInvalidClient(failure)) {
          // The grant is dead (expired, revoked, or a reuse was detected), or the server no longer
          // knows our client: forget what failed, so the next run does not present it again.
          await this.store.deleteGrant(own);
          if (isInvalidClient(failure) && client.source !== 'options') await this.forgetClient(current.issuer, client.clientId);
          throw new ClientError('login_required', `the authorization for ${this.serverUrl} ended (${failure.message}); log in again`, { cause: failure });
        }
        throw failure;
      }
    });
  }

  /**
   * The discovery to use a stored grant with: its own issuer's metadata. When the resource no
   * longer lists that issuer (it moved to another authorization server), the grant is forgotten
   * unsent and the answer is login_required.
   */
  private async issuerOf(grant: StoredGrant): Promise<Discovery> {
    const discovery = await this.discover();
    if (!discovery.authorizationServers.includes(grant.issuer)) {
      await this.store.deleteGrant(this.grants(grant.issuer));
      throw new ClientError(
        'login_required',
        `${this.serverUrl} no longer uses the authorization server ${grant.issuer} (it lists ${discovery.authorizationServers.join(', ')}); its authorization was forgotten; log in again`,
      );
    }
    return discoverIssuer(discovery, grant.issuer, this.fetchImpl);
  }

  /** Forgets the registration at `issuer`, if it is still the one with this client id. */
  private async forgetClient(issuer: string, clientId: string): Promise<void> {
    const stored = await this.store.getClient(this.application, issuer);
    if (stored?.clientId === clientId) await this.store.deleteClient(this.application, issuer);
  }

  /**
   * The client a stored grant belongs to: the one given in options, else the registration we
   * keep for its authorization server, else (a client id given once and not kept) a public client
   * with the grant's client id. Only ever with the grant's own issuer's discovery.
   */
  private async clientFor(grant: StoredGrant, discovery: Discovery): Promise<StoredClient> {
    if (discovery.issuer !== grant.issuer) {
      throw new ClientError('issuer_mismatch', `a grant from ${grant.issuer} is not presented to ${discovery.issuer}`);
    }
    if (this.options.clientId === grant.clientId) {
      return {
        application: this.application,
        issuer: grant.issuer,
        clientId: grant.clientId,
        ...(this.options.clientSecret ? { clientSecret: this.options.clientSecret } : {}),
        tokenEndpointAuthMethod: this.options.clientSecret ? preferredSecretMethod(discovery) : 'none',
        redirectUris: [],
        source: 'options',
        createdAt: this.now(),
      };
    }
    const stored = await this.store.getClient(this.application, grant.issuer);
    if (stored?.clientId === grant.clientId) return stored;
    return {
      application: this.application,
      issuer: grant.issuer,
      clientId: grant.clientId,
      tokenEndpointAuthMethod: 'none',
      redirectUris: [],
      source: 'options',
      createdAt: this.now(),
    };
  }

  /** A usable access token: stored, refreshed ahead of expiry, or (interactively) a new login. */
  async accessToken(): Promise<string> {
    let grant = await this.grant();
    if (grant && this.expiresSoon(grant)) grant = await this.refreshOrLogin(grant);
    if (!grant) grant = await this.login();
    return grant.accessToken;
  }

  /** A refreshed grant, else (when the grant is dead or its server unreachable, and a person may be asked) a new login. */
  async refreshOrLogin(grant: StoredGrant): Promise<StoredGrant> {
    try {
      return await this.refresh(grant);
    } catch (error) {
      if (!(error instanceof ClientError) || this.options.interactive === false) throw error;
      // login_required: the grant is gone. no_authorization_server: its issuer is listed but down;
      // the grant is kept for when it is back, and login goes to a server that answers.
      if (error.code === 'login_required' || error.code === 'no_authorization_server' || error.code === 'discovery_failed') {
        if (error.code !== 'login_required') this.progress(`Cannot refresh at ${grant.issuer} (${error.message}); authorizing again`);
        return this.login();
      }
      throw error;
    }
  }

  /**
   * Forgets this identity's stored tokens for this server, after asking the authorization server
   * that issued each to revoke it (RFC 7009): the refresh token, else the access token. The token
   * goes only to its own issuer, while the resource still lists it. Returns what became of each
   * grant (empty when none was stored); the grants are forgotten whatever the outcome.
   */
  async logout(): Promise<Revocation[]> {
    const mine = (grant: StoredGrant) =>
      grant.application === this.application && grant.serverUrl === this.serverUrl && sameIdentity(grant.identity, this.identity);
    const outcomes: Revocation[] = [];
    for (const grant of (await this.store.listGrants()).filter(mine)) outcomes.push(await this.revoke(grant));
    await this.store.deleteGrant(this.grants());
    return outcomes;
  }

  private async revoke(grant: StoredGrant): Promise<Revocation> {
    try {
      const discovery = await this.discover();
      if (!discovery.authorizationServers.includes(grant.issuer)) {
        return { ...revocationOf(grant), outcome: 'not_sent', reason: `${this.serverUrl} no longer lists ${grant.issuer} as its authorization server` };
      }
      const own = await discoverIssuer(discovery, grant.issuer, this.fetchImpl);
      const { client, auth } = await this.authenticatedAs(await this.clientFor(grant, own), own.authorizationServer);
      return await revokeAt(own.authorizationServer, client, auth, grant, this.fetchImpl);
    } catch (error) {
      return { ...revocationOf(grant), outcome: 'failed', reason: failureReason(error) };
    }
  }
}

function isUnattended(grantType: ContextClientOptions['grantType']): grantType is ProgramGrantType {
  return grantType === 'client_credentials' || grantType === 'jwt-bearer';
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

/** `waiting`, unless `signal` aborts first: then authorization_aborted. */
function untilAborted<T>(waiting: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return waiting;
  if (signal.aborted) return Promise.reject(signInStopped());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signInStopped());
    signal.addEventListener('abort', onAbort, { once: true });
    waiting.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
