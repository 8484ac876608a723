import { isLoopbackHost } from './uri.js';

/**
 * Redirect URI rules (spec: "MUST be a localhost URL or an HTTPS URL"; OAuth 2.1 §2.3.1;
 * RFC 8252 §7.3). Returns a reason when the URI may not be registered, undefined when it may.
 */
export function redirectUriProblem(input: string): string | undefined {
  if (typeof input !== 'string' || input.length === 0) return 'redirect URI must be a non-empty string';
  if (input.length > 2000) return 'redirect URI is too long';
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  if (/[\u0000-\u0020\u007f]/.test(input)) return 'redirect URI must not contain spaces or control characters';
  if (input.includes('#')) return 'redirect URI must not contain a fragment';
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return 'redirect URI must be an absolute URI';
  }
  if (url.protocol === 'https:') {
    if (!url.hostname) return 'redirect URI must name a host';
  } else if (url.protocol === 'http:') {
    if (!isLoopbackHost(url.hostname)) {
      return 'http redirect URIs are allowed only on a loopback host (localhost, 127.0.0.1, [::1]); use https';
    }
  } else {
    return `redirect URI scheme ${url.protocol} is not allowed; use https or http on a loopback host`;
  }
  if (url.username || url.password) return 'redirect URI must not contain credentials';
  // RFC 3986 too, on the string as written: the WHATWG parser repairs `https:host/cb`,
  // `https:////host/cb` and `https:\\host/cb` into a URI with a host, which a consent page would
  // then show as if it had been registered that way.
  const authority = RFC3986_HTTP.exec(input);
  if (!authority) return 'redirect URI must be an absolute http(s) URI with a host, written as in RFC 3986 (scheme://host/path)';
  // What the parser made of the host must be what was written (bar case and IDNA).
  const written = authority[2]!.toLowerCase();
  if (written !== url.hostname && written !== `[${url.hostname.replace(/^\[|\]$/g, '')}]` && !url.hostname.startsWith('xn--')) {
    return 'redirect URI host is not written as a plain host name or address';
  }
  return undefined;
}

/**
 * RFC 3986 `scheme "://" authority path-abempty [ "?" query ]` for http(s): a non-empty host
 * (reg-name, IPv4 or a bracketed IPv6 literal), an optional port, and no backslash or space anywhere.
 */
const RFC3986_HTTP = /^(https?):\/\/(?:[^/?#@\\\s]*@)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~%!$&'()*+,;=]+)(?::\d{0,5})?(?:[/?][^\\\s]*)?$/i;

/** `http://<loopback host>[:port]<rest>` without its port; undefined for any other URI. */
const LOOPBACK_HTTP = /^http:\/\/(localhost|127\.0\.0\.1|\[::1\])(?::\d{1,5})?(?=[/?]|$)/;
function withoutLoopbackPort(uri: string): string | undefined {
  const match = LOOPBACK_HTTP.exec(uri);
  return match ? `http://${match[1]}${uri.slice(match[0].length)}` : undefined;
}

/**
 * Exact match against the registered URIs (OAuth 2.1 §4.1.3: simple string comparison), except
 * that a loopback http URI may differ in port only, because native apps pick a free port at run
 * time (RFC 8252 §7.3). The rest is compared as a string too, not after `new URL` has quietly
 * dropped tabs, newlines or surrounding spaces, resolved dot segments or emptied a bare "?".
 */
export function matchRedirectUri(registered: readonly string[], requested: string): boolean {
  // Checked first, so a URI registered before a rule existed cannot be used after it.
  if (redirectUriProblem(requested) !== undefined) return false;
  if (registered.includes(requested)) return true;
  const key = withoutLoopbackPort(requested);
  return key !== undefined && registered.some((candidate) => withoutLoopbackPort(candidate) === key);
}
