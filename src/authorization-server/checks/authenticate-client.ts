import { OAuthError } from '../../core/errors.js';
import { hashSecret, safeEqual } from '../../core/secrets.js';
import { isStorableText } from '../../core/storable-text.js';
import type { TokenEndpointAuthMethod } from '../../core/protocol.js';
import type { ClientRecord } from '../../store/store.js';
import { clientLookup } from '../clients.js';
import type { BaseServices } from '../services.js';
import type { ClientKeys } from '../assertions/client-keys.js';
import type { ClientLookupServices } from '../clients.js';
import type { Params } from '../http/params.js';
import { authenticateWithAssertion } from './client-assertion.js';
import type { EndpointRequest } from '../http/request.js';

const BASIC_CHALLENGE = { 'WWW-Authenticate': 'Basic realm="context-auth", charset="UTF-8"' };
const UNKNOWN_SECRET_HASH = hashSecret('no client has this secret');

function basicCredentials(header: string): { clientId: string; secret: string } {
  const encoded = header.slice(6).trim();
  let decoded: string;
  try {
    decoded = Buffer.from(encoded, 'base64').toString('utf8');
  } catch {
    throw new OAuthError('invalid_client', 'malformed Basic credentials', 401, BASIC_CHALLENGE);
  }
  const colon = decoded.indexOf(':');
  if (!/^[A-Za-z0-9+/]+=*$/.test(encoded) || colon < 0) {
    throw new OAuthError('invalid_client', 'malformed Basic credentials', 401, BASIC_CHALLENGE);
  }
  try {
    // RFC 6749 §2.3.1: both parts are form-urlencoded before base64.
    const clientId = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
    const secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
    // A NUL is no client id (and no store looks one up): malformed, like the rest.
    if (isStorableText(clientId) && isStorableText(secret)) return { clientId, secret };
  } catch {
    // decodeURIComponent refused it: malformed, below.
  }
  throw new OAuthError('invalid_client', 'malformed Basic credentials', 401, BASIC_CHALLENGE);
}

/** The longest client id an audit event repeats from a request: a registered id is far shorter. */
const LONGEST_LOGGED_CLIENT_ID = 256;

/**
 * The client id a request names, by its Basic credentials or its client_id parameter, whether or
 * not it authenticates (for the audit log: never the secret); undefined when it names none we
 * could read, or one too long to be a client's.
 */
export function claimedClientId(request: EndpointRequest, params: Params): string | undefined {
  const authorization = request.headers.authorization;
  let clientId = params.get('client_id');
  if (authorization !== null && /^basic /i.test(authorization)) {
    try {
      clientId = basicCredentials(authorization).clientId;
    } catch {
      // Malformed: the form's client_id, if any, is all the request says.
    }
  }
  return clientId !== undefined && clientId.length <= LONGEST_LOGGED_CLIENT_ID ? clientId : undefined;
}

/** What authenticating a client needs: finding it (its metadata document too), and the keys of private_key_jwt clients. */
export type ClientAuthenticationServices = ClientLookupServices & BaseServices & { clientKeys: ClientKeys };

/**
 * Authenticates the client of a token, revocation, introspection or device authorization request (RFC 6749 §2.3,
 * OAuth 2.1 §2.4): exactly one method, the one the client registered, secrets compared in
 * constant time against the stored hash, client assertions (private_key_jwt) checked in
 * client-assertion.ts. Any failure is invalid_client (401); two methods at once, invalid_request.
 */
export async function authenticateClient(ctx: ClientAuthenticationServices, request: EndpointRequest, params: Params): Promise<ClientRecord> {
  const store = clientLookup(ctx, request);
  const authorization = request.headers.authorization;
  const usesBasic = authorization !== null && /^basic /i.test(authorization);
  const formSecret = params.get('client_secret');
  if (params.has('client_assertion') || params.has('client_assertion_type')) {
    if (authorization !== null || formSecret !== undefined) {
      throw new OAuthError('invalid_request', 'use one client authentication method, not a client assertion together with Basic or client_secret');
    }
    return authenticateWithAssertion(ctx, store, params);
  }
  if (authorization !== null && !usesBasic) {
    throw new OAuthError('invalid_client', 'unsupported Authorization scheme; use Basic or form parameters', 401, BASIC_CHALLENGE);
  }
  if (usesBasic && formSecret !== undefined) {
    throw new OAuthError('invalid_request', 'use one client authentication method, not Basic and client_secret together');
  }

  let method: TokenEndpointAuthMethod;
  let clientId: string | undefined;
  let secret: string | undefined;
  if (usesBasic) {
    ({ clientId, secret } = basicCredentials(authorization));
    const formId = params.get('client_id');
    if (formId !== undefined && formId !== clientId) {
      throw new OAuthError('invalid_request', 'client_id does not match the Basic credentials');
    }
    method = 'client_secret_basic';
  } else if (formSecret !== undefined) {
    clientId = params.get('client_id');
    secret = formSecret;
    method = 'client_secret_post';
  } else {
    clientId = params.get('client_id');
    method = 'none';
  }
  const challenge = usesBasic ? BASIC_CHALLENGE : {};
  if (!clientId) throw new OAuthError('invalid_client', 'client authentication is required', 401, challenge);

  const client = await store.getClient(clientId);
  if (method === 'none') {
    if (!client) throw new OAuthError('invalid_client', 'unknown client', 401, challenge);
    if (client.tokenEndpointAuthMethod === 'private_key_jwt') throw mustUseAssertion(challenge);
    if (client.tokenEndpointAuthMethod !== 'none') {
      throw new OAuthError('invalid_client', 'this client must authenticate with its secret', 401, challenge);
    }
    return client;
  }
  // Hash and compare even for an unknown client so the answer takes the same time.
  const matches = safeEqual(hashSecret(secret ?? ''), client?.clientSecretHash ?? UNKNOWN_SECRET_HASH);
  if (!client || !client.clientSecretHash || !matches) {
    if (client?.tokenEndpointAuthMethod === 'private_key_jwt') throw mustUseAssertion(challenge);
    throw new OAuthError('invalid_client', 'client authentication failed', 401, challenge);
  }
  if (client.tokenEndpointAuthMethod !== method) {
    throw new OAuthError('invalid_client', `this client is registered for ${client.tokenEndpointAuthMethod}`, 401, challenge);
  }
  return client;
}

function mustUseAssertion(challenge: Record<string, string>): OAuthError {
  return new OAuthError(
    'invalid_client',
    'this client is registered for private_key_jwt: it authenticates with a client assertion, not a secret',
    401,
    challenge,
  );
}
