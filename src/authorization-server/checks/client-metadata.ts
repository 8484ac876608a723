import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { OAuthError } from '../../core/errors.js';
import { isSupportedJwsAlgorithm } from '../../core/jwt.js';
import { redirectUriProblem, type RedirectUriRules } from '../../core/redirect-uri.js';
import { OPENID_SCOPES, parseScope, withoutOfflineAccess } from '../../core/scopes.js';
import { isLoopbackHost } from '../../core/uri.js';
import { DEVICE_CODE_GRANT_TYPE, JWT_BEARER_GRANT_TYPE, type GrantType, type TokenEndpointAuthMethod } from '../../core/protocol.js';

/** A requested value the server left out of the client it kept (RFC 7591 §2 lets it), and why. */
export interface DroppedValue {
  field: string;
  /** The value as requested, at most 200 characters. */
  value: string;
  reason: string;
}

export interface ValidClientMetadata {
  redirectUris: string[];
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  grantTypes: GrantType[];
  responseTypes: string[];
  clientName: string | null;
  scope: string | null;
  /** What we echo back and keep: the validated fields only. */
  metadata: Record<string, unknown>;
  /** What was asked for and left out, each with why; empty when everything was kept. */
  dropped: DroppedValue[];
}

export interface ClientMetadataOptions {
  /** Tests only: a `jwks_uri` at http://127.0.0.1 is accepted. */
  allowLoopbackJwksUri?: boolean;
  /** The private-use redirect schemes the operator admits. Default: none. */
  redirectUriRules?: RedirectUriRules;
  /** The methods this kind of client may authenticate with. Default: all four. */
  authMethods?: readonly TokenEndpointAuthMethod[];
  /** The method of a client that names none. Default: client_secret_basic (RFC 7591 §2). */
  defaultAuthMethod?: TokenEndpointAuthMethod;
  /** Why client_credentials is left out for this kind of client; absent, it is kept. */
  clientCredentialsRefusal?: string;
  /** Why the device grant is left out (the server does not serve it); absent, it is kept. */
  deviceCodeRefusal?: string;
}

const AUTH_METHODS: readonly TokenEndpointAuthMethod[] = ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'];
/** Strongest first: a key pair the client never shares, then a shared secret, then nothing. */
const METHOD_STRENGTH: readonly TokenEndpointAuthMethod[] = ['private_key_jwt', 'client_secret_basic', 'client_secret_post', 'none'];
const MAX_KEYS = 10;
/** JWK members that only a private or symmetric key has (RFC 7518 §6.2.2, §6.3.2, §6.4.1). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;
const GRANT_TYPES: readonly GrantType[] = ['authorization_code', 'refresh_token', 'client_credentials', JWT_BEARER_GRANT_TYPE, DEVICE_CODE_GRANT_TYPE];
/** Grants that get tokens with no person consenting: the registered scope is their limit. */
const UNATTENDED_GRANTS: readonly GrantType[] = ['client_credentials', JWT_BEARER_GRANT_TYPE];
const URL_FIELDS = ['client_uri', 'logo_uri', 'tos_uri', 'policy_uri'] as const;
const STRING_FIELDS = ['client_name', 'software_id', 'software_version'] as const;
const KEY_FIELDS = ['jwks', 'jwks_uri', 'token_endpoint_auth_signing_alg'] as const;
const MAX_REDIRECT_URIS = 20;
// Shown on consent pages and stored as text (PostgreSQL refuses NUL): no control characters.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

function invalid(description: string): never {
  throw new OAuthError('invalid_client_metadata', description);
}

function stringArray(body: Record<string, unknown>, field: string): string[] | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) invalid(`${field} must be an array of strings`);
  return value as string[];
}

/** A value as the log and an error description show it: short, and an object only by its kind (it may nest without end). */
function shown(value: unknown): string {
  if (typeof value === 'string') return value.slice(0, 200);
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value.join(' ').slice(0, 200);
  if (Array.isArray(value)) return '(an array)';
  if (value === null || typeof value === 'object') return value === null ? 'null' : '(an object)';
  return String(value).slice(0, 200);
}

function orList(values: readonly string[]): string {
  return values.length <= 1 ? values.join('') : `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
}

/** Why a web URL field (client_uri, logo_uri…) cannot be kept; undefined when it can. */
function webUrlProblem(value: string): string | undefined {
  if (value.length > 2000) return 'longer than 2000 characters';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'not an absolute URL';
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) return 'not an https URL';
  return undefined;
}

/** Why a display string (client_name…) cannot be kept; undefined when it can. */
function displayStringProblem(value: string): string | undefined {
  if (value.trim() === '' || value.length > 200) return 'not a non-empty string of at most 200 characters';
  if (CONTROL.test(value)) return 'it contains control characters';
  return undefined;
}

/**
 * Validates RFC 7591 client metadata (a registration, or a client ID metadata document) and
 * keeps what can be kept (RFC 7591 §2 lets the server replace requested values):
 * - left out, each in `dropped` with why: grant types, response types and scopes this server
 *   does not support or will not give this client, redirect URIs that break the rules (as long
 *   as one remains), keys of a client that does not use private_key_jwt, an unknown
 *   application_type, and display fields (names, URLs, contacts) that cannot be shown safely;
 * - refused: a field of the wrong JSON type (what the client meant is unknown), no
 *   authentication method this server accepts for the client, no grant type left, no redirect
 *   URI left for the authorization_code grant, unusable keys for private_key_jwt, and a client
 *   that gets tokens unattended with none of its scopes supported.
 * Unknown fields are ignored (RFC 7591 §2).
 */
export function validateClientMetadata(
  body: Record<string, unknown>,
  scopesSupported: readonly string[],
  options: ClientMetadataOptions = {},
): ValidClientMetadata {
  const dropped: DroppedValue[] = [];
  const drop = (field: string, value: unknown, reason: string): void => void dropped.push({ field, value: shown(value), reason });

  const method = chooseAuthMethod(body, options, drop);
  const grantTypes = keptGrantTypes(body, method, options, drop);
  const responseTypes = keptResponseTypes(body, grantTypes, drop);

  // SEP-837 / OpenID registration: a web client's redirect URIs are https on a real host; a
  // native client's are loopback or https (RFC 8252 §7.2 claimed URLs). Absent (or a value we do
  // not know, left out), both are accepted, so clients that do not send it keep working.
  let applicationType = body.application_type;
  if (applicationType !== undefined && typeof applicationType !== 'string') invalid('application_type must be a string');
  if (applicationType !== undefined && applicationType !== 'native' && applicationType !== 'web') {
    drop('application_type', applicationType, 'only native or web is known; the client is kept without one');
    applicationType = undefined;
  }
  const redirectUris = keptRedirectUris(body, grantTypes, applicationType === 'web', options.redirectUriRules ?? {}, drop);

  // RFC 9449 §5.2: true makes every token request of this client carry a DPoP proof.
  const dpopBound = body.dpop_bound_access_tokens;
  if (dpopBound !== undefined && typeof dpopBound !== 'boolean') invalid('dpop_bound_access_tokens must be true or false');

  const metadata: Record<string, unknown> = {
    redirect_uris: redirectUris,
    token_endpoint_auth_method: method,
    grant_types: grantTypes,
    response_types: responseTypes,
    ...(applicationType !== undefined ? { application_type: applicationType } : {}),
    ...(dpopBound !== undefined ? { dpop_bound_access_tokens: dpopBound } : {}),
  };
  for (const field of [...STRING_FIELDS, ...URL_FIELDS]) {
    const value = body[field];
    if (value === undefined) continue;
    if (typeof value !== 'string') invalid(`${field} must be a string`);
    const problem = (STRING_FIELDS as readonly string[]).includes(field) ? displayStringProblem(value) : webUrlProblem(value);
    if (problem) drop(field, value, problem);
    else metadata[field] = value;
  }
  const contacts = stringArray(body, 'contacts');
  if (contacts !== undefined) {
    if (contacts.length <= 10 && contacts.every((contact) => contact.length <= 200 && !CONTROL.test(contact))) metadata.contacts = contacts;
    else drop('contacts', contacts, 'not at most 10 entries of at most 200 characters without control characters');
  }
  const scope = keptScope(body, scopesSupported, grantTypes, drop);
  if (scope !== null) metadata.scope = scope;
  if (method === 'private_key_jwt') Object.assign(metadata, clientKeys(body, options));
  else
    for (const field of KEY_FIELDS) if (body[field] !== undefined) drop(field, body[field], `only a private_key_jwt client has keys; this one uses ${method}`);
  return {
    redirectUris,
    tokenEndpointAuthMethod: method,
    grantTypes,
    responseTypes,
    clientName: (metadata.client_name as string | undefined) ?? null,
    scope,
    metadata,
    dropped,
  };
}

type Drop = (field: string, value: unknown, reason: string) => void;

/**
 * The strongest method both sides support: the client's `token_endpoint_auth_method` is its
 * preference, taken when this server accepts it; `token_endpoint_auth_methods_supported` (SEP-3149,
 * in documents) lists what else it can do. private_key_jwt counts only for a client that gives keys.
 */
function chooseAuthMethod(body: Record<string, unknown>, options: ClientMetadataOptions, drop: Drop): TokenEndpointAuthMethod {
  const allowed = options.authMethods ?? AUTH_METHODS;
  // Only an absent field takes the default: `null` is a wrong value like any other, refused here.
  const preferred = body.token_endpoint_auth_method;
  if (preferred !== undefined && typeof preferred !== 'string') invalid(`token_endpoint_auth_method must be ${orList(allowed)}`);
  const listed = stringArray(body, 'token_endpoint_auth_methods_supported');
  const asked = preferred ?? (listed === undefined ? (options.defaultAuthMethod ?? 'client_secret_basic') : undefined);
  const offered = [...new Set([...(asked === undefined ? [] : [asked]), ...(listed ?? [])])] as TokenEndpointAuthMethod[];
  const hasKeys = body.jwks !== undefined || body.jwks_uri !== undefined;
  const usable = offered.filter((method) => allowed.includes(method) && (method !== 'private_key_jwt' || hasKeys));
  if (usable.length === 0) {
    // Its one way in is private_key_jwt, without keys: the key check says what is missing.
    if (offered.includes('private_key_jwt') && allowed.includes('private_key_jwt')) return 'private_key_jwt';
    invalid(`token_endpoint_auth_method must be ${orList(allowed)}${listed === undefined ? '' : ' (none of those offered is)'}`);
  }
  if (asked !== undefined && usable.includes(asked as TokenEndpointAuthMethod)) return asked as TokenEndpointAuthMethod;
  const chosen = METHOD_STRENGTH.find((method) => usable.includes(method))!;
  if (asked !== undefined) {
    const why =
      asked === 'private_key_jwt' && allowed.includes('private_key_jwt')
        ? 'private_key_jwt needs jwks or jwks_uri'
        : `not accepted for this client (${orList(allowed)})`;
    drop('token_endpoint_auth_method', asked, `${why}; ${chosen} chosen from token_endpoint_auth_methods_supported`);
  }
  return chosen;
}

/** The requested grant types this client may have, in the order asked; at least one, or a refusal. */
function keptGrantTypes(body: Record<string, unknown>, method: TokenEndpointAuthMethod, options: ClientMetadataOptions, drop: Drop): GrantType[] {
  const requested = [...new Set(stringArray(body, 'grant_types') ?? ['authorization_code'])];
  const refusals: string[] = [];
  const leaveOut = (grant: string, reason: string): void => {
    drop('grant_types', grant, reason);
    refusals.push(`${shown(grant)}: ${reason}`);
  };
  const kept: GrantType[] = [];
  for (const grant of requested) {
    if (!GRANT_TYPES.includes(grant as GrantType)) leaveOut(grant, 'not a grant type this server supports');
    else if (grant === 'client_credentials' && method === 'none') leaveOut(grant, 'needs a confidential client (token_endpoint_auth_method other than none)');
    else if (grant === 'client_credentials' && options.clientCredentialsRefusal) leaveOut(grant, options.clientCredentialsRefusal);
    else if (grant === DEVICE_CODE_GRANT_TYPE && options.deviceCodeRefusal) leaveOut(grant, options.deviceCodeRefusal);
    // An ID-JAG is presented by a client that authenticates; workload clients are made by the server.
    else if (grant === JWT_BEARER_GRANT_TYPE && method === 'none') leaveOut(grant, 'needs a confidential client (token_endpoint_auth_method other than none)');
    else kept.push(grant as GrantType);
  }
  if (kept.includes('refresh_token') && !kept.includes('authorization_code') && !kept.includes(DEVICE_CODE_GRANT_TYPE)) {
    kept.splice(kept.indexOf('refresh_token'), 1);
    leaveOut('refresh_token', `issued only with authorization_code or ${DEVICE_CODE_GRANT_TYPE}`);
  }
  if (kept.length === 0) invalid(`no grant type this server can give this client: ${requested.length === 0 ? 'grant_types is empty' : refusals.join('; ')}`);
  return kept;
}

/** `code` only (OAuth 2.1), and it goes with the authorization_code grant (RFC 7591 §2.1). */
function keptResponseTypes(body: Record<string, unknown>, grantTypes: GrantType[], drop: Drop): string[] {
  const requested = [...new Set(stringArray(body, 'response_types') ?? (grantTypes.includes('authorization_code') ? ['code'] : []))];
  const kept = requested.filter((type) => type === 'code');
  for (const type of requested) if (type !== 'code') drop('response_types', type, 'only code is supported');
  if (grantTypes.includes('authorization_code') !== kept.includes('code')) {
    invalid('grant_types authorization_code and response_types code go together (RFC 7591 §2.1)');
  }
  return kept;
}

/**
 * The redirect URIs that pass the rules; the others are left out, as long as one remains for a
 * client that needs one. None left: refused, naming why each was.
 */
function keptRedirectUris(body: Record<string, unknown>, grantTypes: GrantType[], web: boolean, rules: RedirectUriRules, drop: Drop): string[] {
  const requested = [...new Set(stringArray(body, 'redirect_uris') ?? [])];
  if (grantTypes.includes('authorization_code') && requested.length === 0) {
    throw new OAuthError('invalid_redirect_uri', 'redirect_uris is required for the authorization_code grant');
  }
  if (requested.length > MAX_REDIRECT_URIS) throw new OAuthError('invalid_redirect_uri', `at most ${MAX_REDIRECT_URIS} redirect URIs`);
  const kept: string[] = [];
  const refusals: string[] = [];
  for (const uri of requested) {
    const problem =
      redirectUriProblem(uri, rules) ??
      (web && isLoopbackHost(new URL(uri).hostname) ? "a web application's redirect URIs must be https on a public host, not loopback" : undefined);
    if (problem === undefined) kept.push(uri);
    else {
      drop('redirect_uris', uri, problem);
      refusals.push(`${shown(uri)}: ${problem}`);
    }
  }
  if (kept.length === 0 && refusals.length > 0 && grantTypes.includes('authorization_code')) {
    throw new OAuthError('invalid_redirect_uri', `no redirect URI can be registered: ${refusals.join('; ')}`);
  }
  return kept;
}

/**
 * The requested scopes this server supports. A client that gets tokens with no person consenting
 * is held to its registered scope, so for it none supported is a refusal, not "no limit".
 */
function keptScope(body: Record<string, unknown>, scopesSupported: readonly string[], grantTypes: GrantType[], drop: Drop): string | null {
  if (body.scope === undefined) return null;
  if (typeof body.scope !== 'string') invalid('scope must be a space-separated string');
  let scopes: string[];
  try {
    // offline_access asks for a refresh token, which the grant types decide: never kept as a scope.
    scopes = withoutOfflineAccess(parseScope(body.scope));
  } catch {
    invalid('scope contains an invalid character');
  }
  const unknown = scopes.filter((value) => !scopesSupported.includes(value));
  const kept = scopes.filter((value) => scopesSupported.includes(value));
  if (unknown.length > 0 && kept.length === 0 && grantTypes.some((grant) => UNATTENDED_GRANTS.includes(grant))) {
    invalid(`scope not supported: ${unknown.join(' ')}`);
  }
  // The OpenID scopes are asked of the person in each authorization request, by any client (OPENID_SCOPES).
  for (const value of unknown)
    drop('scope', value, OPENID_SCOPES.includes(value) ? 'asked for in an authorization request, never registered' : 'not a scope this server supports');
  return kept.length === 0 ? null : kept.join(' ');
}

/** What was left out, for the log: each value and why, in one line. */
export function describeDropped(dropped: readonly DroppedValue[]): string {
  return dropped.map(({ field, value, reason }) => `${field} ${value}: ${reason}`).join('; ');
}

/**
 * The public keys of a private_key_jwt client (RFC 7591 §2): exactly one of `jwks` (the keys
 * themselves) or `jwks_uri` (https, where the client publishes them), and the one signing
 * algorithm it will use, if it names one. Only public asymmetric keys: a private member would
 * mean the client leaked its key to us, and a symmetric key would turn the client's "public" key
 * into an HMAC secret anyone reading the metadata knows.
 */
function clientKeys(body: Record<string, unknown>, options: ClientMetadataOptions): Record<string, unknown> {
  const { jwks, jwks_uri: jwksUri, token_endpoint_auth_signing_alg: signingAlg } = body;
  if ((jwks === undefined) === (jwksUri === undefined)) invalid('a private_key_jwt client gives exactly one of jwks and jwks_uri');
  const keys: Record<string, unknown> = jwks === undefined ? { jwks_uri: jwksUriOf(jwksUri, options) } : { jwks: publicKeySet(jwks) };
  if (signingAlg !== undefined) {
    if (!isSupportedJwsAlgorithm(signingAlg))
      invalid('token_endpoint_auth_signing_alg must be an asymmetric algorithm this server verifies (none and HMAC never are)');
    keys.token_endpoint_auth_signing_alg = signingAlg;
  }
  return keys;
}

function jwksUriOf(value: unknown, options: ClientMetadataOptions): string {
  if (typeof value !== 'string' || value.length > 2000) invalid('jwks_uri must be a URL string');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    invalid('jwks_uri must be an absolute URL');
  }
  const testLoopback = options.allowLoopbackJwksUri === true && url.protocol === 'http:' && url.hostname === '127.0.0.1';
  if (url.protocol !== 'https:' && !testLoopback) invalid('jwks_uri must be an https URL');
  if (url.username || url.password || url.hash) invalid('jwks_uri must not carry credentials or a fragment');
  return url.href;
}

function publicKeySet(value: unknown): { keys: Record<string, unknown>[] } {
  const keys = (value as { keys?: unknown } | null)?.keys;
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !Array.isArray(keys))
    invalid('jwks must be a JSON Web Key Set: an object with a keys array');
  if (keys.length === 0 || keys.length > MAX_KEYS) invalid(`jwks must hold between 1 and ${MAX_KEYS} keys`);
  return {
    keys: keys.map((key: unknown, index) => {
      if (typeof key !== 'object' || key === null || Array.isArray(key)) invalid(`jwks key ${index} is not a JSON object`);
      const jwk = key as Record<string, unknown>;
      if (jwk.kty === 'oct') invalid(`jwks key ${index} is symmetric (kty oct); only public keys are accepted`);
      const secret = PRIVATE_MEMBERS.find((member) => member in jwk);
      if (secret) invalid(`jwks key ${index} holds the private member ${secret}; publish only the public key`);
      if (jwk.kid !== undefined && (typeof jwk.kid !== 'string' || jwk.kid.length > 200)) invalid(`jwks key ${index}: kid must be a string`);
      try {
        createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
      } catch {
        invalid(`jwks key ${index} is not a public key this server can read`);
      }
      return jwk;
    }),
  };
}
