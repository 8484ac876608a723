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
  return undefined;
}

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
  if (registered.includes(requested)) return true;
  if (redirectUriProblem(requested) !== undefined) return false;
  const key = withoutLoopbackPort(requested);
  return key !== undefined && registered.some((candidate) => withoutLoopbackPort(candidate) === key);
}
