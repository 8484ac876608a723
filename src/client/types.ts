import type { DpopKeyPair } from '../core/dpop.js';

/** A client registration one application holds at one authorization server. */
export interface StoredClient {
  /** The application it is for (ContextClient's `applicationId`): each registers as itself. */
  application: string;
  issuer: string;
  clientId: string;
  clientSecret?: string;
  tokenEndpointAuthMethod: 'none' | 'client_secret_basic' | 'client_secret_post';
  redirectUris: string[];
  /** The grant types it was registered for, where we registered it; absent: the browser flow's. */
  grantTypes?: string[];
  /** 'dynamic' (RFC 7591), 'options' (given by the caller), 'prompt' (typed by the person). */
  source: 'dynamic' | 'options' | 'prompt';
  createdAt: number;
}

/** The grants a program obtains its tokens by, with no person: it renews them by the same grant. */
export type ProgramGrantType = 'client_credentials' | 'jwt-bearer';

/**
 * Whose tokens a grant holds. `person`: whoever signed in through the application (in the browser
 * or on another device), with whatever client it used. `program`: the machine client `clientId`,
 * with the grant it obtains its tokens by. One identity's grant never stands in for another's.
 */
export type GrantIdentity = { kind: 'person' } | { kind: 'program'; grantType: ProgramGrantType; clientId: string };

/** One application's tokens, held by one identity, for one (context server, authorization server) pair. */
export interface StoredGrant {
  /** The application the tokens were issued to (ContextClient's `applicationId`). */
  application: string;
  /** Whose tokens these are: the person's, or a program's. */
  identity: GrantIdentity;
  /** The context server URL, canonical: what the grant is looked up by. */
  serverUrl: string;
  issuer: string;
  /** Revision B's resource indicator, when one was used. */
  resource?: string;
  revision: 'A' | 'B';
  clientId: string;
  accessToken: string;
  /** Seconds since the epoch; absent when the server said nothing. */
  expiresAt?: number;
  refreshToken?: string;
  scope?: string;
  /** How the access token is presented: 'DPoP' (bound to `dpopKey`, RFC 9449), else as a bearer token. */
  tokenType?: 'DPoP';
  /**
   * The grant's own DPoP key pair (private and public JWK), made for it at login and kept only
   * here: each new grant gets a new one. Refreshes and every request with the token prove it.
   */
  dpopKey?: DpopKeyPair;
  updatedAt: number;
}

/** Which grants: an application's, held by one identity, for one server; from one authorization server, or from any. */
export interface GrantSelector {
  application: string;
  serverUrl: string;
  identity: GrantIdentity;
  issuer?: string;
}

/**
 * Where the client keeps registrations and tokens. The default is a 0600 JSON file in the user's
 * config folder; anything implementing this (an OS keychain, a database) can replace it. Several
 * applications may share one store: everything is filed under the application it belongs to, and
 * one application never sees another's registrations or tokens.
 */
export interface TokenStore {
  getClient(application: string, issuer: string): Promise<StoredClient | undefined>;
  saveClient(client: StoredClient): Promise<void>;
  deleteClient(application: string, issuer: string): Promise<void>;
  /** The grant selected: the one from `issuer`, or without it the most recently updated one. */
  getGrant(which: GrantSelector): Promise<StoredGrant | undefined>;
  /** Keeps the grant, replacing the one of the same application, identity, server and issuer. */
  saveGrant(grant: StoredGrant): Promise<void>;
  /** Deletes the grants selected (from one issuer, or from all); returns how many. */
  deleteGrant(which: GrantSelector): Promise<number>;
  /** Every grant of every application. */
  listGrants(): Promise<StoredGrant[]>;
  /**
   * Runs `action` while holding an exclusive lock named `name`, across concurrent calls in this
   * process and across processes sharing the store: one refresh at a time per grant.
   */
  withLock<T>(name: string, action: () => Promise<T>): Promise<T>;
}
