/**
 * The person at node-oidc-provider's own device pages (RFC 8628), on "another device": a fetch
 * with a cookie jar, following redirects and submitting the pages' forms as a browser would.
 */
import assert from 'node:assert/strict';

/** A person's browser, reduced to what the provider's pages need: cookies, redirects, forms. */
class PersonAtBrowser {
  private readonly cookies = new Map<string, string>();

  /** Loads `url` (a form's POST when `form` is given), following redirects; the final page's HTML. */
  async open(url: string, form?: URLSearchParams): Promise<{ status: number; url: string; html: string }> {
    let next = url;
    let init: RequestInit = form ? { method: 'POST', body: form, headers: { 'content-type': 'application/x-www-form-urlencoded' } } : {};
    for (let hops = 0; hops < 20; hops++) {
      const headers = new Headers(init.headers);
      if (this.cookies.size > 0) headers.set('cookie', [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; '));
      const response = await fetch(next, { ...init, headers, redirect: 'manual' });
      for (const cookie of response.headers.getSetCookie()) {
        const [pair] = cookie.split(';');
        const at = pair!.indexOf('=');
        this.cookies.set(pair!.slice(0, at).trim(), pair!.slice(at + 1));
      }
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location) {
        await response.body?.cancel();
        next = new URL(location, next).href;
        init = {};
        continue;
      }
      return { status: response.status, url: next, html: await response.text() };
    }
    throw new Error(`too many redirects from ${url}`);
  }

  /** Submits the page's first form as it is, plus `extra` (the button pressed). */
  async submit(page: { url: string; html: string }, extra: Record<string, string> = {}): Promise<{ status: number; url: string; html: string }> {
    const action = /<form[^>]*action="([^"]+)"/.exec(page.html)?.[1];
    assert.ok(action, `no form on ${page.url}: ${page.html.slice(0, 300)}`);
    const form = new URLSearchParams();
    for (const [, name, value] of page.html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/>/g)) form.set(name!, value!);
    for (const [name, value] of Object.entries(extra)) form.set(name, value);
    return this.open(new URL(action, page.url).href, form);
  }
}

/**
 * On another device: opens the page with the code filled in (the provider posts it on), then
 * presses Continue, or Abort, on the confirmation page.
 */
export async function personEntersCode(verificationUriComplete: string, userCode: string, choice: 'continue' | 'abort'): Promise<string> {
  const person = new PersonAtBrowser();
  const posted = await person.open(verificationUriComplete);
  const confirmation = await person.submit(posted);
  assert.match(confirmation.html, /Confirm Device/, 'the provider asks to confirm the code');
  assert.ok(confirmation.html.includes(userCode), 'the confirmation page shows the same code');
  const done = await person.submit(confirmation, choice === 'abort' ? { abort: 'yes' } : {});
  return done.html;
}
