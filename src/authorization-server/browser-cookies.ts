/**
 * Reading and setting our cookies under the names the issuer gives them (config.cookies). A name
 * sent twice is never read as "the first one": browsers send the cookie of the longer path first,
 * so a cookie planted for a deeper path by a site sharing the domain would win. Two of one name
 * read as none, and the request is logged.
 */
import { addressBucket } from '../core/client-address.js';
import { OAuthError } from '../core/errors.js';
import type { BaseServices } from './services.js';
import { cookieValues, setCookie, type CookieSettings } from './http/cookies.js';
import type { EndpointRequest } from './http/request.js';

export type OurCookie = keyof Omit<CookieSettings, 'path' | 'secure'>;

const OUR_COOKIES: readonly OurCookie[] = ['session', 'browser', 'upstream'];

/** Requests whose duplicated cookies were logged already: one line per request and name. */
const logged = new WeakMap<EndpointRequest, Set<string>>();

/** The value of one of our cookies; undefined when it is absent or sent more than once. */
export function readCookie(ctx: BaseServices, request: EndpointRequest, cookie: OurCookie): string | undefined {
  const name = ctx.config.cookies[cookie];
  const values = cookieValues(request, name);
  if (values.length <= 1) return values[0];
  logDuplicated(ctx, request, name);
  return undefined;
}

/**
 * Refuses, with a page that says what to do, a request that sends one of our cookies more than
 * once: where a form is posted, or where the browser binding alone finds what it asks for (an
 * interaction's page, a provider's callback), rather than a page that speaks of another browser.
 */
export function refuseDuplicatedCookies(ctx: BaseServices, request: EndpointRequest): void {
  for (const cookie of OUR_COOKIES) {
    const name = ctx.config.cookies[cookie];
    if (cookieValues(request, name).length <= 1) continue;
    logDuplicated(ctx, request, name);
    throw new OAuthError('invalid_request', `the Cookie header names ${name} more than once`, 403).withUserMessage(
      `Your browser sent two cookies named ${name}, so this was not accepted: another site sharing this domain, or another program on this computer, may have set one. Clear this site's cookies in your browser, then open the page again.`,
    );
  }
}

/** The Set-Cookie header value of one of our cookies (`maxAge` 0 clears it). */
export function cookieHeader(ctx: BaseServices, cookie: OurCookie, value: string, maxAge: number): string {
  const { path, secure } = ctx.config.cookies;
  return setCookie(ctx.config.cookies[cookie], value, { path, maxAge, secure });
}

function logDuplicated(ctx: BaseServices, request: EndpointRequest, name: string): void {
  let names = logged.get(request);
  if (!names) logged.set(request, (names = new Set()));
  if (names.has(name)) return;
  names.add(name);
  const address = request.clientAddress;
  ctx.log({ event: 'cookie_duplicated', cookie: name, ...(address === undefined ? {} : { address: addressBucket(address) }) });
}
