import * as oauth from 'oauth4webapi';
import { ClientError } from './errors.js';
import { DEVICE_CODE_GRANT } from './device.js';
import { startLoopback } from './loopback.js';
import { requestOptions } from './oauth-requests.js';
import type { Discovery } from './discovery.js';
import type { StoredClient, TokenStore } from './types.js';
import { failureReason } from './network-errors.js';

export interface ClientRegistrationOptions {
  /** A client registered by other means (spec: "Dynamic client registration", rule 2). */
  clientId?: string;
  clientSecret?: string;
  /** Name shown on consent pages when registering dynamically (default "context-auth"). */
  clientName?: string;
  /**
   * What this application's registrations and tokens are filed under in a store that several
   * applications share (the default credentials file is one): default `clientMetadataUrl`, else
   * `clientName`. Two programs with one id are one client to the authorization server.
   */
  applicationId?: string;
  /**
   * An https URL of a client ID metadata document describing this client: used as the client id
   * where the authorization server says it supports such documents, instead of registering.
   */
  clientMetadataUrl?: string;
  /** Asks the person for a client id (and secret) when nothing else works; undefined means they gave none. */
  askForClient?: (issuer: string) => Promise<{ clientId: string; clientSecret?: string } | undefined>;
  fetch?: typeof fetch;
  now?: () => number;
}

/** The name registered when the application gives none. */
export const DEFAULT_CLIENT_NAME = 'context-auth';

/** The application a client's registrations and tokens are filed under (see `applicationId`). */
export function applicationOf(options: Pick<ClientRegistrationOptions, 'applicationId' | 'clientMetadataUrl' | 'clientName'>): string {
  const application = options.applicationId ?? options.clientMetadataUrl ?? options.clientName ?? DEFAULT_CLIENT_NAME;
  if (application.trim() === '') {
    throw new ClientError('registration_unavailable', 'the application id (applicationId, else clientMetadataUrl, else clientName) is empty');
  }
  return application;
}

/**
 * What the client is for: the browser flow, with its loopback redirect URI, or the device flow
 * (RFC 8628), which has none.
 */
export type ClientPurpose = { redirectUri: string } | { device: true };

/** Whether a registration made earlier can do what this sign-in needs. */
function servesPurpose(client: StoredClient, purpose: ClientPurpose): boolean {
  // Registrations from before grantTypes was kept were all for the browser flow.
  if ('device' in purpose) return client.grantTypes?.includes(DEVICE_CODE_GRANT) === true;
  return client.grantTypes === undefined || client.grantTypes.includes('authorization_code');
}

/**
 * The client to use at this authorization server, in order: the one given in options; our client
 * ID metadata document's URL where the server accepts those; one registered earlier (cached per authorization server) that serves the same flow; a new one from dynamic registration (a
 * public client with our loopback redirect URI, or for the device flow none); one the person types in; else a clear error.
 */
export async function obtainClient(
  discovery: Discovery,
  purposeOrRedirectUri: ClientPurpose | string,
  store: TokenStore,
  options: ClientRegistrationOptions,
): Promise<StoredClient> {
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const issuer = discovery.issuer;
  const application = applicationOf(options);
  const purpose: ClientPurpose = typeof purposeOrRedirectUri === 'string' ? { redirectUri: purposeOrRedirectUri } : purposeOrRedirectUri;
  const redirectUris = 'redirectUri' in purpose ? [purpose.redirectUri] : [];
  if (options.clientId) {
    return {
      application,
      issuer,
      clientId: options.clientId,
      ...(options.clientSecret ? { clientSecret: options.clientSecret } : {}),
      tokenEndpointAuthMethod: options.clientSecret ? preferredSecretMethod(discovery) : 'none',
      redirectUris,
      source: 'options',
      createdAt: now(),
    };
  }
  if (options.clientMetadataUrl && discovery.authorizationServer.client_id_metadata_document_supported === true) {
    return {
      application,
      issuer,
      clientId: options.clientMetadataUrl,
      tokenEndpointAuthMethod: 'none',
      redirectUris,
      source: 'options',
      createdAt: now(),
    };
  }
  const cached = await store.getClient(application, issuer);
  if (cached && servesPurpose(cached, purpose)) return cached;

  if (discovery.authorizationServer.registration_endpoint) {
    // Registered for every flow the server offers, so this is the application's one registration there;
    // one from before that lacks this flow is replaced.
    const registered = await register(discovery, application, purpose, options.clientName ?? DEFAULT_CLIENT_NAME, options.fetch ?? fetch, now);
    await store.saveClient(registered);
    return registered;
  }
  const typed = options.askForClient ? await options.askForClient(issuer) : undefined;
  if (typed?.clientId) {
    const client: StoredClient = {
      application,
      issuer,
      clientId: typed.clientId,
      ...(typed.clientSecret ? { clientSecret: typed.clientSecret } : {}),
      tokenEndpointAuthMethod: typed.clientSecret ? preferredSecretMethod(discovery) : 'none',
      redirectUris,
      source: 'prompt',
      createdAt: now(),
    };
    await store.saveClient(client);
    return client;
  }
  throw new ClientError(
    'registration_unavailable',
    `${issuer} offers no dynamic client registration: register a client there and pass its client id (and secret)`,
  );
}

/** Basic unless the server says it supports only post (RFC 8414 default is basic). */
export function preferredSecretMethod(discovery: Discovery): 'client_secret_basic' | 'client_secret_post' {
  const supported = discovery.authorizationServer.token_endpoint_auth_methods_supported;
  return Array.isArray(supported) && !supported.includes('client_secret_basic') && supported.includes('client_secret_post')
    ? 'client_secret_post'
    : 'client_secret_basic';
}

/**
 * The redirect URI a registration names: the browser flow's loopback; for a device sign-in at a
 * server that also has the browser flow, a loopback port free now, which a later browser sign-in
 * tries first (any port does at a server that follows RFC 8252 §7.3); else none.
 */
async function registeredRedirectUri(as: Discovery['authorizationServer'], purpose: ClientPurpose): Promise<string | undefined> {
  if ('redirectUri' in purpose) return purpose.redirectUri;
  if (!offersBrowserFlow(as)) return undefined;
  const reserved = await startLoopback();
  await reserved.close();
  return reserved.redirectUri;
}

const offersBrowserFlow = (as: Discovery['authorizationServer']): boolean =>
  typeof as.authorization_endpoint === 'string' && (!Array.isArray(as.response_types_supported) || as.response_types_supported.includes('code'));

const offersDeviceFlow = (as: Discovery['authorizationServer']): boolean =>
  typeof as.device_authorization_endpoint === 'string' && (!Array.isArray(as.grant_types_supported) || as.grant_types_supported.includes(DEVICE_CODE_GRANT));

async function register(
  discovery: Discovery,
  application: string,
  purpose: ClientPurpose,
  clientName: string,
  fetchImpl: typeof fetch,
  now: () => number,
): Promise<StoredClient> {
  const as = discovery.authorizationServer;
  // Every way this application signs in that the server offers, the one asked for first: the
  // browser flow, the device flow (with or without DPoP, which binds tokens, not the client).
  const redirectUri = await registeredRedirectUri(as, purpose);
  const grantTypes = [
    ...(redirectUri !== undefined ? ['authorization_code'] : []),
    ...('device' in purpose || offersDeviceFlow(as) ? [DEVICE_CODE_GRANT] : []),
    'refresh_token',
  ];
  let response: Response;
  try {
    response = await oauth.dynamicClientRegistrationRequest(
      as,
      {
        client_name: clientName,
        // A program on the person's machine (OIDC Registration): with a loopback redirect (RFC
        // 8252), or for the device flow alone with no redirect and no authorization endpoint use at all.
        application_type: 'native',
        ...(redirectUri !== undefined ? { redirect_uris: [redirectUri], response_types: ['code'] } : { response_types: [] }),
        grant_types: grantTypes,
        token_endpoint_auth_method: 'none',
      },
      requestOptions(fetchImpl, as.registration_endpoint!),
    );
  } catch (error) {
    throw new ClientError('registration_failed', `cannot reach ${as.registration_endpoint}: ${failureReason(error, as.registration_endpoint)}`, {
      cause: error,
    });
  }
  // Parsed by hand: servers in the wild omit fields RFC 7591 makes conditional (client_secret_expires_at).
  const body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  if (!response.ok || !body || typeof body.client_id !== 'string' || body.client_id === '') {
    const detail =
      body && typeof body.error === 'string'
        ? `${body.error}${typeof body.error_description === 'string' ? `: ${body.error_description}` : ''}`
        : `HTTP ${response.status}`;
    throw new ClientError('registration_failed', `registration at ${as.registration_endpoint} failed (${detail})`);
  }
  const method = body.token_endpoint_auth_method;
  return {
    application,
    issuer: discovery.issuer,
    clientId: body.client_id,
    ...(typeof body.client_secret === 'string' ? { clientSecret: body.client_secret } : {}),
    tokenEndpointAuthMethod:
      method === 'client_secret_basic' || method === 'client_secret_post' ? method : typeof body.client_secret === 'string' ? 'client_secret_basic' : 'none',
    redirectUris: Array.isArray(body.redirect_uris) ? (body.redirect_uris as string[]) : redirectUri !== undefined ? [redirectUri] : [],
    grantTypes: Array.isArray(body.grant_types) && body.grant_types.every((g) => typeof g === 'string') ? (body.grant_types as string[]) : grantTypes,
    source: 'dynamic',
    createdAt: now(),
  };
}
