import type { GrantType, TokenEndpointAuthMethod } from '../../core/protocol.js';

export interface ClientRecord {
  clientId: string;
  /** SHA-256 of the secret; null for public clients. */
  clientSecretHash: string | null;
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  redirectUris: string[];
  grantTypes: GrantType[];
  responseTypes: string[];
  clientName: string | null;
  /** Scopes this client may ask for; null means any the server supports. */
  scope: string | null;
  /** The registered metadata as the client sent it (validated), echoed by registration. */
  metadata: Record<string, unknown>;
  /** Set by an operator only (`clients add --introspect`): may introspect tokens of other clients. */
  canIntrospect: boolean;
  /** 'dynamic' (RFC 7591) or 'admin' (CLI / API). */
  registeredBy: 'dynamic' | 'admin';
  createdAt: number;
  /** When it last came to /authorize or /token, to a day; null until then. */
  lastUsedAt: number | null;
}

/** The registered clients: looked up at every request, written by registration and by metadata documents. */
export interface ClientStore {
  /** Throws a conflict StoreError when the client id is taken. */
  createClient(client: ClientRecord): Promise<void>;
  getClient(clientId: string): Promise<ClientRecord | undefined>;
  /** Creates the client, or replaces its metadata keeping its creation time and last use (a metadata document fetched again). */
  saveClient(client: ClientRecord): Promise<void>;
}
