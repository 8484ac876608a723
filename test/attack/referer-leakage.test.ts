/**
 * RFC 9700 §4.2 (credential leakage via Referer headers) and §4.3 (via browser history). The
 * redirect that carries the code to the client sends no Referer, and every page the person sees on
 * the way (sign-in, consent, error) sends one to our own origin only (so that its forms carry our
 * Origin, which a post is checked by); none is kept by the browser: a page the client shows after
 * the callback, or a third-party resource on it, never learns the code or the interaction URL from us.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { authorize, authorizationRequest, authorizeUrl, Browser, registerClient, REVISIONS } from '../helpers/harness.js';
import { onEveryStore, USER } from './setup.js';

const revision = REVISIONS[1];

function assertNoReferrer(response: Response, what: string, policy = 'no-referrer'): void {
  assert.equal(response.headers.get('referrer-policy'), policy, `${what}: Referrer-Policy`);
  assert.equal(response.headers.get('cache-control'), 'no-store', `${what}: Cache-Control`);
}

/** A page: a Referer to our own origin only. */
const assertOwnReferrerOnly = (response: Response, what: string): void => assertNoReferrer(response, what, 'same-origin');

onEveryStore('§4.2 credential leakage via Referer', (env) => {
  it('the redirect carrying the code sends no Referer and is not cached', async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const browser = new Browser(h);
    await authorize(h, { client, user: USER, resource: revision.resource, browser });
    // Signed in and consented: the next request is answered with the code at once.
    const { params } = authorizationRequest(client, revision);
    const response = await browser.fetch(authorizeUrl(params));
    assert.equal(response.status, 303);
    assert.match(response.headers.get('location') ?? '', /[?&]code=/);
    assertNoReferrer(response, 'code redirect');
  });

  it('the sign-in and consent pages send a Referer to our own origin only, and the redirect between them none', async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const browser = new Browser(h);
    const { params } = authorizationRequest(client, revision);
    const first = await browser.fetch(authorizeUrl(params));
    assertNoReferrer(first, 'redirect to the interaction');
    const page = await browser.fetch(first.headers.get('location')!);
    const html = await page.text();
    assert.match(html, /name="password"/);
    assertOwnReferrerOnly(page, 'sign-in page');
    assert.match(html, /<meta name="referrer" content="same-origin">/);
  });

  it('an error page (an unknown interaction) sends a Referer to our own origin only, too', async () => {
    const h = await env.target();
    const response = await new Browser(h).fetch('/interaction/not-an-interaction');
    assert.equal(response.status, 400);
    assertOwnReferrerOnly(response, 'error page');
  });
});
