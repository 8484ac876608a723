/**
 * RFC 9700 §4.16 (clickjacking). The pages where a person signs in or approves a client may not be
 * framed by anyone (X-Frame-Options DENY for old browsers, CSP frame-ancestors 'none' for the
 * rest), so no other site can overlay them and trick a click on Approve.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { authorizationRequest, authorizeUrl, Browser, parseForm, registerClient, REVISIONS } from '../helpers/harness.js';
import { onEveryStore, USER } from './setup.js';

const revision = REVISIONS[1];

function assertUnframeable(response: Response, what: string): void {
  assert.equal(response.headers.get('x-frame-options'), 'DENY', `${what}: X-Frame-Options`);
  const csp = response.headers.get('content-security-policy') ?? '';
  assert.match(csp, /(^|;\s*)frame-ancestors 'none'(;|$)/, `${what}: CSP frame-ancestors, got ${csp}`);
}

onEveryStore('§4.16 clickjacking', (env) => {
  it('the sign-in page, the consent page and an error page cannot be framed', async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const browser = new Browser(h);
    const { params } = authorizationRequest(client, revision);
    const first = await browser.fetch(authorizeUrl(params));
    const interaction = first.headers.get('location')!;

    const login = await browser.fetch(interaction);
    const loginHtml = await login.text();
    assert.match(loginHtml, /name="password"/);
    assertUnframeable(login, 'sign-in page');

    const { action, csrf } = parseForm(loginHtml);
    const wrong = await browser.submit(action, { csrf, step: 'login', username: USER.username, password: 'wrong' });
    assert.match(await wrong.text(), /Wrong username or password/);
    assertUnframeable(wrong, 'sign-in page with an error');

    const signedIn = await browser.submit(action, { csrf, step: 'login', username: USER.username, password: USER.password });
    assert.equal(signedIn.status, 303);
    const consent = await browser.fetch(signedIn.headers.get('location')!);
    const consentHtml = await consent.text();
    assert.match(consentHtml, /name="decision"/);
    assertUnframeable(consent, 'consent page');

    const error = await new Browser(h).fetch(interaction);
    assert.equal(error.status, 400);
    assertUnframeable(error, 'error page');
  });
});
