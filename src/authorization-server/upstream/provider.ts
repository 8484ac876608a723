/**
 * Upstream identity providers (the spec's third-party authorization): how one is configured and
 * how its configuration is resolved into what oauth4webapi needs. Two kinds:
 * - 'oidc': any OpenID Connect provider, found through discovery; identity from the ID token.
 * - 'oauth2': a plain OAuth 2.0 provider (GitHub-style: no ID token), with explicit endpoints and
 *   identity from a user-info API through a mapping.
 */
import * as oauth from 'oauth4webapi';
import { OAuthError } from '../../core/errors.js';

/** Who signed in upstream, as far as we use it. The provider, `issuer` and `subject` identify the person. */
export interface UpstreamIdentity {
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
  username: string | null;
  /**
   * What the provider asserted, for rules on it (`policy.requireClaims`, `policy.allow`): the
   * validated ID token's claims (OpenID), or the user-info response (plain OAuth 2.0).
   */
  claims: Record<string, unknown>;
}

/** Maps a user-info response of a plain OAuth 2.0 provider to an identity (without `issuer` and `claims`). */
export type ProfileMapper = (userinfo: Record<string, unknown>) => Omit<UpstreamIdentity, 'issuer' | 'claims'>;

interface CommonOptions {
  /** Short name used in URLs, user records and logs: letters, digits, '-' (e.g. 'google'). */
  id: string;
  /** Label on the sign-in button. Default: the id. */
  name?: string;
  clientId: string;
  /** Absent for a public client (PKCE only). Sent as client_secret_basic unless `clientAuth` says post. */
  clientSecret?: string;
  clientAuth?: 'client_secret_basic' | 'client_secret_post';
  /** Scopes asked of the upstream, space-separated. */
  scope?: string;
}

export interface OidcProviderOptions extends CommonOptions {
  kind: 'oidc';
  /** The issuer identifier; its discovery document is fetched once, at start. */
  issuer: string;
}

export interface OAuth2ProviderOptions extends CommonOptions {
  kind: 'oauth2';
  /** A name for the provider as an issuer of identities (kept with each user it signs in). */
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  userinfoEndpoint: string;
  /** Turns the user-info response into an identity. */
  profile: ProfileMapper;
  /**
   * A GitHub-style list of the person's addresses (`[{email, primary, verified}]`), read with
   * their token. When set, the email is the primary verified one there (else another verified
   * one), and the user-info's email, which the provider may not have verified, is not used.
   */
  emailsEndpoint?: string;
  /** Whether the provider returns `iss` in its authorization responses (RFC 9207). Default false. */
  issuesIssParameter?: boolean;
}

export type UpstreamProviderOptions = OidcProviderOptions | OAuth2ProviderOptions;

/** A provider ready for use: oauth4webapi's descriptions of it and of us as its client. */
export interface ResolvedUpstream {
  id: string;
  name: string;
  kind: 'oidc' | 'oauth2';
  as: oauth.AuthorizationServer;
  client: oauth.Client;
  clientAuth: oauth.ClientAuth;
  scope: string;
  profile: ProfileMapper | null;
  emailsEndpoint: string | null;
  /** oauth4webapi options for every request to this provider (custom fetch, insecure loopback). */
  http: { [oauth.customFetch]?: typeof fetch; [oauth.allowInsecureRequests]?: boolean };
}

export interface ResolveOptions {
  /** Replaces fetch for requests to the provider (tests, proxies). */
  fetch?: typeof fetch;
  /** Allows http:// providers on loopback only; everything else must be https. */
  allowLoopbackHttp?: boolean;
}

const ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,31}$/;

/** The preset for GitHub (OAuth apps): no ID token, identity from the REST API. */
export function githubProvider(options: { clientId: string; clientSecret: string; id?: string; name?: string; scope?: string }): OAuth2ProviderOptions {
  return {
    kind: 'oauth2',
    id: options.id ?? 'github',
    name: options.name ?? 'GitHub',
    issuer: 'https://github.com',
    clientId: options.clientId,
    clientSecret: options.clientSecret,
    // GitHub accepts credentials in the body and (for OAuth apps) in Basic; the body works for both kinds of app.
    clientAuth: 'client_secret_post',
    scope: options.scope ?? 'read:user user:email',
    authorizationEndpoint: 'https://github.com/login/oauth/authorize',
    tokenEndpoint: 'https://github.com/login/oauth/access_token',
    userinfoEndpoint: 'https://api.github.com/user',
    // /user shows the public profile email, which says nothing of whether it was verified.
    emailsEndpoint: 'https://api.github.com/user/emails',
    issuesIssParameter: false,
    profile: githubProfile,
  };
}

/**
 * GitHub's /user: a numeric id that never changes, a login that may. Its email is not taken as
 * verified; the preset's `emailsEndpoint` says which addresses are.
 */
export function githubProfile(user: Record<string, unknown>): Omit<UpstreamIdentity, 'issuer' | 'claims'> {
  const id = user.id;
  if (typeof id !== 'number' && typeof id !== 'string') throw new Error('the user-info response has no id');
  return {
    subject: String(id),
    email: typeof user.email === 'string' ? user.email : null,
    emailVerified: false,
    name: typeof user.name === 'string' ? user.name : null,
    username: typeof user.login === 'string' ? user.login : null,
  };
}

/** How plain http is allowed for providers on this machine, and how an error names that setting. */
interface HttpRule {
  allowLoopbackHttp: boolean;
  setting: string;
}

function checkUrl(value: string, what: string, http: HttpRule): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${what} is not a URL: ${value}`);
  }
  const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && http.allowLoopbackHttp && loopback)) {
    const hint = url.protocol === 'http:' && loopback ? ` (${http.setting} allows http:// on this machine, for tests and local development)` : '';
    throw new Error(`${what} must be an https URL: ${value}${hint}`);
  }
  return url;
}

/**
 * What can be checked without asking any provider: ids, client ids, URLs, and that no two
 * providers share an id or an issuer (a plain OAuth 2.0 provider's issuer is a name of the
 * operator's: each provider needs its own). Throws an Error naming the provider and what is wrong,
 * for a server to refuse to start on; a provider that does not answer is another matter, retried
 * on use. `setting` names how the operator allows http, in the error that needs it.
 */
export function checkUpstreamProviders(providers: UpstreamProviderOptions[], options: { allowLoopbackHttp?: boolean; setting?: string } = {}): void {
  const http = { allowLoopbackHttp: options.allowLoopbackHttp ?? false, setting: options.setting ?? 'allowLoopbackHttp' };
  const ids = new Set<string>();
  const issuers = new Map<string, string>();
  for (const provider of providers) {
    checkProvider(provider, http);
    if (ids.has(provider.id)) throw new Error(`two upstream providers are named ${provider.id}`);
    ids.add(provider.id);
    const issuer = provider.issuer.replace(/\/+$/, '');
    const other = issuers.get(issuer);
    if (other !== undefined) {
      throw new Error(
        `upstream ${other} and ${provider.id} have the same issuer ${provider.issuer}; each provider needs an issuer of its own (for a plain OAuth 2.0 provider, any name unique to it)`,
      );
    }
    issuers.set(issuer, provider.id);
  }
}

function checkProvider(options: UpstreamProviderOptions, http: HttpRule): void {
  if (!ID_PATTERN.test(options.id)) throw new Error(`upstream id "${options.id}" must be lowercase letters, digits and '-', at most 32`);
  if (!options.clientId) throw new Error(`upstream ${options.id}: a client id is required`);
  if (typeof options.issuer !== 'string' || options.issuer === '') throw new Error(`upstream ${options.id}: an issuer is required`);
  if (options.kind === 'oidc') {
    checkUrl(options.issuer, `upstream ${options.id}: the issuer`, http);
    return;
  }
  checkUrl(options.authorizationEndpoint, `upstream ${options.id}: the authorization endpoint`, http);
  checkUrl(options.tokenEndpoint, `upstream ${options.id}: the token endpoint`, http);
  checkUrl(options.userinfoEndpoint, `upstream ${options.id}: the user-info endpoint`, http);
  if (options.emailsEndpoint !== undefined) checkUrl(options.emailsEndpoint, `upstream ${options.id}: the emails endpoint`, http);
}

function clientAuthFor(options: UpstreamProviderOptions): oauth.ClientAuth {
  if (options.clientSecret === undefined) return oauth.None();
  return options.clientAuth === 'client_secret_post' ? oauth.ClientSecretPost(options.clientSecret) : oauth.ClientSecretBasic(options.clientSecret);
}

/**
 * Checks the configuration and, for OpenID providers, fetches the discovery document. Throws an
 * Error that names the provider and what is wrong: the operator reads it at start.
 */
export async function resolveUpstream(options: UpstreamProviderOptions, resolve: ResolveOptions = {}): Promise<ResolvedUpstream> {
  const allowHttp = resolve.allowLoopbackHttp ?? false;
  checkProvider(options, { allowLoopbackHttp: allowHttp, setting: 'allowLoopbackHttp' });
  const http: ResolvedUpstream['http'] = {};
  if (resolve.fetch) http[oauth.customFetch] = resolve.fetch;
  if (allowHttp) http[oauth.allowInsecureRequests] = true;
  const client: oauth.Client = { client_id: options.clientId };
  const common = { id: options.id, name: options.name ?? options.id, client, clientAuth: clientAuthFor(options), http };

  if (options.kind === 'oidc') {
    const issuer = new URL(options.issuer);
    let as: oauth.AuthorizationServer;
    try {
      as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...http, algorithm: 'oidc' }));
    } catch (error) {
      throw new Error(`upstream ${options.id}: cannot read the OpenID configuration of ${issuer.href}: ${describe(error)}`, { cause: error });
    }
    if (!as.authorization_endpoint || !as.token_endpoint)
      throw new Error(`upstream ${options.id}: the OpenID configuration lacks an authorization or token endpoint`);
    if (!as.jwks_uri) throw new Error(`upstream ${options.id}: the OpenID configuration has no jwks_uri, so ID tokens cannot be verified`);
    return { ...common, kind: 'oidc', as, scope: withOpenId(options.scope ?? 'openid email profile'), profile: null, emailsEndpoint: null };
  }

  const as: oauth.AuthorizationServer = {
    issuer: options.issuer,
    authorization_endpoint: new URL(options.authorizationEndpoint).href,
    token_endpoint: new URL(options.tokenEndpoint).href,
    userinfo_endpoint: new URL(options.userinfoEndpoint).href,
    authorization_response_iss_parameter_supported: options.issuesIssParameter ?? false,
  };
  const emailsEndpoint = options.emailsEndpoint === undefined ? null : new URL(options.emailsEndpoint).href;
  return { ...common, kind: 'oauth2', as, scope: options.scope ?? '', profile: options.profile, emailsEndpoint };
}

function withOpenId(scope: string): string {
  const values = scope.split(' ').filter(Boolean);
  return values.includes('openid') ? values.join(' ') : ['openid', ...values].join(' ');
}

/** A short reason for a log line or an operator, never a token or a response body. */
export function describe(error: unknown): string {
  if (error instanceof OAuthError) return `${error.code}: ${error.message}`;
  if (error instanceof Error) {
    const code = (error as Error & { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
