/**
 * Reading and setting our cookies under the names the issuer gives them (config.cookies). A name
 * sent twice is never read as "the first one": browsers send the cookie of the longer path first,
 * so a cookie planted for a deeper path by a site sharing the domain would win. Two of one name
 * read as none, and the request is logged.
 */
import { addressBucket } from '../core/client-address.js';
import type { ServerContext } from './context.js';
import { cookieValues, setCookie, type CookieSettings } from './http/cookies.js';

export type OurCookie = keyof Omit<CookieSettings, 'path' | 'secure'>;

const OUR_COOKIES: readonly OurCookie[] = ['session', 'browser', 'upstream'];

/** Requests whose duplicated cookies were logged already: one line per request and name. */
const logged = new WeakMap<Request, Set<string>>();

/** The value of one of our cookies; undefined when it is absent or sent more than once. */
export function readCookie(ctx: ServerContext, request: Request, cookie: OurCookie): string | undefined {
  const name = ctx.config.cookies[cookie];
  const values = cookieValues(request, name);
  if (values.length <= 1) return values[0];
  logDuplicated(ctx, request, name);
  return undefined;
}

/** The name of the first of our cookies that this request sends more than once, if any. */
export function duplicatedCookie(ctx: ServerContext, request: Request): string | undefined {
  for (const cookie of OUR_COOKIES) {
    const name = ctx.config.cookies[cookie];
    if (cookieValues(request, name).length > 1) {
      logDuplicated(ctx, request, name);
      return name;
    }
  }
  return undefined;
}

/** The Set-Cookie header value of one of our cookies (`maxAge` 0 clears it). */
export function cookieHeader(ctx: ServerContext, cookie: OurCookie, value: string, maxAge: number): string {
  const { path, secure } = ctx.config.cookies;
  return setCookie(ctx.config.cookies[cookie], value, { path, maxAge, secure });
}

function logDuplicated(ctx: ServerContext, request: Request, name: string): void {
  let names = logged.get(request);
  if (!names) logged.set(request, (names = new Set()));
  if (names.has(name)) return;
  names.add(name);
  const address = ctx.clientAddress(request);
  ctx.log({ event: 'cookie_duplicated', cookie: name, ...(address === undefined ? {} : { address: addressBucket(address) }) });
}
