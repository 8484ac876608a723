import { OAuthError } from '../../core/errors.js';
import { checkCodeChallenge } from '../../core/pkce.js';
import { matchRedirectUri, redirectUriProblem, type RedirectUriRules } from '../../core/redirect-uri.js';
import { OPENID, OPENID_SCOPES, parseScope, resolveScope, withoutOfflineAccess } from '../../core/scopes.js';
import { canonicalizeResourceUri } from '../../core/uri.js';
import { isStorableText } from '../../core/storable-text.js';
import { unstorable } from '../http/params.js';
import type { AuthorizationRequest } from '../../core/protocol.js';
import type { ClientRecord } from '../../store/store.js';
import type { ClientLookup } from '../clients.js';
import type { ResolvedConfig } from '../config.js';
import { isJwkThumbprint } from '../dpop.js';

export interface RedirectTarget {
  client: ClientRecord;
  redirectUri: string;
  redirectUriProvided: boolean;
  state: string | null;
}

const MAX_STATE_LENGTH = 2048;
/** A nonce is stored with the code and echoed in the ID token: bounded like `state`. */
const MAX_NONCE_LENGTH = 2048;

/** The raw parameters of an authorization request; `resource` may repeat (RFC 8707), the rest may not. */
export interface AuthorizationParams {
  params: Map<string, string>;
  resources: string[];
  /** The first parameter that appeared twice, if any (an error, reported once the redirect is trusted). */
  repeated: string | undefined;
}

export function authorizationParams(entries: Iterable<[string, string]>): AuthorizationParams {
  const params = new Map<string, string>();
  const resources: string[] = [];
  const seen = new Set<string>();
  let repeated: string | undefined;
  for (const [key, value] of entries) {
    // Not even the redirect can be trusted with such a request: an error page (no protocol value holds a NUL).
    if (!isStorableText(key) || !isStorableText(value)) throw unstorable();
    if (key === 'resource') {
      resources.push(value);
      continue;
    }
    if (seen.has(key)) repeated ??= key;
    seen.add(key);
    if (value !== '') params.set(key, value);
  }
  return { params, resources, repeated };
}

/**
 * Phase one: is the redirect URI trustworthy? Until it is, every error is shown to the user
 * and never sent anywhere (OAuth 2.1 §4.1.2.1), so the errors thrown here carry no redirect and
 * their descriptions are written for the person who will read them.
 */
export async function resolveRedirectTarget({ params, repeated }: AuthorizationParams, store: ClientLookup, rules: RedirectUriRules): Promise<RedirectTarget> {
  if (repeated === 'client_id' || repeated === 'redirect_uri') {
    throw new OAuthError('invalid_request', `parameter ${repeated} must not be repeated`);
  }
  const clientId = params.get('client_id');
  if (!clientId) throw new OAuthError('invalid_request', 'The request names no client (client_id is missing).');
  const client = await store.getClient(clientId);
  // 400, not invalid_client's usual 401: nobody tried to authenticate; a person is shown a page.
  if (!client) throw new OAuthError('invalid_client', 'The application that sent you here is not registered with this server.', 400);
  const requested = params.get('redirect_uri');
  let redirectUri: string;
  if (requested === undefined) {
    if (client.redirectUris.length !== 1) {
      throw new OAuthError('invalid_request', 'The request names no redirect_uri and the application has several registered.');
    }
    redirectUri = client.redirectUris[0]!;
    // Registered under other rules (a scheme the operator no longer admits): not used now.
    if (redirectUriProblem(redirectUri, rules) !== undefined) {
      throw new OAuthError('invalid_request', 'The application registered a redirect URI this server no longer sends anyone to.');
    }
  } else {
    if (!matchRedirectUri(client.redirectUris, requested, rules)) {
      throw new OAuthError('invalid_request', 'The redirect_uri is not one the application registered, so this server will not send you there.');
    }
    redirectUri = requested;
  }
  const state = params.get('state') ?? null;
  return { client, redirectUri, redirectUriProvided: requested !== undefined, state: state !== null && state.length <= MAX_STATE_LENGTH ? state : null };
}

/**
 * The scopes a client may ask for. For clients an operator registered, the registered `scope` is a
 * limit. In the user's flow a dynamically registered client's `scope` is only what it expected to
 * need (MCP clients send the first 401 challenge's scope): holding it to that would make every
 * later step-up fail, and the user consents to each scope anyway. Where nobody consents (client
 * credentials, the jwt-bearer grant), a token gets only what an operator named: a client
 * registered with no `scope` gets the default scopes, never every scope the server supports.
 */
export function allowedScopes(client: ClientRecord, config: ResolvedConfig, flow: 'user' | 'client'): string[] {
  const allowed = contextServerScopes(client, config, flow);
  // Who the person is, never access to a context server: any client may ask the person (OPENID_SCOPES).
  return flow === 'user' ? [...new Set([...allowed, ...OPENID_SCOPES])] : allowed;
}

function contextServerScopes(client: ClientRecord, config: ResolvedConfig, flow: 'user' | 'client'): string[] {
  if (flow === 'user' && (client.scope === null || client.registeredBy === 'dynamic')) return config.scopesSupported;
  if (client.scope === null) return config.defaultScopes;
  const registered = parseScope(client.scope);
  return config.scopesSupported.filter((scope) => registered.includes(scope));
}

/** Why a machine grant's client may have no more than the defaults, for its invalid_scope: nothing to add when it has a scope list. */
export function machineScopeNote(client: ClientRecord, config: ResolvedConfig): string | undefined {
  if (client.scope !== null) return undefined;
  return `the client has no scope list, so it may have only the default scopes (${config.defaultScopes.join(' ')})`;
}

/**
 * The resource a request is for (Revision B: the `resource` parameter, canonicalised; Revision A:
 * absent, so the configured default). It must be one this server issues tokens for.
 */
export function resolveResource(resources: readonly string[], config: ResolvedConfig): string {
  if (resources.length === 0) return config.defaultResource;
  if (resources.length > 1) throw new OAuthError('invalid_target', 'name one resource per request; each token is bound to one server');
  const canonical = canonicalizeResourceUri(resources[0]!);
  if (!config.resources.includes(canonical)) {
    throw new OAuthError('invalid_target', `this server does not issue tokens for ${canonical}`);
  }
  return canonical;
}

/** Phase two: everything else; errors from here on go back to the (trusted) redirect URI. */
export function validateAuthorizationRequest(
  { params, resources, repeated }: AuthorizationParams,
  target: RedirectTarget,
  config: ResolvedConfig,
): AuthorizationRequest {
  if (repeated !== undefined) throw new OAuthError('invalid_request', `parameter ${repeated} must not be repeated`);
  if ((params.get('state')?.length ?? 0) > MAX_STATE_LENGTH) {
    throw new OAuthError('invalid_request', `state must be at most ${MAX_STATE_LENGTH} characters`);
  }
  if (params.has('request')) throw new OAuthError('request_not_supported', 'request objects are not supported');
  if (params.has('request_uri')) throw new OAuthError('request_uri_not_supported', 'request_uri is not supported');
  const responseType = params.get('response_type');
  if (!responseType) throw new OAuthError('invalid_request', 'response_type is required');
  if (responseType !== 'code') throw new OAuthError('unsupported_response_type', 'only response_type=code is supported');
  const responseMode = params.get('response_mode');
  if (responseMode !== undefined && responseMode !== 'query') {
    throw new OAuthError('invalid_request', 'only response_mode=query is supported');
  }
  if (!target.client.grantTypes.includes('authorization_code')) {
    throw new OAuthError('unauthorized_client', 'this client is not registered for the authorization_code grant');
  }
  const codeChallenge = checkCodeChallenge(params.get('code_challenge'), params.get('code_challenge_method'));
  const resource = resolveResource(resources, config);
  const scope = resolveScope(withoutOfflineAccess(parseScope(params.get('scope'))), allowedScopes(target.client, config, 'user'), config.defaultScopes);
  const prompt = (params.get('prompt') ?? '').split(' ').filter((value) => value !== '');
  if (prompt.includes('none') && prompt.length > 1) {
    throw new OAuthError('invalid_request', 'prompt=none cannot be combined with other prompt values');
  }
  const nonce = params.get('nonce');
  if (nonce !== undefined && nonce.length > MAX_NONCE_LENGTH) {
    throw new OAuthError('invalid_request', `nonce must be at most ${MAX_NONCE_LENGTH} characters`);
  }
  const dpopJkt = params.get('dpop_jkt');
  if (dpopJkt !== undefined && !isJwkThumbprint(dpopJkt)) {
    throw new OAuthError('invalid_request', 'dpop_jkt must be the JWK SHA-256 thumbprint of a DPoP key (43 base64url characters)');
  }
  return {
    clientId: target.client.clientId,
    redirectUri: target.redirectUri,
    redirectUriProvided: target.redirectUriProvided,
    state: target.state,
    scope,
    resource,
    codeChallenge,
    codeChallengeMethod: 'S256',
    prompt,
    ...(dpopJkt === undefined ? {} : { dpopJkt }),
    // OpenID Connect Core §3.1.2.1: echoed in the ID token, so kept with the code only when `openid` is granted.
    ...(nonce !== undefined && scope.includes(OPENID) ? { nonce } : {}),
  };
}
