/**
 * The rules of a host profile as functions: where it looks for metadata, how it compares the
 * metadata's `resource` with the URL typed, and which scope it asks for.
 */
import type { AuthorizationServerMetadataSource, ResourceMetadataSource, ResourceRule, ScopeRule } from './types.js';

const PRM = '/.well-known/oauth-protected-resource';

/** The MCP URL's path without its trailing slashes ('' at the root). */
function pathOf(url: URL): string {
  return url.pathname.replace(/\/+$/, '');
}

/** The URL of one well-known form of the protected resource metadata (undefined for 'challenge'). */
export function resourceMetadataUrl(source: Exclude<ResourceMetadataSource, 'challenge' | 'challenge-same-origin'>, mcpUrl: string): string {
  const url = new URL(mcpUrl);
  const path = pathOf(url);
  switch (source) {
    case 'path':
      return `${url.origin}${PRM}${path}`;
    case 'path-appended':
      return `${url.origin}${path}${PRM}`;
    case 'root':
      return `${url.origin}${PRM}`;
  }
}

/** The URL of one place of an authorization server's metadata. */
export function authorizationServerMetadataUrl(source: AuthorizationServerMetadataSource, issuer: string): string {
  const url = new URL(issuer);
  const path = pathOf(url);
  switch (source) {
    case 'oauth-path':
      return `${url.origin}/.well-known/oauth-authorization-server${path}`;
    case 'oidc-path':
      return `${url.origin}/.well-known/openid-configuration${path}`;
    case 'oidc-appended':
      return `${url.origin}${path}/.well-known/openid-configuration`;
    case 'oauth-root':
      return `${url.origin}/.well-known/oauth-authorization-server`;
    case 'oidc-root':
      return `${url.origin}/.well-known/openid-configuration`;
  }
}

/** Whether a host with `rule` takes metadata naming `resource` for the URL the person typed. */
export function resourceMatches(rule: ResourceRule, resource: string, typed: string): boolean {
  if (rule === 'unchecked') return true;
  let actual: URL;
  let expected: URL;
  try {
    actual = new URL(resource);
    expected = new URL(typed);
  } catch {
    return false;
  }
  switch (rule) {
    case 'same-url':
      return actual.href === expected.href;
    case 'same-origin-and-path':
      return `${actual.origin}${actual.pathname}` === `${expected.origin}${expected.pathname}`;
    case 'url-or-parent': {
      if (actual.origin !== expected.origin) return false;
      const slash = (path: string) => (path.endsWith('/') ? path : `${path}/`);
      return slash(expected.pathname).startsWith(slash(actual.pathname));
    }
    case 'url-or-parent-strict': {
      if (actual.href === expected.href) return true;
      if (actual.origin !== expected.origin) return false;
      if (actual.pathname === expected.pathname) return true;
      return expected.pathname.startsWith(actual.pathname) && (actual.pathname.endsWith('/') || expected.pathname[actual.pathname.length] === '/');
    }
  }
}

export interface ScopeSources {
  /** The scope of the 401's challenge. */
  challenge?: string | undefined;
  /** The protected resource metadata's scopes_supported. */
  resource?: readonly string[] | undefined;
  /** The authorization server metadata's scopes_supported. */
  server?: readonly string[] | undefined;
}

const OPENID_SCOPES = ['openid', 'profile', 'email'];

/** The scopes a host with `rule` asks for, in the order it lists them. */
export function requestedScopes(rule: ScopeRule, sources: ScopeSources): string[] {
  const challenge = (sources.challenge ?? '').split(' ').filter(Boolean);
  const resource = sources.resource ?? [];
  const server = sources.server ?? [];
  const withOffline = (scopes: string[]) => (scopes.length > 0 && server.includes('offline_access') ? [...scopes, 'offline_access'] : scopes);
  let scopes: string[];
  switch (rule) {
    case 'resource-openid-and-offline':
      scopes = [...resource, ...server.filter((scope) => OPENID_SCOPES.includes(scope)), 'offline_access'];
      break;
    case 'challenge-else-resource-plus-offline':
      scopes = withOffline(challenge.length > 0 ? challenge : [...resource]);
      break;
    case 'challenge-else-resource':
      scopes = challenge.length > 0 ? challenge : [...resource];
      break;
    case 'resource':
      scopes = [...resource];
      break;
    case 'challenge-and-resource-else-server-plus-offline': {
      const named = [...challenge, ...resource];
      scopes = withOffline(named.length > 0 ? named : [...server]);
      break;
    }
    case 'server':
      scopes = [...server];
      break;
    case 'challenge-resource-server-else-openid':
      // An advertised empty list means "ask for none"; only an absent one falls through.
      scopes =
        challenge.length > 0
          ? challenge
          : sources.resource !== undefined
            ? [...resource]
            : sources.server !== undefined
              ? [...server]
              : ['openid', 'email', 'profile'];
      break;
    case 'resource-else-server':
      scopes = resource.length > 0 ? [...resource] : [...server];
      break;
  }
  return [...new Set(scopes)];
}
