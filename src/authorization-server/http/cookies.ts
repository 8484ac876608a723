import { hashSecret } from '../../core/secrets.js';
import type { EndpointRequest } from './request.js';

/** Our cookies' names before the issuer's prefix and suffix (cookieSettings). */
export const SESSION_COOKIE = 'ca_session';
export const BROWSER_COOKIE = 'ca_browser';
export const UPSTREAM_COOKIE = 'ca_upstream';

/** The names our cookies carry for one issuer, and the attributes they are set with. */
export interface CookieSettings {
  /** The browser session (a random id; the store keeps its hash). */
  session: string;
  /** The browser binding (browserBinding in sessions.ts). */
  browser: string;
  /** The sealed state of an upstream sign-in begun at /account or /admin. */
  upstream: string;
  path: string;
  secure: boolean;
}

/**
 * For an https issuer, `__Host-` names: the browser keeps such a cookie only when this very host
 * set it, Secure, with Path=/ and no Domain, so a sibling subdomain cannot plant one (RFC 6265bis
 * §4.1.3.2). Path=/ makes the cookies reach every path of the host, so an issuer with a path gets a
 * suffix of its own (a digest of the path): another server on the same host, or another issuer
 * under another path, never reads or overwrites ours. An http issuer is always loopback
 * (normalizeIssuer), where the prefix protects nothing (cookies do not isolate ports, and a
 * loopback host has no sibling), and Safari drops Secure cookies: plain names under the issuer's path.
 */
export function cookieSettings(issuer: string): CookieSettings {
  const url = new URL(issuer);
  const basePath = url.pathname.replace(/\/+$/, '');
  if (url.protocol !== 'https:') {
    return { session: SESSION_COOKIE, browser: BROWSER_COOKIE, upstream: UPSTREAM_COOKIE, path: basePath || '/', secure: false };
  }
  const suffix = basePath ? `-${hashSecret(basePath).slice(0, 10)}` : '';
  const name = (base: string): string => `__Host-${base}${suffix}`;
  return { session: name(SESSION_COOKIE), browser: name(BROWSER_COOKIE), upstream: name(UPSTREAM_COOKIE), path: '/', secure: true };
}

/** Every value the Cookie header gives `name`, in the order sent: a name sent twice is for the caller to refuse. */
export function cookieValues(request: EndpointRequest, name: string): readonly string[] {
  return request.cookies.get(name) ?? [];
}

/**
 * Our cookies are always HttpOnly and SameSite=Lax (the consent POST is same-site; the return
 * from the client is a top-level GET), and Secure whenever the issuer is https.
 */
export function setCookie(name: string, value: string, options: { path: string; maxAge: number; secure: boolean }): string {
  const parts = [`${name}=${value}`, `Path=${options.path}`, `Max-Age=${options.maxAge}`, 'HttpOnly', 'SameSite=Lax'];
  if (options.secure) parts.push('Secure');
  return parts.join('; ');
}
