import { randomBytes } from 'node:crypto';
import { hashSecret, randomToken } from '../core/secrets.js';
import type { ClientRecord, Store } from '../store/store.js';
import type { ValidClientMetadata } from './checks/client-metadata.js';

export interface RegisteredClient {
  client: ClientRecord;
  /** The secret in clear, returned once to whoever registered the client; only its hash is kept. */
  clientSecret?: string;
}

/** Creates a client from validated metadata; used by /register and by the CLI. */
export async function registerClient(
  store: Store,
  metadata: ValidClientMetadata,
  now: number,
  options: { registeredBy: 'dynamic' | 'admin'; canIntrospect?: boolean },
): Promise<RegisteredClient> {
  const confidential = metadata.tokenEndpointAuthMethod !== 'none';
  const clientSecret = confidential ? randomToken(32) : undefined;
  const client: ClientRecord = {
    // Hex, not base64url: an id starting with "-" reads as an option on a command line
    // (`context-auth consents revoke --client -x…`), and client ids are typed and pasted there.
    clientId: randomBytes(16).toString('hex'),
    clientSecretHash: clientSecret === undefined ? null : hashSecret(clientSecret),
    tokenEndpointAuthMethod: metadata.tokenEndpointAuthMethod,
    redirectUris: metadata.redirectUris,
    grantTypes: metadata.grantTypes,
    responseTypes: metadata.responseTypes,
    clientName: metadata.clientName,
    scope: metadata.scope,
    metadata: metadata.metadata,
    canIntrospect: options.canIntrospect ?? false,
    registeredBy: options.registeredBy,
    createdAt: now,
  };
  await store.createClient(client);
  return clientSecret === undefined ? { client } : { client, clientSecret };
}

/** The RFC 7591 §3.2.1 response body for a client. */
export function registrationResponse(registered: RegisteredClient): Record<string, unknown> {
  const { client, clientSecret } = registered;
  return {
    client_id: client.clientId,
    ...(clientSecret === undefined ? {} : { client_secret: clientSecret, client_secret_expires_at: 0 }),
    client_id_issued_at: client.createdAt,
    ...client.metadata,
  };
}
