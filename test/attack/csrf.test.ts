/**
 * RFC 9700 §4.7 (cross-site request forgery). Our own forms (sign-in, consent) carry a token tied
 * to the interaction and are accepted only from the browser that started it (a cookie set at
 * /authorize): a forged post, or a link to an interaction an attacker started, signs nobody in and
 * issues no code. The client's CSRF defence, `state`, comes back exactly as sent.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { BROWSER_COOKIE } from '../../src/authorization-server/http/cookies.js';
import { authorize, authorizationRequest, authorizeUrl, Browser, parseForm, registerClient, REVISIONS, type Harness } from '../helpers/harness.js';
import { assertUnchanged, ISSUED, onEveryStore, USER } from './setup.js';

const revision = REVISIONS[1];

/** Starts an authorization in `browser` and returns the interaction path and the sign-in form. */
async function startInteraction(h: Harness, browser: Browser): Promise<{ path: string; action: string; csrf: string; binding: string }> {
  const client = await registerClient(h);
  const { params } = authorizationRequest(client, revision);
  const response = await browser.fetch(authorizeUrl(params));
  const path = response.headers.get('location')!;
  assert.match(path, /^\/interaction\//);
  const binding = response.headers.getSetCookie().map((line) => line.split(';')[0]!).find((pair) => pair.startsWith(`${BROWSER_COOKIE}=`));
  assert.ok(binding, 'the browser binding cookie');
  const { action, csrf } = parseForm(await (await browser.fetch(path)).text());
  return { path, action, csrf, binding };
}

onEveryStore('§4.7 cross-site request forgery', (env) => {
  for (const [name, csrf] of [['without a csrf token', undefined], ['with a wrong csrf token', 'forged-token']] as const) {
    it(`a sign-in post ${name} is refused with 403 and signs nobody in`, async () => {
      const h = await env.target();
      const browser = new Browser(h);
      const { action } = await startInteraction(h, browser);
      const before = await env.counts();
      const values: Record<string, string> = { step: 'login', username: USER.username, password: USER.password };
      if (csrf) values.csrf = csrf;
      const response = await browser.submit(action, values);
      assert.equal(response.status, 403, await response.clone().text());
      assert.match(await response.text(), /could not be verified/);
      assert.equal(response.headers.getSetCookie().length, 0, 'no session cookie');
      assertUnchanged(before, await env.counts(), ['sessions', ...ISSUED], name);
    });
  }

  it('an interaction an attacker started does not complete in the victim\'s browser (login CSRF)', async () => {
    const h = await env.target();
    const attacker = new Browser(h);
    const { path, action, csrf } = await startInteraction(h, attacker);
    const victim = new Browser(h);
    const page = await victim.fetch(path);
    assert.equal(page.status, 400);
    assert.match(await page.text(), /expired or was opened in another browser/);
    const before = await env.counts();
    // Even with the page's csrf token (the attacker has it), the post needs the attacker's cookie.
    const forged = await victim.submit(action, { csrf, step: 'login', username: USER.username, password: USER.password });
    assert.equal(forged.status, 400);
    assert.equal(forged.headers.get('location'), null);
    assertUnchanged(before, await env.counts(), ['sessions', ...ISSUED], 'foreign interaction');
  });

  it('a consent post without a session for the signed-in user is refused and issues no code', async () => {
    const h = await env.target();
    const browser = new Browser(h);
    const { action, csrf, binding } = await startInteraction(h, browser);
    const signedIn = await browser.submit(action, { csrf, step: 'login', username: USER.username, password: USER.password });
    assert.equal(signedIn.status, 303);
    // A post with the interaction's binding and csrf token, but not the session of the user who signed in.
    const before = await env.counts();
    const forged = await h.request(action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: binding },
      body: new URLSearchParams({ csrf, step: 'consent', decision: 'approve' }),
    });
    assert.equal(forged.status, 400);
    assert.match(await forged.text(), /session ended/);
    assertUnchanged(before, await env.counts(), ISSUED, 'consent without session');
  });

  it('state comes back to the client exactly as sent, odd characters and all', async () => {
    const h = await env.target();
    const client = await registerClient(h);
    const state = 'ä &=?#+%20/\u{1F511}';
    const { location } = await authorize(h, { client, user: USER, resource: revision.resource, state });
    assert.equal(location.searchParams.get('state'), state);
  });
});
