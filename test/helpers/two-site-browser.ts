/**
 * A browser for tests of upstream sign-in: it talks to our server in-process and to the provider
 * over HTTP, following redirects by hand.
 */
import { ISSUER, type Harness } from './harness.js';

/**
 * A browser that talks to our server in-process and to the provider over HTTP, keeping one cookie
 * jar per host as browsers do (both are 127.0.0.1, so like a browser it shares them across ports).
 */
export class TwoSiteBrowser {
  private cookies = new Map<string, string>();
  /** The URL of the last request: a relative Location resolves against it. */
  private last = new URL(ISSUER);
  constructor(private readonly h: Harness) {}

  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const target = new URL(url, this.last);
    this.last = target;
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const request = { ...init, headers, redirect: 'manual' as const };
    const response = target.origin === ISSUER ? await this.h.request(target.pathname + target.search, request) : await fetch(target, request);
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return response;
  }

  /** The value of one of its cookies (any host), to hand to another browser. */
  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  submit(url: string, values: Record<string, string>): Promise<Response> {
    return this.fetch(url, { method: 'POST', body: new URLSearchParams(values), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  }

  /** Follows redirects until a page (200/4xx) or a URL `stop` accepts. */
  async follow(response: Response, stop: (url: URL) => boolean): Promise<{ response: Response; url: URL | null }> {
    let current = response;
    for (let hop = 0; hop < 15; hop++) {
      const location = current.headers.get('location');
      if (!location || current.status < 300 || current.status >= 400) return { response: current, url: null };
      const url = new URL(location, this.last);
      if (stop(url)) return { response: current, url };
      current = await this.fetch(url.href);
    }
    throw new Error('too many redirects');
  }
}
