import { OAuthError } from './errors.js';

/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** Parses a space-delimited scope string into a sorted, de-duplicated list. */
export function parseScope(value: string | undefined | null): string[] {
  if (value === undefined || value === null) return [];
  const tokens = value.split(' ').filter((token) => token.length > 0);
  for (const token of tokens) {
    if (!SCOPE_TOKEN.test(token)) throw new OAuthError('invalid_scope', 'scope contains an invalid character');
  }
  return [...new Set(tokens)].sort();
}

/**
 * OpenID Connect Core §11: `offline_access` asks for a refresh token. This server issues one to
 * every client allowed the refresh_token grant, so the scope is already granted by what it does:
 * accepted wherever a scope is asked for (hosts send it), never kept in a grant or put on a token.
 */
export const OFFLINE_ACCESS = 'offline_access';

/** A parsed scope without `offline_access` (see OFFLINE_ACCESS). */
export function withoutOfflineAccess(scopes: readonly string[]): string[] {
  return scopes.filter((scope) => scope !== OFFLINE_ACCESS);
}

/**
 * OpenID Connect Core §3.1.2.1 and §5.4: `openid` asks for an ID token beside the access token, and
 * `profile` and `email` for what the userinfo endpoint says of the person. They name no access to a
 * context server, only who the person is, so every client may ask for them in a person's flow
 * (the person consents to them as to any scope); they are kept in the grant like any scope.
 */
export const OPENID = 'openid';
export const OPENID_SCOPES: readonly string[] = Object.freeze([OPENID, 'profile', 'email']);

export function formatScope(scopes: readonly string[]): string {
  return [...new Set(scopes)].sort().join(' ');
}

export function isSubset(subset: readonly string[], superset: readonly string[]): boolean {
  const set = new Set(superset);
  return subset.every((scope) => set.has(scope));
}

/**
 * The scopes a request ends up with: the requested ones (each must be allowed), or the defaults
 * when none were requested (RFC 6749 §3.3 lets the server pick a default). `why`, when given,
 * says in the refusal why no more is allowed.
 */
export function resolveScope(requested: readonly string[], allowed: readonly string[], defaults: readonly string[], why?: string): string[] {
  if (requested.length === 0) return defaults.filter((scope) => allowed.includes(scope));
  const unknown = requested.filter((scope) => !allowed.includes(scope));
  if (unknown.length > 0) throw new OAuthError('invalid_scope', `scope not allowed: ${unknown.join(' ')}${why ? ` (${why})` : ''}`);
  return [...requested];
}
