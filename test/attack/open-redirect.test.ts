/**
 * RFC 9700 §4.1 (insufficient redirect URI validation) and §4.11.1 (the authorization server as
 * an open redirector). A redirect URI is compared with the registered ones as a string (a loopback
 * http URI may differ in port only, RFC 8252 §7.3); until it matches, every error is a page shown
 * to the person and never a redirect, and no interaction is started.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { authorizationRequest, authorizeUrl, Browser, registerClient, REVISIONS, type Harness } from '../helpers/harness.js';
import { assertUnchanged, onEveryStore } from './setup.js';

const revision = REVISIONS[1];

/** A lookalike of the registered http://127.0.0.1:33333/callback an attacker might try. */
const LOOKALIKES = [
  'https://evil.example/callback',
  'http://127.0.0.1:33333/callback/evil',
  'http://127.0.0.1:33333/callback?next=https://evil.example',
  'http://127.0.0.1:33333/callback/../evil',
  'http://127.0.0.1:33333@evil.example/callback',
  'http://127.0.0.1.evil.example:33333/callback',
  'http://127.0.0.1:33333/CALLBACK',
  'http://127.0.0.1:33333/callback#x',
  ' http://127.0.0.1:33333/callback',
  'http://127.0.0.1:33333/callback\t',
];

/** The answer must be the error page: no redirect, nothing for the browser to follow. */
async function expectErrorPage(response: Response, what: string): Promise<string> {
  const text = await response.text();
  assert.equal(response.status, 400, `${what}: ${text.slice(0, 200)}`);
  assert.equal(response.headers.get('location'), null, `${what}: no redirect`);
  assert.match(response.headers.get('content-type') ?? '', /^text\/html/, what);
  assert.doesNotMatch(text, /evil\.example/, `${what}: the attacker's URI is not shown as a link target`);
  return text;
}

onEveryStore('§4.1 / §4.11 redirect URI validation and open redirection', (env) => {
  for (const lookalike of LOOKALIKES) {
    it(`refuses the unregistered redirect_uri ${JSON.stringify(lookalike)} with a page, not a redirect`, async () => {
      const h = await env.target();
      const client = await registerClient(h);
      const before = await env.counts();
      const { params } = authorizationRequest(client, revision, { redirect_uri: lookalike });
      await expectErrorPage(await new Browser(h).fetch(authorizeUrl(params)), lookalike);
      assertUnchanged(before, await env.counts(), ['interactions', 'authorization_codes', 'grants'], lookalike);
    });
  }

  it('an https redirect URI must match in its port too: only loopback http may change port', async () => {
    const h = await env.target();
    const client = await registerClient(h, { redirect_uris: ['https://app.example/cb', 'http://127.0.0.1:33333/callback'] });
    const before = await env.counts();
    const refused = authorizationRequest(client, revision, { redirect_uri: 'https://app.example:8443/cb' }).params;
    await expectErrorPage(await new Browser(h).fetch(authorizeUrl(refused)), 'https port');
    assertUnchanged(before, await env.counts(), ['interactions'], 'https with another port');
    // The loopback exception is what native apps need (RFC 8252 §7.3): another port is a login page.
    const allowed = authorizationRequest(client, revision, { redirect_uri: 'http://127.0.0.1:45001/callback' }).params;
    const response = await new Browser(h).fetch(authorizeUrl(allowed));
    assert.equal(response.status, 303);
    assert.match(response.headers.get('location') ?? '', /^\/interaction\//);
  });

  it('an unknown client with an attacker redirect_uri gets a page, never a redirect (§4.11.1)', async () => {
    const h: Harness = await env.target();
    const before = await env.counts();
    const response = await new Browser(h).fetch(
      authorizeUrl({ response_type: 'code', client_id: 'no-such-client', redirect_uri: 'https://evil.example/phish', state: 's' }),
    );
    await expectErrorPage(response, 'unknown client');
    assertUnchanged(before, await env.counts(), ['interactions', 'clients'], 'unknown client');
  });

  it('with two registered redirect URIs, a request naming none is refused with a page', async () => {
    const h = await env.target();
    const client = await registerClient(h, { redirect_uris: ['http://127.0.0.1:33333/callback', 'https://app.example/cb'] });
    const { params } = authorizationRequest(client, revision, { redirect_uri: undefined });
    await expectErrorPage(await new Browser(h).fetch(authorizeUrl(params)), 'no redirect_uri');
  });
});
