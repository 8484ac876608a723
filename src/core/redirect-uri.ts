import { isLoopbackHost } from './uri.js';

/** What a server admits beyond the spec's https and loopback http redirect URIs. */
export interface RedirectUriRules {
  /**
   * Native apps' own URI schemes (RFC 8252 §7.1), lowercase, that the operator admits by name;
   * none by default. A URI of such a scheme is matched as an exact string.
   */
  privateUseSchemes?: readonly string[];
}

/**
 * Schemes that browsers and operating systems give a meaning of their own: never an app's
 * private-use scheme, whoever names it.
 */
const RESERVED_SCHEMES = new Set([
  'http',
  'https',
  'javascript',
  'data',
  'file',
  'blob',
  'about',
  'filesystem',
  'vbscript',
  'view-source',
  'ftp',
  'ftps',
  'sftp',
  'ws',
  'wss',
  'mailto',
  'tel',
  'sms',
  'mms',
  'urn',
  'news',
  'nntp',
  'ssh',
  'telnet',
  'ldap',
  'ldaps',
  'smb',
  'jar',
  'intent',
  'content',
  'android-app',
  'chrome',
  'chrome-extension',
  'edge',
  'moz-extension',
  'resource',
  'shell',
  'ms-settings',
  'itms',
  'itms-apps',
  'market',
  'webcal',
]);

/**
 * Why a scheme may not be admitted as a native app's private-use redirect scheme (RFC 8252 §7.1);
 * undefined when it may. RFC 8252 asks apps for a reverse domain name (`com.example.app`); some
 * use a plain name (`cursor`), so any RFC 3986 scheme is taken except those with a meaning of
 * their own in browsers and operating systems.
 */
export function privateUseSchemeProblem(scheme: string): string | undefined {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*$/.test(scheme) || scheme.length > 100) {
    return `${JSON.stringify(scheme.slice(0, 100))} is not a URI scheme (a letter, then letters, digits, "+", "-" or "."; no ":")`;
  }
  if (RESERVED_SCHEMES.has(scheme.toLowerCase())) {
    return `${scheme.toLowerCase()} is not a private-use scheme: browsers and operating systems give it a meaning of its own`;
  }
  return undefined;
}

/**
 * Redirect URI rules (spec: "MUST be a localhost URL or an HTTPS URL"; OAuth 2.1 §2.3.1;
 * RFC 8252 §7.3), and the private-use schemes an operator admits (RFC 8252 §7.1). Returns a
 * reason when the URI may not be registered, undefined when it may.
 */
export function redirectUriProblem(input: string, rules: RedirectUriRules = {}): string | undefined {
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
  } else if (rules.privateUseSchemes?.includes(url.protocol.slice(0, -1))) {
    return privateUseUriProblem(input, url);
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
 * A URI of an admitted private-use scheme, as written: `scheme:/path` (RFC 8252 §7.1) or
 * `scheme://authority/path`, with no credentials and no backslash, which the app that handles
 * the scheme might read otherwise than we do.
 */
function privateUseUriProblem(input: string, url: URL): string | undefined {
  if (url.username || url.password) return 'redirect URI must not contain credentials';
  const rest = input.slice(url.protocol.length);
  if (rest === '') return `a ${url.protocol} redirect URI must have a path after the scheme`;
  if (input.includes('\\')) return 'redirect URI must not contain a backslash';
  if (rest.startsWith('//') && !/^\/\/[^/?#@\\]+(?:[/?]|$)/.test(rest)) return `a ${url.protocol}// redirect URI must name its host after the //`;
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
 * Exact match against the registered URIs (OAuth 2.1 §4.1.3: simple string comparison; a
 * private-use URI too), except that a loopback http URI may differ in port only, because native apps pick a free port at run
 * time (RFC 8252 §7.3). The rest is compared as a string too, not after `new URL` has quietly
 * dropped tabs, newlines or surrounding spaces, resolved dot segments or emptied a bare "?".
 */
export function matchRedirectUri(registered: readonly string[], requested: string, rules: RedirectUriRules = {}): boolean {
  // Checked first, so a URI registered before a rule existed (or while a scheme was admitted) cannot be used after it.
  if (redirectUriProblem(requested, rules) !== undefined) return false;
  if (registered.includes(requested)) return true;
  const key = withoutLoopbackPort(requested);
  return key !== undefined && registered.some((candidate) => withoutLoopbackPort(candidate) === key);
}
