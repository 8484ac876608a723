import { registerClient, registrationResponse } from '../authorization-server/clients.js';
import { describeDropped, validateClientMetadata } from '../authorization-server/checks/client-metadata.js';
import { OAuthError } from '../core/errors.js';
import { DEVICE_CODE_GRANT_TYPE, JWT_BEARER_GRANT_TYPE } from '../core/protocol.js';
import type { Store } from '../store/store.js';

/** The scopes an operator may grant unless `scope` names others: those a default `serve` supports. */
const DEFAULT_SCOPES = ['mcp:tools', 'mcp:admin'];
/** What a machine client gets when `scope` names nothing. */
const MACHINE_DEFAULT_SCOPE = 'mcp:tools';
/** The grants whose tokens no person consents to. */
const MACHINE_GRANTS: readonly string[] = ['client_credentials', JWT_BEARER_GRANT_TYPE];

export interface ClientOptions {
  name: string;
  /** A browser client's redirect URIs; with them, the grants default to authorization_code and refresh_token. */
  redirectUris?: string[];
  /** Grant types; `jwt-bearer` and `device_code` are short for their URNs. */
  grantTypes?: string[];
  /** A confidential client with a secret (implied by client_credentials, jwt-bearer and `introspect`). */
  secret?: boolean;
  /** The client's public keys (a JSON Web Key Set), for private_key_jwt: it gets no secret. */
  jwks?: unknown;
  /** Where the client publishes its public keys (https), for private_key_jwt. */
  jwksUri?: string;
  /** Space-separated scopes it may have; a machine client gets only mcp:tools without it. */
  scope?: string;
  /** May call the introspection endpoint. */
  introspect?: boolean;
  /** Must send a DPoP proof with every token request. */
  dpopBound?: boolean;
}

/** What adding a client did: the RFC 7591 registration response (client_id, and a secret shown this once), or why not. */
export type ClientAddition = { registration: Record<string, unknown> } | { refused: string };

/**
 * Registers a client as an operator does (`registered_by: admin`): the metadata is checked as
 * /register checks it, and a value the server would leave out refuses the client instead, since
 * an operator names each value on purpose.
 */
export async function addClient(store: Store, options: ClientOptions, now: number): Promise<ClientAddition> {
  const keys = keyMetadata(options);
  if ('refused' in keys) return keys;
  const redirectUris = options.redirectUris ?? [];
  const grantTypes = (options.grantTypes ?? (redirectUris.length > 0 ? ['authorization_code', 'refresh_token'] : [])).map((type) =>
    type === 'jwt-bearer' ? JWT_BEARER_GRANT_TYPE : type === 'device_code' ? DEVICE_CODE_GRANT_TYPE : type,
  );
  if (grantTypes.length === 0) return { refused: 'Cannot add the client: give redirect URIs for a browser client, or the client_credentials grant.' };
  const confidential =
    Boolean(options.secret) || grantTypes.includes('client_credentials') || grantTypes.includes(JWT_BEARER_GRANT_TYPE) || Boolean(options.introspect);
  // A machine client's tokens carry no person's consent: it gets the base scope unless the operator names more.
  const scope = options.scope ?? (grantTypes.some((type) => MACHINE_GRANTS.includes(type)) ? MACHINE_DEFAULT_SCOPE : undefined);
  let metadata;
  try {
    metadata = validateClientMetadata(
      {
        client_name: options.name,
        redirect_uris: redirectUris,
        grant_types: grantTypes,
        token_endpoint_auth_method: confidential ? 'client_secret_basic' : 'none',
        ...keys.metadata,
        ...(scope === undefined ? {} : { scope }),
        ...(options.dpopBound ? { dpop_bound_access_tokens: true } : {}),
      },
      options.scope === undefined ? DEFAULT_SCOPES : options.scope.split(' ').filter(Boolean),
    );
  } catch (error) {
    if (error instanceof OAuthError) return { refused: `Cannot add the client: ${error.message}.` };
    throw error;
  }
  if (metadata.dropped.length > 0) return { refused: `Cannot add the client: ${describeDropped(metadata.dropped)}.` };
  const registered = await registerClient(store, metadata, now, { registeredBy: 'admin', canIntrospect: Boolean(options.introspect) });
  return { registration: registrationResponse(registered) };
}

function keyMetadata(options: ClientOptions): { metadata: Record<string, unknown> } | { refused: string } {
  if (options.jwks === undefined && options.jwksUri === undefined) return { metadata: {} };
  if (options.jwks !== undefined && options.jwksUri !== undefined)
    return { refused: 'Cannot add the client: give its keys (jwks) or where they are (jwksUri), not both.' };
  if (options.secret) return { refused: 'Cannot add the client: a client with keys authenticates with its key, not a secret.' };
  return {
    metadata: { token_endpoint_auth_method: 'private_key_jwt', ...(options.jwksUri !== undefined ? { jwks_uri: options.jwksUri } : { jwks: options.jwks }) },
  };
}
