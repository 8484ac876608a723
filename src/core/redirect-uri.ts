import { isLoopbackHost } from './uri.js';

/**
 * Redirect URI rules (spec: "MUST be a localhost URL or an HTTPS URL"; OAuth 2.1 §2.3.1;
 * RFC 8252 §7.3). Returns a reason when the URI may not be registered, undefined when it may.
 */
export function redirectUriProblem(input: string): string | undefined {
  if (typeof input !== 'string' || input.length === 0) return 'redirect URI must be a non-empty string';
  if (input.length > 2000) return 'redirect URI is too long';
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

/**
 * Exact match against the registered URIs (OAuth 2.1 §4.1.3), except that a loopback http URI
 * may differ in port only, because native apps pick a free port at run time (RFC 8252 §7.3).
 */
export function matchRedirectUri(registered: readonly string[], requested: string): boolean {
  if (registered.includes(requested)) return true;
  let req: URL;
  try {
    req = new URL(requested);
  } catch {
    return false;
  }
  if (req.protocol !== 'http:' || !isLoopbackHost(req.hostname) || requested.includes('#')) return false;
  return registered.some((candidate) => {
    let reg: URL;
    try {
      reg = new URL(candidate);
    } catch {
      return false;
    }
    return (
      reg.protocol === 'http:' &&
      reg.hostname === req.hostname &&
      reg.pathname === req.pathname &&
      reg.search === req.search &&
      !reg.username &&
      !req.username &&
      !req.password
    );
  });
}
