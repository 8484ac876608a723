/**
 * Native apps' own redirect URI schemes (RFC 8252 §7.1), admitted by the operator by name
 * (`allowedRedirectSchemes`, `serve --allow-redirect-scheme`): the consent page says the code goes
 * to an app on the person's device, the browser's form may lead there (CSP form-action), the
 * redirect carries code, state and iss, and the code redeems like any other. A scheme the server
 * no longer admits is not used, even for a client that registered it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  addUser,
  authorize,
  authorizeUrl,
  Browser,
  createHarness,
  expectOAuthError,
  ISSUER,
  parseForm,
  pkcePair,
  redeemCode,
  registerClient,
  type Harness,
  type TestClient,
} from '../helpers/harness.js';
import { CURSOR_REGISTRATION } from '../helpers/recorded-hosts.js';

const CURSOR_CALLBACK = 'cursor://anysphere.cursor-mcp/oauth/callback';

/** Registers with exactly this body, as the host sends it. */
async function registerAsRecorded(h: Harness, body: object): Promise<TestClient> {
  const response = await h.request('/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(response.status, 201, await response.clone().text());
  return (await response.json()) as TestClient;
}

describe('a private-use redirect scheme the operator admits', () => {
  it("Cursor's flow with cursor:// end to end: the consent page names an app on the device, the code comes back with state and iss, and redeems", async () => {
    const h = createHarness({ allowedRedirectSchemes: ['cursor'] });
    const user = await addUser(h);
    const client = await registerAsRecorded(h, CURSOR_REGISTRATION);
    assert.deepEqual(client.redirect_uris, CURSOR_REGISTRATION.redirect_uris);

    const browser = new Browser(h);
    const { verifier, challenge } = pkcePair();
    const first = await browser.fetch(
      authorizeUrl({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: CURSOR_CALLBACK,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: 'cursor-state',
      }),
    );
    const interaction = first.headers.get('location')!;
    const login = parseForm(await (await browser.fetch(interaction)).text());
    assert.equal((await browser.submit(login.action, { csrf: login.csrf, step: 'login', username: user.username, password: user.password })).status, 303);
    const consentPage = await browser.fetch(interaction);
    const consent = await consentPage.text();
    assert.match(
      consent,
      /Returns to an app on your device, not to a website: approving hands the result to the app that opens <code>cursor:<\/code> links on this device\./,
    );
    assert.match(
      consent,
      /<dt>Returns to<\/dt><dd>an app on your device: <code class="token"><span>cursor:\/\/<\/span><wbr><span>anysphere\.cursor-mcp<\/span><\/code><\/dd>/,
    );
    assert.match(consentPage.headers.get('content-security-policy') ?? '', /form-action 'self' cursor:;/, 'the browser may follow the approval to the app');
    const { action, csrf } = parseForm(consent);
    const approved = await browser.submit(action, { csrf, step: 'consent', decision: 'approve' });
    assert.equal(approved.status, 303);
    const location = new URL(approved.headers.get('location')!);
    assert.equal(`${location.protocol}//${location.host}${location.pathname}`, CURSOR_CALLBACK);
    assert.equal(location.searchParams.get('state'), 'cursor-state');
    assert.equal(location.searchParams.get('iss'), ISSUER);
    const code = location.searchParams.get('code');
    assert.ok(code);
    const redeemed = await redeemCode(h, client, code, verifier, { redirect_uri: CURSOR_CALLBACK });
    assert.equal(redeemed.status, 200, await redeemed.clone().text());
  });

  it('the same Cursor client still signs in through its https and loopback URIs, which the page shows as sites', async () => {
    const h = createHarness();
    const user = await addUser(h);
    const client = await registerAsRecorded(h, CURSOR_REGISTRATION);
    const { location } = await authorize(h, { client, user, redirectUri: 'http://localhost:8787/callback' });
    assert.ok(location.href.startsWith('http://localhost:8787/callback?code='), location.href);
  });

  it('a scheme no longer admitted is not used for a client that registered it, named or by default', async () => {
    const store = createHarness().store;
    const admitted = createHarness({ store, allowedRedirectSchemes: ['cursor'] });
    const only = await registerClient(admitted, { redirect_uris: [CURSOR_CALLBACK] });
    const withdrawn = createHarness({ store });
    const browser = new Browser(withdrawn);
    const { challenge } = pkcePair();
    const named = await browser.fetch(
      authorizeUrl({
        response_type: 'code',
        client_id: only.client_id,
        redirect_uri: CURSOR_CALLBACK,
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }),
    );
    assert.equal(named.status, 400);
    assert.equal(named.headers.get('location'), null, 'a page, never a redirect');
    const unnamed = await browser.fetch(
      authorizeUrl({ response_type: 'code', client_id: only.client_id, code_challenge: challenge, code_challenge_method: 'S256' }),
    );
    assert.equal(unnamed.status, 400);
    assert.equal(unnamed.headers.get('location'), null);
    assert.match(await unnamed.text(), /registered a redirect URI this server no longer sends anyone to/);
  });

  it('refuses schemes that are no private-use scheme at start, and a registration cannot name one', async () => {
    for (const scheme of ['http', 'javascript', 'data', 'file', 'cursor:']) {
      assert.throws(() => createHarness({ allowedRedirectSchemes: [scheme] }), /allowedRedirectSchemes: /, scheme);
    }
    const h = createHarness({ allowedRedirectSchemes: ['cursor'] });
    const refused = await h.request('/register', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token_endpoint_auth_method: 'none', redirect_uris: ['javascript://x/%0aalert(1)'] }),
    });
    await expectOAuthError(refused, 400, 'invalid_redirect_uri');
  });
});
