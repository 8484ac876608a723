import { randomBytes } from 'node:crypto';
import { hashSecret } from '../core/secrets.js';
import { hasUpkeep } from '../store/capabilities.js';
import { CLIENT_USE_GRANULARITY } from '../store/internal.js';
import type { ClientRecord, Store } from '../store/store.js';
import type { ValidClientMetadata } from './checks/client-metadata.js';
import { isDocumentClientId, type ClientDocuments } from './client-documents/documents.js';
import type { EndpointRequest } from './http/request.js';
import type { RateLimits } from './rate-limit/rate-limits.js';
import type { BaseServices } from './services.js';

/** How the endpoints find a client: in the store, or, for a URL client_id, from its metadata document. */
export type ClientLookup = Pick<Store, 'getClient'>;

/** What finding a client needs: the store, client ID metadata documents, and the limits on new ones by address. */
export type ClientLookupServices = Pick<BaseServices, 'store' | 'now'> & {
  clientDocuments: ClientDocuments;
  rateLimits: RateLimits;
};

export function clientLookup(ctx: ClientLookupServices, request: EndpointRequest): ClientLookup {
  const { store, clientDocuments, now } = ctx;
  // A document URL the server does not know yet creates a client, as /register does: limited per
  // address first (so one address cannot spend the budget of all), then for all addresses together.
  const admitNew = async (): Promise<void> => {
    await ctx.rateLimits.check('clientDocument', request.clientAddress);
    await ctx.rateLimits.checkTotal('clientDocumentTotal', 'new client ID metadata documents');
  };
  return {
    // Not an async function: the store's promise is handed on as it is, one microtask fewer per request.
    getClient: (clientId) => {
      if (!isDocumentClientId(clientId)) return store.getClient(clientId);
      // Turned off, a URL client is unknown, even one fetched while it was on.
      if (!clientDocuments.enabled) return Promise.resolve(undefined);
      return clientDocuments.client(clientId, { store, now: now(), admitNew });
    },
  };
}

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
  // A private_key_jwt client proves itself with its key pair: it has no secret to hand out.
  const usesSecret = metadata.tokenEndpointAuthMethod === 'client_secret_basic' || metadata.tokenEndpointAuthMethod === 'client_secret_post';
  // Hex, not base64url, as the id below: a secret starting with "-" reads as an option on a command
  // line (`context-auth login --client-secret -x…` is refused as ambiguous), where it is pasted.
  const clientSecret = usesSecret ? randomBytes(32).toString('hex') : undefined;
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
    lastUsedAt: null,
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

/**
 * Records that a client came to /authorize or /token, for sweeping the ones nobody uses: one
 * store write per client per day, and per process at most one attempt a day (remembered here),
 * so the token endpoint's hot path almost never writes. A store without upkeep sweeps nothing,
 * so nothing is recorded there.
 */
export class ClientUse {
  private readonly noted = new Map<string, number>();

  /** The store write when one is due; undefined (nothing to wait for) on the usual request. */
  note(store: Store, clientId: string, now: number): Promise<void> | undefined {
    if (!hasUpkeep(store)) return undefined;
    const day = Math.floor(now / CLIENT_USE_GRANULARITY);
    if (this.noted.get(clientId) === day) return undefined;
    if (this.noted.size >= 100_000) this.noted.clear();
    this.noted.set(clientId, day);
    return store.touchClient(clientId, now);
  }
}
