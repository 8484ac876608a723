import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { OAuthError } from '../../core/errors.js';
import { isSupportedJwsAlgorithm } from '../../core/jwt.js';
import { redirectUriProblem } from '../../core/redirect-uri.js';
import { parseScope, withoutOfflineAccess } from '../../core/scopes.js';
import { isLoopbackHost } from '../../core/uri.js';
import { DEVICE_CODE_GRANT_TYPE, JWT_BEARER_GRANT_TYPE, type GrantType, type TokenEndpointAuthMethod } from '../../core/protocol.js';

export interface ValidClientMetadata {
  redirectUris: string[];
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  grantTypes: GrantType[];
  responseTypes: string[];
  clientName: string | null;
  scope: string | null;
  /** What we echo back and keep: the validated fields only. */
  metadata: Record<string, unknown>;
}

export interface ClientMetadataOptions {
  /** Tests only: a `jwks_uri` at http://127.0.0.1 is accepted. */
  allowLoopbackJwksUri?: boolean;
}

const AUTH_METHODS: readonly TokenEndpointAuthMethod[] = ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'];
const MAX_KEYS = 10;
/** JWK members that only a private or symmetric key has (RFC 7518 §6.2.2, §6.3.2, §6.4.1). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;
const GRANT_TYPES: readonly GrantType[] = ['authorization_code', 'refresh_token', 'client_credentials', JWT_BEARER_GRANT_TYPE, DEVICE_CODE_GRANT_TYPE];
const URL_FIELDS = ['client_uri', 'logo_uri', 'tos_uri', 'policy_uri'] as const;
const STRING_FIELDS = ['client_name', 'software_id', 'software_version'] as const;
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

function webUrl(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.length > 2000) invalid(`${field} must be a URL string`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    invalid(`${field} must be an absolute URL`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    invalid(`${field} must be an https URL`);
  }
  return value;
}

/**
 * Validates an RFC 7591 registration request field by field. Unknown fields are ignored
 * (RFC 7591 §2); fields we cannot honour (keys for a client that does not use private_key_jwt)
 * are refused rather than accepted and silently dropped.
 */
export function validateClientMetadata(body: Record<string, unknown>, scopesSupported: readonly string[], options: ClientMetadataOptions = {}): ValidClientMetadata {
  // Only an absent field takes the default; `null` is a wrong value like any other (not `??`).
  const method = body.token_endpoint_auth_method === undefined ? 'client_secret_basic' : body.token_endpoint_auth_method;
  if (typeof method !== 'string' || !AUTH_METHODS.includes(method as TokenEndpointAuthMethod)) {
    invalid(`token_endpoint_auth_method must be one of ${AUTH_METHODS.join(', ')}`);
  }
  const grantTypes = stringArray(body, 'grant_types') ?? ['authorization_code'];
  for (const grant of grantTypes) {
    if (!GRANT_TYPES.includes(grant as GrantType)) invalid(`grant type ${grant} is not supported`);
  }
  const responseTypes = stringArray(body, 'response_types') ?? (grantTypes.includes('authorization_code') ? ['code'] : []);
  for (const type of responseTypes) {
    if (type !== 'code') invalid(`response type ${type} is not supported; only code`);
  }
  if (grantTypes.includes('authorization_code') !== responseTypes.includes('code')) {
    invalid('grant_types authorization_code and response_types code go together (RFC 7591 §2.1)');
  }
  if (grantTypes.includes('refresh_token') && !grantTypes.includes('authorization_code') && !grantTypes.includes(DEVICE_CODE_GRANT_TYPE)) {
    invalid(`refresh_token is issued only with authorization_code or ${DEVICE_CODE_GRANT_TYPE}`);
  }
  if (grantTypes.includes('client_credentials') && method === 'none') {
    invalid('client_credentials needs a confidential client (token_endpoint_auth_method other than none)');
  }
  // An ID-JAG is presented by a client that authenticates; workload clients are made by the server.
  if (grantTypes.includes(JWT_BEARER_GRANT_TYPE) && method === 'none') {
    invalid(`${JWT_BEARER_GRANT_TYPE} needs a confidential client (token_endpoint_auth_method other than none)`);
  }

  // SEP-837 / OpenID registration: a web client's redirect URIs are https on a real host; a
  // native client's are loopback or https (RFC 8252 §7.2 claimed URLs). Absent, both are accepted
  // as before, so clients that do not send it keep working.
  const applicationType = body.application_type;
  if (applicationType !== undefined && applicationType !== 'native' && applicationType !== 'web') invalid('application_type must be native or web');

  const redirectUris = stringArray(body, 'redirect_uris') ?? [];
  if (grantTypes.includes('authorization_code') && redirectUris.length === 0) {
    throw new OAuthError('invalid_redirect_uri', 'redirect_uris is required for the authorization_code grant');
  }
  if (redirectUris.length > MAX_REDIRECT_URIS) throw new OAuthError('invalid_redirect_uri', `at most ${MAX_REDIRECT_URIS} redirect URIs`);
  for (const uri of redirectUris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new OAuthError('invalid_redirect_uri', `${problem}: ${uri.slice(0, 200)}`);
    if (applicationType === 'web' && isLoopbackHost(new URL(uri).hostname)) {
      throw new OAuthError('invalid_redirect_uri', `a web application's redirect URIs must be https on a public host, not loopback: ${uri.slice(0, 200)}`);
    }
  }

  // RFC 9449 §5.2: true makes every token request of this client carry a DPoP proof.
  const dpopBound = body.dpop_bound_access_tokens;
  if (dpopBound !== undefined && typeof dpopBound !== 'boolean') invalid('dpop_bound_access_tokens must be true or false');

  const metadata: Record<string, unknown> = {
    redirect_uris: [...new Set(redirectUris)],
    token_endpoint_auth_method: method,
    grant_types: [...new Set(grantTypes)],
    response_types: [...new Set(responseTypes)],
    ...(applicationType !== undefined ? { application_type: applicationType } : {}),
    ...(dpopBound !== undefined ? { dpop_bound_access_tokens: dpopBound } : {}),
  };
  for (const field of STRING_FIELDS) {
    const value = body[field];
    if (value === undefined) continue;
    if (typeof value !== 'string' || value.trim() === '' || value.length > 200) invalid(`${field} must be a non-empty string of at most 200 characters`);
    if (CONTROL.test(value)) invalid(`${field} must not contain control characters`);
    metadata[field] = value;
  }
  for (const field of URL_FIELDS) {
    if (body[field] !== undefined) metadata[field] = webUrl(field, body[field]);
  }
  const contacts = stringArray(body, 'contacts');
  if (contacts !== undefined) {
    if (contacts.length > 10 || contacts.some((contact) => contact.length > 200)) invalid('contacts: at most 10 entries of 200 characters');
    if (contacts.some((contact) => CONTROL.test(contact))) invalid('contacts must not contain control characters');
    metadata.contacts = contacts;
  }
  let scope: string | null = null;
  if (body.scope !== undefined) {
    if (typeof body.scope !== 'string') invalid('scope must be a space-separated string');
    let scopes: string[];
    try {
      scopes = withoutOfflineAccess(parseScope(body.scope));
    } catch {
      invalid('scope contains an invalid character');
    }
    const unknown = scopes.filter((value) => !scopesSupported.includes(value));
    if (unknown.length > 0) invalid(`scope not supported: ${unknown.join(' ')}`);
    scope = scopes.join(' ');
    metadata.scope = scope;
  }
  Object.assign(metadata, clientKeys(body, method, options));
  return {
    redirectUris: metadata.redirect_uris as string[],
    tokenEndpointAuthMethod: method as TokenEndpointAuthMethod,
    grantTypes: metadata.grant_types as GrantType[],
    responseTypes: metadata.response_types as string[],
    clientName: (metadata.client_name as string | undefined) ?? null,
    scope,
    metadata,
  };
}

/**
 * The public keys of a private_key_jwt client (RFC 7591 §2): exactly one of `jwks` (the keys
 * themselves) or `jwks_uri` (https, where the client publishes them), and the one signing
 * algorithm it will use, if it names one. Only public asymmetric keys: a private member would
 * mean the client leaked its key to us, and a symmetric key would turn the client's "public" key
 * into an HMAC secret anyone reading the metadata knows.
 */
function clientKeys(body: Record<string, unknown>, method: string, options: ClientMetadataOptions): Record<string, unknown> {
  const { jwks, jwks_uri: jwksUri, token_endpoint_auth_signing_alg: signingAlg } = body;
  if (method !== 'private_key_jwt') {
    if (jwks !== undefined || jwksUri !== undefined) invalid('jwks and jwks_uri are only for token_endpoint_auth_method private_key_jwt');
    if (signingAlg !== undefined) invalid('token_endpoint_auth_signing_alg is only for token_endpoint_auth_method private_key_jwt');
    return {};
  }
  if ((jwks === undefined) === (jwksUri === undefined)) invalid('a private_key_jwt client gives exactly one of jwks and jwks_uri');
  const keys: Record<string, unknown> = jwks === undefined ? { jwks_uri: jwksUriOf(jwksUri, options) } : { jwks: publicKeySet(jwks) };
  if (signingAlg !== undefined) {
    if (!isSupportedJwsAlgorithm(signingAlg)) invalid('token_endpoint_auth_signing_alg must be an asymmetric algorithm this server verifies (none and HMAC never are)');
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
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !Array.isArray(keys)) invalid('jwks must be a JSON Web Key Set: an object with a keys array');
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
