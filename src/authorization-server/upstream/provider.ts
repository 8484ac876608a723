/**
 * Upstream identity providers (the spec's third-party authorization): how one is configured and
 * how its configuration is resolved into what oauth4webapi needs. Two kinds:
 * - 'oidc': any OpenID Connect provider, found through discovery; identity from the ID token.
 * - 'oauth2': a plain OAuth 2.0 provider (GitHub-style: no ID token), with explicit endpoints and
 *   identity from a user-info API through a mapping.
 */
import * as oauth from 'oauth4webapi';
import { OAuthError } from '../../core/errors.js';

/** Who signed in upstream, as far as we use it. `issuer` + `subject` identify the person. */
export interface UpstreamIdentity {
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
  username: string | null;
}

/** Maps a user-info response of a plain OAuth 2.0 provider to an identity (without `issuer`). */
export type ProfileMapper = (userinfo: Record<string, unknown>) => Omit<UpstreamIdentity, 'issuer'>;

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
    issuesIssParameter: false,
    profile: githubProfile,
  };
}

/** GitHub's /user: a numeric id that never changes, a login that may. */
export function githubProfile(user: Record<string, unknown>): Omit<UpstreamIdentity, 'issuer'> {
  const id = user.id;
  if (typeof id !== 'number' && typeof id !== 'string') throw new Error('the user-info response has no id');
  return {
    subject: String(id),
    email: typeof user.email === 'string' ? user.email : null,
    // GitHub only shows a primary email that its owner has verified.
    emailVerified: typeof user.email === 'string',
    name: typeof user.name === 'string' ? user.name : null,
    username: typeof user.login === 'string' ? user.login : null,
  };
}

function checkUrl(value: string, what: string, allowLoopbackHttp: boolean): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${what} is not a URL: ${value}`);
  }
  const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowLoopbackHttp && loopback)) {
    throw new Error(`${what} must be an https URL: ${value}`);
  }
  return url;
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
  if (!ID_PATTERN.test(options.id)) throw new Error(`upstream id "${options.id}" must be lowercase letters, digits and '-', at most 32`);
  if (!options.clientId) throw new Error(`upstream ${options.id}: a client id is required`);
  const allowHttp = resolve.allowLoopbackHttp ?? false;
  const http: ResolvedUpstream['http'] = {};
  if (resolve.fetch) http[oauth.customFetch] = resolve.fetch;
  if (allowHttp) http[oauth.allowInsecureRequests] = true;
  const client: oauth.Client = { client_id: options.clientId };
  const common = { id: options.id, name: options.name ?? options.id, client, clientAuth: clientAuthFor(options), http };

  if (options.kind === 'oidc') {
    const issuer = checkUrl(options.issuer, `upstream ${options.id}: the issuer`, allowHttp);
    let as: oauth.AuthorizationServer;
    try {
      as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...http, algorithm: 'oidc' }));
    } catch (error) {
      throw new Error(`upstream ${options.id}: cannot read the OpenID configuration of ${issuer.href}: ${describe(error)}`, { cause: error });
    }
    if (!as.authorization_endpoint || !as.token_endpoint) throw new Error(`upstream ${options.id}: the OpenID configuration lacks an authorization or token endpoint`);
    if (!as.jwks_uri) throw new Error(`upstream ${options.id}: the OpenID configuration has no jwks_uri, so ID tokens cannot be verified`);
    return { ...common, kind: 'oidc', as, scope: withOpenId(options.scope ?? 'openid email profile'), profile: null };
  }

  const as: oauth.AuthorizationServer = {
    issuer: options.issuer,
    authorization_endpoint: checkUrl(options.authorizationEndpoint, `upstream ${options.id}: the authorization endpoint`, allowHttp).href,
    token_endpoint: checkUrl(options.tokenEndpoint, `upstream ${options.id}: the token endpoint`, allowHttp).href,
    userinfo_endpoint: checkUrl(options.userinfoEndpoint, `upstream ${options.id}: the user-info endpoint`, allowHttp).href,
    authorization_response_iss_parameter_supported: options.issuesIssParameter ?? false,
  };
  return { ...common, kind: 'oauth2', as, scope: options.scope ?? '', profile: options.profile };
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
