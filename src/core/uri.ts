import { OAuthError } from './errors.js';

/** Hosts that name this machine; http is allowed only on these (spec: redirect URIs, issuer). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  return host === 'localhost' || host === '127.0.0.1' || host === '[::1]' || host === '::1';
}

function parseAbsolute(input: string): URL | undefined {
  // `new URL` accepts leading/trailing spaces and control characters silently; we do not.
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  if (input.length === 0 || input !== input.trim() || /[\u0000-\u001f\u007f\s]/.test(input)) return undefined;
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(input)) return undefined;
  // Nor its fix-ups of "https:host", "https:/host", "https:///host" and backslashes: an http(s)
  // URI has an authority (RFC 9110 section 4.2), and "\\" is not a URI character (RFC 3986).
  if (input.includes('\\') || (/^https?:/i.test(input) && !/^https?:\/\/[^/]/i.test(input))) return undefined;
  try {
    return new URL(input);
  } catch {
    return undefined;
  }
}

/**
 * Canonical server URI (spec, Revision B, "Canonical server URI rules"; RFC 8707 section 2):
 * absolute with a scheme, no fragment, lowercase scheme and host (uppercase accepted), and no
 * trailing slash (a lone "/" path is dropped too). Throws `invalid_target` otherwise.
 */
export function canonicalizeResourceUri(input: string): string {
  const url = parseAbsolute(input);
  if (!url) throw new OAuthError('invalid_target', 'resource must be an absolute URI');
  if (input.includes('#')) throw new OAuthError('invalid_target', 'resource must not contain a fragment');
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new OAuthError('invalid_target', 'resource must be an http or https URI');
  }
  if (url.username || url.password) throw new OAuthError('invalid_target', 'resource must not contain credentials');
  let path = url.pathname;
  while (path.endsWith('/')) path = path.slice(0, -1);
  return `${url.protocol}//${url.host}${path}${url.search}`;
}

/** True when `input` is a canonical resource URI already. */
export function isCanonicalResourceUri(input: string): boolean {
  try {
    return canonicalizeResourceUri(input) === input;
  } catch {
    return false;
  }
}

/**
 * Issuer identifier (RFC 8414 section 2): https (http only on loopback, for development), no
 * query, no fragment, and no trailing slash so that `issuer` equals the URL it is served for.
 */
export function normalizeIssuer(input: string): string {
  const url = parseAbsolute(input);
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw new Error(`issuer must be an absolute https URL: ${JSON.stringify(input)}`);
  }
  if (url.search || url.hash || input.includes('#') || input.includes('?')) {
    throw new Error('issuer must not contain a query or fragment');
  }
  if (url.username || url.password) throw new Error('issuer must not contain credentials');
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new Error('issuer must use https unless its host is loopback (localhost, 127.0.0.1, [::1])');
  }
  let path = url.pathname;
  while (path.endsWith('/')) path = path.slice(0, -1);
  return `${url.protocol}//${url.host}${path}`;
}

/**
 * Where an authorization server's metadata may be, in the order to try: RFC 8414 path insertion,
 * then OpenID Connect discovery with path insertion and with path appending (the last two differ
 * only for an issuer with a path). Clients and resource servers both look here.
 */
export function authorizationServerMetadataUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/$/, '');
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}/.well-known/openid-configuration${path}`,
    ...(path ? [`${url.origin}${path}/.well-known/openid-configuration`] : []),
  ];
}

/**
 * The RFC 8414 / RFC 9728 well-known URL for an identifier: the well-known segment is inserted
 * between the host and the path and/or query ("path-inserted form").
 */
export function wellKnownUrl(identifier: string, suffix: string): string {
  const url = new URL(identifier);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '');
  // RFC 9728 section 3.1: the query, if any, stays after the path (issuers have none).
  return `${url.origin}/.well-known/${suffix}${path}${url.search}`;
}
