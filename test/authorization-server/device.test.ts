import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { DEVICE_CODE_GRANT_TYPE } from '../../src/core/protocol.js';
import { hashSecret } from '../../src/core/secrets.js';
import {
  addResourceServer,
  addUser,
  authorize,
  Browser,
  createHarness,
  expectOAuthError,
  introspect,
  ISSUER,
  jwtClaims,
  OTHER_RESOURCE,
  parseForm,
  plainTokens,
  postForm,
  redeemCode,
  registerClient,
  RESOURCE,
  type Harness,
  type TestClient,
} from '../helpers/harness.js';
import { withoutCapabilities } from '../helpers/core-store.js';

interface DeviceAnswer {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/** A device client, registered as a CLI would: public, no redirect URI. */
function registerDeviceClient(h: Harness, metadata: Record<string, unknown> = {}): Promise<TestClient> {
  return registerClient(h, { client_name: 'Living-room TV', redirect_uris: undefined, grant_types: [DEVICE_CODE_GRANT_TYPE, 'refresh_token'], ...metadata });
}

async function requestDevice(h: Harness, client: TestClient, extra: Record<string, string | undefined> = {}): Promise<DeviceAnswer> {
  const response = await postForm(h, '/device_authorization', { client_id: client.client_id, ...extra });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()) as DeviceAnswer;
}

function poll(h: Harness, client: TestClient, deviceCode: string): Promise<Response> {
  return postForm(h, '/token', { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: deviceCode, client_id: client.client_id });
}

/** Opens the link with the code, submits the code form as shown (or with `typed`), and returns the answer to that post. */
async function enterCode(browser: Browser, device: DeviceAnswer, typed?: string): Promise<Response> {
  const page = await browser.fetch(new URL(device.verification_uri_complete).pathname + new URL(device.verification_uri_complete).search);
  assert.equal(page.status, 200);
  const html = await page.text();
  const { action, csrf } = parseForm(html);
  return browser.submit(action, { csrf, user_code: typed ?? device.user_code });
}

/** From the code form's answer on: signs in and returns the device consent page's HTML and its form. */
async function signIn(
  browser: Browser,
  afterCode: Response,
  user: { username: string; password: string },
): Promise<{ html: string; action: string; csrf: string }> {
  assert.equal(afterCode.status, 303, await afterCode.clone().text());
  const interaction = new URL(afterCode.headers.get('location')!, ISSUER).pathname;
  let html = await (await browser.fetch(interaction)).text();
  if (html.includes('name="password"')) {
    const { action, csrf } = parseForm(html);
    const signedIn = await browser.submit(action, { csrf, step: 'login', username: user.username, password: user.password });
    assert.equal(signedIn.status, 303);
    html = await (await browser.fetch(interaction)).text();
  }
  return { html, ...parseForm(html) };
}

/** The whole person's part: code, sign-in, decision. Returns the final page. */
async function decide(
  h: Harness,
  device: DeviceAnswer,
  decision: 'approve' | 'deny',
  browser = new Browser(h),
): Promise<{ status: number; html: string; consent: string }> {
  const user = (await h.store.getUser({ username: 'alice' })) ? { username: 'alice', password: 'correct horse battery' } : await addUser(h);
  const consent = await signIn(browser, await enterCode(browser, device), user);
  const done = await browser.submit(consent.action, { csrf: consent.csrf, step: 'consent', decision });
  return { status: done.status, html: await done.text(), consent: consent.html };
}

describe('device authorization endpoint (RFC 8628 §3.1–3.2)', () => {
  it('is advertised in the metadata, with the grant type', () => {
    const h = createHarness();
    assert.equal(h.server.metadata.device_authorization_endpoint, `${ISSUER}/device_authorization`);
    assert.ok(h.server.metadata.grant_types_supported.includes(DEVICE_CODE_GRANT_TYPE));
  });

  it('registers a device client without redirect URIs, and answers codes, the verification URIs, expiry and interval', async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h);
    assert.deepEqual(client.redirect_uris, []);
    const device = await requestDevice(h, client);
    assert.match(device.device_code, /^[A-Za-z0-9_-]{43}$/);
    assert.match(device.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    assert.equal(device.verification_uri, `${ISSUER}/device`);
    assert.equal(device.verification_uri_complete, `${ISSUER}/device?user_code=${device.user_code}`);
    assert.equal(device.expires_in, 600);
    assert.equal(device.interval, 5);
    // Stored only hashed.
    const stored = await h.store.findPendingDeviceAuthorization(hashSecret(`user_code:${device.user_code.replace('-', '')}`), h.clock.now);
    assert.ok(stored);
    assert.equal(JSON.stringify(stored).includes(device.device_code), false);
    assert.equal(JSON.stringify(stored).includes(device.user_code.replace('-', '')), false);
  });

  it('refuses a client not registered for the device grant, and an unknown or unauthenticated one', async () => {
    const h = createHarness();
    const browserClient = await registerClient(h);
    await expectOAuthError(await postForm(h, '/device_authorization', { client_id: browserClient.client_id }), 400, 'unauthorized_client');
    await expectOAuthError(await postForm(h, '/device_authorization', { client_id: 'nobody' }), 401, 'invalid_client');
    const confidential = await registerDeviceClient(h, { token_endpoint_auth_method: 'client_secret_post' });
    await expectOAuthError(await postForm(h, '/device_authorization', { client_id: confidential.client_id }), 401, 'invalid_client');
    const answer = await postForm(h, '/device_authorization', { client_id: confidential.client_id, client_secret: confidential.client_secret });
    assert.equal(answer.status, 200);
  });

  it('checks scope and resource as /authorize does', async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h);
    await expectOAuthError(await postForm(h, '/device_authorization', { client_id: client.client_id, scope: 'no:such-scope' }), 400, 'invalid_scope');
    await expectOAuthError(
      await postForm(h, '/device_authorization', { client_id: client.client_id, resource: 'https://elsewhere.example/mcp' }),
      400,
      'invalid_target',
    );
    await expectOAuthError(
      await h.request('/device_authorization', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `client_id=${client.client_id}&resource=${encodeURIComponent(RESOURCE)}&resource=${encodeURIComponent(OTHER_RESOURCE)}`,
      }),
      400,
      'invalid_target',
    );
  });

  it('shares the token endpoint’s rate limit per address', async () => {
    const h = createHarness({ clientAddress: () => '203.0.113.7', rateLimits: { token: { burst: 2, perMinute: 1 } } });
    const client = await registerDeviceClient(h);
    await requestDevice(h, client);
    await requestDevice(h, client);
    const limited = await postForm(h, '/device_authorization', { client_id: client.client_id });
    await expectOAuthError(limited, 429, 'temporarily_unavailable');
  });

  it('refuses a registration asking for a refresh token without a grant that issues one', async () => {
    const h = createHarness();
    await assert.rejects(registerClient(h, { redirect_uris: undefined, grant_types: ['refresh_token'] }), /refresh_token: issued only with/);
  });
});

describe('device code grant (RFC 8628 §3.4–3.5)', () => {
  it('pending, then tokens for the resource asked, with a refresh token, once the person approved', async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h);
    const device = await requestDevice(h, client, { resource: OTHER_RESOURCE });
    await expectOAuthError(await poll(h, client, device.device_code), 400, 'authorization_pending');
    const done = await decide(h, device, 'approve');
    assert.equal(done.status, 200);
    assert.match(done.html, /You can return to your device/);
    h.clock.now += 5;
    const response = await poll(h, client, device.device_code);
    assert.equal(response.status, 200);
    const tokens = (await response.json()) as Record<string, string>;
    assert.equal(tokens.token_type, 'Bearer');
    assert.equal(typeof tokens.refresh_token, 'string');
    assert.equal(jwtClaims(tokens.access_token).aud, OTHER_RESOURCE);
    assert.equal(jwtClaims(tokens.access_token).sub, 'user-alice');
    const refreshed = await postForm(h, '/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id });
    assert.equal(refreshed.status, 200);
    // The consent is remembered as for a browser's client.
    assert.equal((await h.store.listConsents({ clientId: client.client_id })).length, 1);
  });

  it('with openid, an ID token beside the tokens, which a relying party verifies: the person, for the device client, with no nonce', async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h);
    const device = await requestDevice(h, client, { scope: 'openid mcp:tools' });
    assert.equal((await decide(h, device, 'approve')).status, 200);
    h.clock.now += 5;
    const response = await poll(h, client, device.device_code);
    const tokens = (await response.json()) as Record<string, string>;
    assert.equal(response.status, 200, JSON.stringify(tokens));
    assert.equal(typeof tokens.id_token, 'string');
    const jwks = (await (await h.request('/jwks')).json()) as JSONWebKeySet;
    const { payload } = await jwtVerify(tokens.id_token!, createLocalJWKSet(jwks), {
      issuer: ISSUER,
      audience: client.client_id,
      currentDate: new Date(h.clock.now * 1000),
    });
    assert.equal(payload.sub, 'user-alice');
    assert.equal(payload.sub, jwtClaims(tokens.access_token).sub);
    // No authorization request carried one: nonce is in an ID token only when the request sent it (OpenID Connect Core §2).
    assert.equal(payload.nonce, undefined);
    assert.equal(typeof payload.auth_time, 'number');
    // Without openid, none.
    const plain = await requestDevice(h, client, { scope: 'mcp:tools' });
    assert.equal((await decide(h, plain, 'approve')).status, 200);
    h.clock.now += 5;
    assert.equal(((await (await poll(h, client, plain.device_code)).json()) as Record<string, string>).id_token, undefined);
  });

  it('slow_down when polled sooner than the interval, which then grows by 5 s for later polls', async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h);
    const device = await requestDevice(h, client);
    await expectOAuthError(await poll(h, client, device.device_code), 400, 'authorization_pending');
    h.clock.now += 2;
    const slow = await expectOAuthError(await poll(h, client, device.device_code), 400, 'slow_down');
    assert.match(slow.error_description ?? '', /10 seconds/);
    h.clock.now += 9;
    await expectOAuthError(await poll(h, client, device.device_code), 400, 'slow_down');
    h.clock.now += 15;
    await expectOAuthError(await poll(h, client, device.device_code), 400, 'authorization_pending');
  });

  it('expired_token once the device code expired, approved or not', async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h);
    const device = await requestDevice(h, client);
    h.clock.now += 600;
    await expectOAuthError(await poll(h, client, device.device_code), 400, 'expired_token');
    const browser = new Browser(h);
    await addUser(h);
    const page = await enterCode(browser, device);
    assert.equal(page.status, 400, 'an expired code is not accepted on the page either');
  });

  it('access_denied once the person denied, and the page says so', async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h);
    const device = await requestDevice(h, client);
    const done = await decide(h, device, 'deny');
    assert.equal(done.status, 200);
    assert.match(done.html, /Request denied/);
    await expectOAuthError(await poll(h, client, device.device_code), 400, 'access_denied');
  });

  it('a device code redeemed twice is invalid_grant, and what the first redemption got is revoked', async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h);
    const device = await requestDevice(h, client);
    await decide(h, device, 'approve');
    const first = (await (await poll(h, client, device.device_code)).json()) as Record<string, string>;
    h.clock.now += 5;
    await expectOAuthError(await poll(h, client, device.device_code), 400, 'invalid_grant');
    assert.deepEqual(await introspect(h, first.access_token, await addResourceServer(h)), { active: false });
    const refresh = await postForm(h, '/token', { grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: client.client_id });
    await expectOAuthError(refresh, 400, 'invalid_grant');
  });

  it("another client's device code is invalid_grant, and leaves it usable by its own client", async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h);
    const other = await registerDeviceClient(h);
    const device = await requestDevice(h, client);
    await decide(h, device, 'approve');
    await expectOAuthError(await poll(h, other, device.device_code), 400, 'invalid_grant');
    assert.equal((await poll(h, client, device.device_code)).status, 200);
  });

  it('an unknown device code is invalid_grant; a client not registered for the grant is unauthorized_client', async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h);
    await expectOAuthError(await poll(h, client, 'no-such-code'), 400, 'invalid_grant');
    await expectOAuthError(await postForm(h, '/token', { grant_type: DEVICE_CODE_GRANT_TYPE, client_id: client.client_id }), 400, 'invalid_request');
    const browserClient = await registerClient(h);
    await expectOAuthError(await poll(h, browserClient, 'x'), 400, 'unauthorized_client');
  });

  it('a device code is never an authorization code, nor an authorization code a device code', async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h, {
      grant_types: [DEVICE_CODE_GRANT_TYPE, 'authorization_code', 'refresh_token'],
      redirect_uris: ['http://127.0.0.1:33333/callback'],
    });
    const device = await requestDevice(h, client);
    await decide(h, device, 'approve');
    await expectOAuthError(await redeemCode(h, client, device.device_code, 'v'.repeat(43)), 400, 'invalid_grant');
    // Unspent by that attempt: the device still gets its tokens.
    assert.equal((await poll(h, client, device.device_code)).status, 200);

    const { location } = await authorize(h, { client, user: { username: 'alice', password: 'correct horse battery' } });
    const code = location.searchParams.get('code')!;
    await expectOAuthError(await poll(h, client, code), 400, 'invalid_grant');
  });
});

describe('device verification page (RFC 8628 §3.3)', () => {
  it('fills in the code from the link but approves nothing until the person submits it and approves', async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h);
    const device = await requestDevice(h, client);
    const browser = new Browser(h);
    const page = await browser.fetch(`/device?user_code=${device.user_code}`);
    const html = await page.text();
    assert.equal(page.status, 200);
    assert.match(html, new RegExp(`name="user_code"[^>]*value="${device.user_code}"`));
    assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    await expectOAuthError(await poll(h, client, device.device_code), 400, 'authorization_pending');
  });

  it('accepts the code in any case, with or without the dash or spaces', async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h);
    for (const typed of [(c: string) => c.toLowerCase(), (c: string) => c.replace('-', ''), (c: string) => ` ${c.replace('-', ' ')} `]) {
      const device = await requestDevice(h, client);
      const answer = await enterCode(new Browser(h), device, typed(device.user_code));
      assert.equal(answer.status, 303, typed(device.user_code));
    }
  });

  it('the consent page says a device asks, names the client as unverified and shows the code to compare', async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h);
    const device = await requestDevice(h, client);
    const { consent } = await decide(h, device, 'deny');
    assert.match(consent, /A device is asking/);
    assert.match(consent, /Living-room TV/);
    assert.match(consent, /Unverified name/);
    assert.match(plainTokens(consent), new RegExp(`<code>${client.client_id}</code>`));
    assert.match(consent, new RegExp(`class="user-code">${device.user_code}<`));
  });

  it('a wrong code says so plainly; a used code cannot be used again', async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h);
    const device = await requestDevice(h, client);
    const wrong = await enterCode(new Browser(h), device, 'BCDF-GHJK');
    assert.equal(wrong.status, 400);
    assert.match(await wrong.text(), /That code is wrong, expired or already used/);
    await decide(h, device, 'approve');
    const again = await enterCode(new Browser(h), device);
    assert.equal(again.status, 400);
  });

  it('two browsers with the same code: only the first decision is taken', async () => {
    const h = createHarness();
    await addUser(h);
    const client = await registerDeviceClient(h);
    const device = await requestDevice(h, client);
    const user = { username: 'alice', password: 'correct horse battery' };
    const [a, b] = [new Browser(h), new Browser(h)];
    const consentA = await signIn(a, await enterCode(a, device), user);
    const consentB = await signIn(b, await enterCode(b, device), user);
    const approved = await a.submit(consentA.action, { csrf: consentA.csrf, step: 'consent', decision: 'approve' });
    assert.match(await approved.text(), /You can return to your device/);
    const late = await b.submit(consentB.action, { csrf: consentB.csrf, step: 'consent', decision: 'deny' });
    assert.match(await late.text(), /can no longer be used/);
    assert.equal((await poll(h, client, device.device_code)).status, 200);
  });

  it('throttles guessing: after a few wrong codes from an address, even the right one waits', async () => {
    const h = createHarness({ clientAddress: () => '203.0.113.7' });
    const client = await registerDeviceClient(h);
    const device = await requestDevice(h, client);
    const browser = new Browser(h);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await enterCode(browser, device, 'BCDF-GHJK')).status);
    assert.deepEqual(statuses.slice(0, 6), [400, 400, 400, 400, 400, 400]);
    assert.equal(statuses[6], 429);
    const right = await enterCode(browser, device);
    assert.equal(right.status, 429);
    assert.ok(Number(right.headers.get('retry-after')) >= 1);
    assert.match(await right.text(), /Too many wrong codes/);
    // Logged with the address as the throttle counts it, for the console's throttling page.
    assert.ok(h.log.some((event) => event.event === 'user_code_wrong' && event.address === '203.0.113.7'));
    assert.ok(h.log.some((event) => event.event === 'user_code_throttled' && event.address === '203.0.113.7'));
  });

  it('refuses a code form posted without this browser’s token', async () => {
    const h = createHarness();
    const client = await registerDeviceClient(h);
    const device = await requestDevice(h, client);
    const browser = new Browser(h);
    await browser.fetch('/device');
    const forged = await browser.submit('/device', { csrf: 'forged', user_code: device.user_code });
    assert.equal(forged.status, 403);
  });

  it("binds the code form to the session when someone is signed in, else to this browser: another's token, or the old digest of the cookie, is refused", async () => {
    const h = createHarness();
    const user = await addUser(h);
    const client = await registerDeviceClient(h);
    const device = await requestDevice(h, client);
    const browser = new Browser(h);
    const signedOutToken = parseForm(await (await browser.fetch('/device')).text()).csrf;
    const oldDigest = hashSecret(`device-form:${browser.cookie('ca_browser')}`);
    const account = parseForm(await (await browser.fetch('/account')).text());
    assert.equal((await browser.submit('/account', { csrf: account.csrf, action: 'sign-in', username: user.username, password: user.password })).status, 303);
    const signedInToken = parseForm(await (await browser.fetch('/device')).text()).csrf;
    assert.notEqual(signedInToken, signedOutToken);
    const other = new Browser(h);
    const othersToken = parseForm(await (await other.fetch('/device')).text()).csrf;
    for (const csrf of [signedOutToken, othersToken, oldDigest]) {
      const refused = await browser.submit('/device', { csrf, user_code: device.user_code });
      assert.equal(refused.status, 403, csrf);
      assert.match(await refused.text(), /could not be verified/);
    }
    assert.ok(!h.log.some((event) => event.event === 'user_code_accepted'));
    const taken = await browser.submit('/device', { csrf: signedInToken, user_code: device.user_code });
    assert.equal(taken.status, 303, await taken.clone().text());
  });

  it('the consent is bound to the browser that entered the code', async () => {
    const h = createHarness();
    await addUser(h);
    const client = await registerDeviceClient(h);
    const device = await requestDevice(h, client);
    const browser = new Browser(h);
    const answer = await enterCode(browser, device);
    const interaction = new URL(answer.headers.get('location')!, ISSUER).pathname;
    const stranger = await new Browser(h).fetch(interaction);
    assert.equal(stranger.status, 400);
  });
});

describe('on a store that keeps no device authorizations (no deviceAuthorization capability)', () => {
  const withoutDevices = () => createHarness({ serverStore: (store) => withoutCapabilities(store, ['deviceAuthorization']) });

  it('the metadata names neither the endpoint nor the grant type, and the endpoints are not served', async () => {
    const h = withoutDevices();
    assert.equal(h.server.metadata.device_authorization_endpoint, undefined);
    assert.ok(!h.server.metadata.grant_types_supported.includes(DEVICE_CODE_GRANT_TYPE));
    const served = (await (await h.request('/.well-known/oauth-authorization-server')).json()) as Record<string, unknown>;
    assert.equal('device_authorization_endpoint' in served, false);
    assert.equal((await postForm(h, '/device_authorization', { client_id: 'any' })).status, 404);
    assert.equal((await new Browser(h).fetch('/device')).status, 404);
  });

  it('refuses the grant type at the token endpoint, and leaves it out at registration', async () => {
    const h = withoutDevices();
    const client = await registerClient(h, { grant_types: ['authorization_code', DEVICE_CODE_GRANT_TYPE, 'refresh_token'] });
    assert.deepEqual(client.grant_types, ['authorization_code', 'refresh_token']);
    // A device client an operator made (in the store) is refused too, by the grant type.
    await h.store.createClient({ ...(await h.store.getClient(client.client_id))!, clientId: 'tv', grantTypes: [DEVICE_CODE_GRANT_TYPE] });
    const body = await expectOAuthError(
      await postForm(h, '/token', { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: 'x', client_id: 'tv' }),
      400,
      'unsupported_grant_type',
    );
    assert.equal(body.error_description, `grant_type ${DEVICE_CODE_GRANT_TYPE} is not supported`);
  });
});
