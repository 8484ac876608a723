import type { StoredGrant } from './types.js';

/** The store lock under which a grant is refreshed, by ContextClient and by the SDK through McpSdkOAuthProvider. */
export function grantLockName(grant: Pick<StoredGrant, 'application' | 'serverUrl' | 'issuer'>): string {
  return `grant ${JSON.stringify([grant.application, grant.serverUrl, grant.issuer])}`;
}

/** A token endpoint answer, as oauth4webapi and the MCP SDK both hand it over. */
export interface TokenSet {
  access_token: string;
  expires_in?: number;
  refresh_token?: string;
  scope?: string;
}

/** What the answer alone does not say: whose grant it is, and what to keep from before. */
export interface GrantContext {
  application: string;
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
}

/** The grant to store for a token endpoint answer. */
export function toStoredGrant(tokens: TokenSet, context: GrantContext): StoredGrant {
  const scope = tokens.scope ?? context.requestedScope;
  const refreshToken = tokens.refresh_token ?? context.refreshToken;
  return {
    application: context.application,
    serverUrl: context.serverUrl,
    issuer: context.issuer,
    ...(context.resource ? { resource: context.resource } : {}),
    revision: context.revision,
    clientId: context.clientId,
    accessToken: tokens.access_token,
    ...(typeof tokens.expires_in === 'number' ? { expiresAt: context.now + tokens.expires_in } : {}),
    ...(refreshToken ? { refreshToken } : {}),
    ...(scope ? { scope } : {}),
    updatedAt: context.now,
  };
}
