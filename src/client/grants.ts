import type { DpopKeyPair } from '../core/dpop.js';
import type { GrantIdentity, StoredGrant } from './types.js';

/** The person who signs in through the application. */
export const PERSON: GrantIdentity = Object.freeze({ kind: 'person' });

/** One string per identity (JSON: a client id may hold any character), for keys and lock names. */
export function identityKey(identity: GrantIdentity): string {
  return identity.kind === 'person' ? 'person' : JSON.stringify([identity.grantType, identity.clientId]);
}

export function sameIdentity(a: GrantIdentity, b: GrantIdentity): boolean {
  return identityKey(a) === identityKey(b);
}

/** The identity in words, for messages: "the person", "the program robot-1 (client_credentials)". */
export function describeIdentity(identity: GrantIdentity): string {
  return identity.kind === 'person' ? 'the person' : `the program ${identity.clientId} (${identity.grantType})`;
}

/** The store lock under which a grant is refreshed, by ContextClient and by the SDK through McpSdkOAuthProvider. */
export function grantLockName(grant: Pick<StoredGrant, 'application' | 'identity' | 'serverUrl' | 'issuer'>): string {
  return `grant ${JSON.stringify([grant.application, identityKey(grant.identity), grant.serverUrl, grant.issuer])}`;
}

/** A token endpoint answer, as oauth4webapi and the MCP SDK both hand it over. */
export interface TokenSet {
  access_token: string;
  /** 'Bearer' or 'DPoP' (any case, RFC 6749 §7.1). */
  token_type?: string;
  expires_in?: number;
  refresh_token?: string;
  scope?: string;
}

/** What the answer alone does not say: whose grant it is, and what to keep from before. */
export interface GrantContext {
  application: string;
  identity: GrantIdentity;
  serverUrl: string;
  issuer: string;
  resource?: string;
  revision: 'A' | 'B';
  clientId: string;
  /** Seconds since the epoch. */
  now: number;
  /** Stored when the answer names no scope (RFC 6749 §5.1: then it is the scope requested). */
  requestedScope?: string;
  /** Kept when the answer has no refresh token: a server that does not rotate leaves the old one valid. */
  refreshToken?: string;
  /** The DPoP key the token request proved: kept when the answer is a DPoP-bound token. */
  dpopKey?: DpopKeyPair;
}

/**
 * The grant to store for a token endpoint answer. An answer of token_type Bearer to a request that
 * carried a proof is the server declining DPoP (RFC 9449 §5): that token is a bearer token, and
 * the grant keeps no key.
 */
export function toStoredGrant(tokens: TokenSet, context: GrantContext): StoredGrant {
  const scope = tokens.scope ?? context.requestedScope;
  const refreshToken = tokens.refresh_token ?? context.refreshToken;
  return {
    application: context.application,
    identity: context.identity,
    serverUrl: context.serverUrl,
    issuer: context.issuer,
    ...(context.resource ? { resource: context.resource } : {}),
    revision: context.revision,
    clientId: context.clientId,
    accessToken: tokens.access_token,
    ...(typeof tokens.expires_in === 'number' ? { expiresAt: context.now + tokens.expires_in } : {}),
    ...(refreshToken ? { refreshToken } : {}),
    ...(scope ? { scope } : {}),
    ...(context.dpopKey && tokens.token_type?.toLowerCase() === 'dpop' ? { tokenType: 'DPoP' as const, dpopKey: context.dpopKey } : {}),
    updatedAt: context.now,
  };
}
