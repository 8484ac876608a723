/**
 * Third-party authorization end to end through our authorization server, with a real OpenID
 * provider (node-oidc-provider) upstream: both revisions, a GitHub-style provider, consent before
 * forwarding, the browser binding at the callback, and the upstream session behind every refresh.
 * Each defence has a test here that fails when it is removed.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { UpstreamOptions } from '../../src/authorization-server/config.js';
import { githubProfile, type UpstreamProviderOptions } from '../../src/authorization-server/upstream/provider.js';
import { DEVICE_CODE_GRANT_TYPE } from '../../src/core/protocol.js';
import type { Result } from '../../src/core/result.js';
import { SecretBox, generateSecretKey, parseSecretKeys } from '../../src/core/secret-box.js';
import type { FullStore } from '../../src/store/store.js';
import {
  ISSUER,
  REDIRECT_URI,
  REVISIONS,
  authorizeUrl,
  createHarness,
  jwtClaims,
  parseForm,
  pkcePair,
  postForm,
  redeemCode,
  registerClient,
  type Harness,
  type TestClient,
} from '../helpers/harness.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.js';
import { TwoSiteBrowser } from '../helpers/two-site-browser.js';

/** What a sealed value holds; fails the test when it does not open. */
function sealedValue(opened: Result<string, unknown>): string {
  assert.ok(opened.ok, 'the sealed value opens');
  return opened.value;
}

const CALLBACK = `${ISSUER}/upstream/callback`;

const atClient = (url: URL): boolean => url.href.startsWith(REDIRECT_URI);
const atUpstream =
  (idp: TestOidcProvider) =>
  (url: URL): boolean =>
    url.origin === new URL(idp.issuer).origin;

/**
 * A GitHub-style provider played by an OpenID provider: no ID token, identity from its user API.
 * It does send RFC 9207's iss (GitHub does not), which is then checked like any issuer's.
 */
const hubOptions = (p: TestOidcProvider, id = 'hub', name = 'Hub'): UpstreamProviderOptions => ({
  kind: 'oauth2',
  id,
  name,
  issuer: p.issuer,
  clientId: p.clientId,
  clientSecret: p.clientSecret,
  scope: 'read:user',
  authorizationEndpoint: `${p.issuer}/auth`,
  tokenEndpoint: `${p.issuer}/token`,
  userinfoEndpoint: `${p.issuer}/api/user`,
  emailsEndpoint: `${p.issuer}/api/user/emails`,
  profile: githubProfile,
  issuesIssParameter: true,
});

describe('sign-in through an upstream provider', () => {
  let idp: TestOidcProvider;
  /** Another provider for the GitHub-style one: each provider has an issuer of its own. */
  let hubIdp: TestOidcProvider;
  const key = generateSecretKey();
  let providerOptions: () => UpstreamProviderOptions[];

  before(async () => {
    idp = await startOidcProvider({ redirectUris: [CALLBACK] });
    hubIdp = await startOidcProvider({ redirectUris: [CALLBACK] });
    providerOptions = () => [
      { kind: 'oidc', id: 'corp', name: 'Corp SSO', issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret },
      hubOptions(hubIdp),
    ];
  });
  after(async () => {
    await idp.stop();
    await hubIdp.stop();
  });
  beforeEach(() => idp.decide({ account: 'alice-sub' }));

  function harness(upstream: Partial<UpstreamOptions> = {}, store?: FullStore): Harness {
    return createHarness({
      upstream: { providers: providerOptions(), secretBox: new SecretBox(parseSecretKeys(key, 'test')), allowLoopbackHttp: true, ...upstream },
      ...(store ? { store } : {}),
    });
  }

  /** /authorize → sign-in page → the provider's button → our consent page (returned, not yet decided). */
  async function toConsent(
    h: Harness,
    browser: TwoSiteBrowser,
    client: TestClient,
    provider: string,
    resource?: string,
  ): Promise<{ html: string; verifier: string; csp: string }> {
    const { verifier, challenge } = pkcePair();
    const start = await browser.fetch(
      authorizeUrl({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT_URI,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: 'client-state',
        resource,
      }),
    );
    assert.equal(start.status, 303);
    const login = await (await browser.fetch(start.headers.get('location')!)).text();
    assert.match(login, new RegExp(`name="provider" value="${provider}"`));
    const { action, csrf } = parseForm(login);
    const chosen = await browser.submit(action, { csrf, step: 'upstream', provider });
    assert.equal(chosen.status, 303);
    const consent = await browser.fetch(chosen.headers.get('location')!);
    assert.equal(consent.status, 200);
    return { html: await consent.text(), verifier, csp: consent.headers.get('content-security-policy') ?? '' };
  }

  /** Approves on our consent page and follows the redirects until `stop` (or a page). */
  async function approveUntil(browser: TwoSiteBrowser, consentHtml: string, stop: (url: URL) => boolean): Promise<{ response: Response; url: URL | null }> {
    const { action, csrf } = parseForm(consentHtml);
    return browser.follow(await browser.submit(action, { csrf, step: 'consent', decision: 'approve' }), stop);
  }

  /** Approves on our consent page and goes through the provider; returns where the browser lands. */
  async function approveAndSignIn(browser: TwoSiteBrowser, consentHtml: string): Promise<URL> {
    const { url } = await approveUntil(browser, consentHtml, atClient);
    assert.ok(url, 'the browser should arrive back at the client');
    return url;
  }

  const atCallback = (url: URL): boolean => url.href.startsWith(CALLBACK);

  async function signedIn(
    h: Harness,
    revision: (typeof REVISIONS)[number] = REVISIONS[1],
    provider = 'corp',
  ): Promise<{ client: TestClient; tokens: Record<string, string>; browser: TwoSiteBrowser }> {
    const client = await registerClient(h);
    const browser = new TwoSiteBrowser(h);
    const { html, verifier } = await toConsent(h, browser, client, provider, revision.resource);
    const back = await approveAndSignIn(browser, html);
    const code = back.searchParams.get('code');
    assert.ok(code, `expected a code, got ${back.href}`);
    const response = await redeemCode(h, client, code, verifier, { resource: revision.resource });
    assert.equal(response.status, 200, await response.clone().text());
    return { client, tokens: (await response.json()) as Record<string, string>, browser };
  }

  const refresh = (h: Harness, client: TestClient, token: string): Promise<Response> =>
    postForm(h, '/token', { grant_type: 'refresh_token', refresh_token: token, client_id: client.client_id });

  for (const revision of REVISIONS) {
    it(`${revision.name}: sign-in upstream, our consent, our code; the token names the local user`, async () => {
      const h = harness();
      const { tokens } = await signedIn(h, revision);
      const claims = jwtClaims(tokens.access_token);
      const user = await h.store.getUser({ id: claims.sub as string });
      assert.equal(user?.username, 'corp:alice');
      assert.equal(user?.passwordHash, null);
      assert.deepEqual(
        (await h.store.listUserIdentities()).map((i) => [i.provider, i.subject, i.email]),
        [['corp', 'alice-sub', 'alice@example.com']],
      );
      assert.equal(claims.aud, revision.resource ?? 'http://127.0.0.1:9999/mcp');
      // The client saw only our tokens: nothing the provider issued is in the response.
      assert.deepEqual(Object.keys(tokens).sort(), ['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
    });
  }

  /** A device client's code, entered in `browser`, up to the device consent page (before anything goes upstream). */
  async function deviceToConsent(h: Harness, browser: TwoSiteBrowser): Promise<{ client: TestClient; deviceCode: string; html: string }> {
    const client = await registerClient(h, { redirect_uris: undefined, grant_types: [DEVICE_CODE_GRANT_TYPE] });
    const device = (await (await postForm(h, '/device_authorization', { client_id: client.client_id })).json()) as Record<string, string>;
    const { action, csrf } = parseForm(await (await browser.fetch(device.verification_uri_complete!)).text());
    const entered = await browser.submit(action, { csrf, user_code: device.user_code! });
    assert.equal(entered.status, 303);
    const login = await (await browser.fetch(entered.headers.get('location')!)).text();
    const form = parseForm(login);
    const chosen = await browser.submit(form.action, { csrf: form.csrf, step: 'upstream', provider: 'corp' });
    const html = await (await browser.fetch(chosen.headers.get('location')!)).text();
    assert.match(html, /A device is asking/);
    assert.match(html, /Next you sign in with <strong>Corp SSO<\/strong>/);
    assert.match(html, new RegExp(`class="user-code">${device.user_code}<`));
    return { client, deviceCode: device.device_code!, html };
  }
  const pollDevice = (h: Harness, client: TestClient, deviceCode: string): Promise<Response> =>
    postForm(h, '/token', { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: deviceCode, client_id: client.client_id });

  it('a device: approved before going upstream, the callback approves it and says so; the device gets tokens for the upstream user', async () => {
    const h = harness();
    const browser = new TwoSiteBrowser(h);
    const { client, deviceCode, html } = await deviceToConsent(h, browser);
    const { response, url } = await approveUntil(browser, html, () => false);
    assert.equal(url, null);
    assert.equal(response.status, 200);
    assert.match(await response.text(), /You can return to your device/);
    assert.ok(response.headers.getSetCookie().some((c) => c.startsWith('ca_session=')));
    const tokens = await pollDevice(h, client, deviceCode);
    assert.equal(tokens.status, 200, await tokens.clone().text());
    const user = await h.store.getUser({ id: jwtClaims(((await tokens.json()) as Record<string, string>).access_token).sub as string });
    assert.equal(user?.username, 'corp:alice');
  });

  it('a device denied on the consent page before going upstream: denied, the page says so', async () => {
    const h = harness();
    const browser = new TwoSiteBrowser(h);
    const { client, deviceCode, html } = await deviceToConsent(h, browser);
    const { action, csrf } = parseForm(html);
    const denied = await browser.submit(action, { csrf, step: 'consent', decision: 'deny' });
    assert.equal(denied.status, 200);
    assert.match(await denied.text(), /Request denied/);
    const answer = await pollDevice(h, client, deviceCode);
    assert.equal(answer.status, 400);
    assert.equal(((await answer.json()) as Record<string, string>).error, 'access_denied');
  });

  it('a GitHub-style provider: identity from its user API', async () => {
    const h = harness();
    const { tokens } = await signedIn(h, REVISIONS[1], 'hub');
    const user = await h.store.getUser({ id: jwtClaims(tokens.access_token).sub as string });
    assert.equal(user?.username, 'hub:alice');
    const [identity] = await h.store.listUserIdentities();
    assert.deepEqual([identity?.provider, identity?.subject], ['hub', '1001']);
  });

  it('the second sign-in finds the same local user', async () => {
    const h = harness();
    const first = await signedIn(h);
    const second = await signedIn(h);
    assert.equal(jwtClaims(first.tokens.access_token).sub, jwtClaims(second.tokens.access_token).sub);
    assert.equal((await h.store.listUsers()).length, 1);
  });

  it('consent comes before anything is forwarded: the page names the client and the provider; deny never goes upstream', async () => {
    const h = harness();
    const client = await registerClient(h, { client_name: 'Suspicious Tool' });
    const browser = new TwoSiteBrowser(h);
    const { html } = await toConsent(h, browser, client, 'corp', REVISIONS[1].resource);
    assert.match(html, /Authorize Suspicious Tool\?/);
    assert.match(html, /Next you sign in with <strong>Corp SSO<\/strong>/);
    const { action, csrf } = parseForm(html);
    const denied = await browser.submit(action, { csrf, step: 'consent', decision: 'deny' });
    const location = new URL(denied.headers.get('location')!);
    assert.ok(atClient(location));
    assert.equal(location.searchParams.get('error'), 'access_denied');
    assert.equal(location.searchParams.get('state'), 'client-state');
  });

  it('the consent page allows its form to lead to the provider (CSP form-action), and only that', async () => {
    const h = harness();
    const { csp } = await toConsent(h, new TwoSiteBrowser(h), await registerClient(h), 'corp');
    assert.match(csp, /form-action 'self' http:\/\/127\.0\.0\.1:33333 (\S+);/);
    assert.equal(/form-action 'self' \S+ (\S+);/.exec(csp)?.[1], new URL(idp.issuer).origin);
  });

  it('a callback opened in another browser yields no code (confused deputy)', async () => {
    const h = harness();
    const client = await registerClient(h);
    // The attacker starts a request in their own browser and sends the upstream link to a victim.
    const attacker = new TwoSiteBrowser(h);
    const { html } = await toConsent(h, attacker, client, 'corp', REVISIONS[1].resource);
    const { url: upstreamUrl } = await approveUntil(attacker, html, atUpstream(idp));
    assert.ok(upstreamUrl);
    const victim = new TwoSiteBrowser(h);
    const { response } = await victim.follow(await victim.fetch(upstreamUrl.href), atClient);
    // The victim's browser reached our callback without the binding cookie of the attacker's request.
    assert.equal(response.status, 400);
    assert.equal(response.headers.get('location'), null);
    assert.match(await response.text(), /opened in another browser/);
    assert.equal((await h.store.listUsers()).length, 0);
  });

  it('the callback works once: a replayed callback URL finds nothing', async () => {
    const h = harness();
    const client = await registerClient(h);
    const browser = new TwoSiteBrowser(h);
    const { html } = await toConsent(h, browser, client, 'corp', REVISIONS[1].resource);
    const { url: callback } = await approveUntil(browser, html, atCallback);
    assert.ok(callback);
    const first = await browser.fetch(callback.href);
    assert.equal(first.status, 303);
    assert.ok(new URL(first.headers.get('location')!).searchParams.get('code'));
    const again = await browser.fetch(callback.href);
    assert.equal(again.status, 400);
  });

  it('declining at the provider: the client gets access_denied, with its state and our iss', async () => {
    const h = harness();
    idp.decide({ deny: true });
    const client = await registerClient(h);
    const browser = new TwoSiteBrowser(h);
    const { html } = await toConsent(h, browser, client, 'corp', REVISIONS[1].resource);
    const back = await approveAndSignIn(browser, html);
    assert.equal(back.searchParams.get('error'), 'access_denied');
    assert.equal(back.searchParams.get('state'), 'client-state');
    assert.equal(back.searchParams.get('iss'), ISSUER);
  });

  it('the provider down at the callback: temporarily_unavailable to the client, never a 5xx page, and why in the log', async () => {
    const h = harness();
    const client = await registerClient(h);
    const browser = new TwoSiteBrowser(h);
    const { html } = await toConsent(h, browser, client, 'corp', REVISIONS[1].resource);
    const { url: callback } = await approveUntil(browser, html, atCallback);
    await idp.stop();
    try {
      const response = await browser.fetch(callback!.href);
      assert.equal(response.status, 303);
      assert.equal(new URL(response.headers.get('location')!).searchParams.get('error'), 'temporarily_unavailable');
      const failed = h.log.find((e) => e.event === 'upstream_failed');
      assert.deepEqual([failed?.step, failed?.status, failed?.error], ['token exchange', null, 'temporarily_unavailable']);
      assert.match(String(failed?.reason), /fetch failed/);
    } finally {
      await idp.start();
    }
  });

  it('user-info refuses the access token (it is for another API): signed in from the ID token, the refusal logged, refresh still works', async () => {
    const dave = { id: 'dave-sub', email: 'dave@example.com', username: 'dave', numericId: 1004 };
    const apiIdp = await startOidcProvider({ redirectUris: [CALLBACK], apiAudience: 'https://api.example', accounts: [dave] });
    try {
      const h = harness({
        providers: [{ kind: 'oidc', id: 'corp', name: 'Corp SSO', issuer: apiIdp.issuer, clientId: apiIdp.clientId, clientSecret: apiIdp.clientSecret }],
      });
      const { client, tokens } = await signedIn(h);
      assert.equal((await h.store.getUser({ id: jwtClaims(tokens.access_token).sub as string }))?.username, 'corp:dave');
      const warning = h.log.find((e) => e.event === 'upstream_warning');
      assert.deepEqual([warning?.provider, warning?.step, warning?.status, warning?.upstream_error], ['corp', 'userinfo', 403, 'insufficient_scope']);
      assert.match(String(warning?.reason), /signed in from the ID token's claims/);
      // The session behind the grant is not checked at user-info, which would refuse it.
      const response = await refresh(h, client, tokens.refresh_token!);
      assert.equal(response.status, 200, await response.clone().text());
    } finally {
      await apiIdp.stop();
    }
  });

  it('two providers sharing an issuer are refused at construction, before anyone signs in', () => {
    assert.throws(() => harness({ providers: [...providerOptions(), hubOptions(idp, 'forge', 'Forge')] }), /upstream corp and forge have the same issuer/);
  });

  it('an identity belongs to its provider: another one with the same issuer and subject later gets a user of its own', async () => {
    const first = harness({ providers: [hubOptions(hubIdp)] });
    const { tokens } = await signedIn(first, REVISIONS[1], 'hub');
    // Later the operator replaces "hub" by another provider that took over its issuer name.
    const later = harness({ providers: [hubOptions(hubIdp, 'forge', 'Forge')] }, first.store);
    const again = await signedIn(later, REVISIONS[1], 'forge');
    const users = await first.store.listUsers();
    assert.deepEqual(users.map((u) => u.username).sort(), ['forge:alice', 'hub:alice']);
    assert.notEqual(jwtClaims(again.tokens.access_token).sub, jwtClaims(tokens.access_token).sub);
  });

  it("a provider's names lose their control characters before they are kept", async () => {
    const account = { id: 'eve-sub', email: 'eve@example.com', name: 'Eve\u001b[2J\u001b[H Example\u202e', username: 'eve\u0007\u009b31m', numericId: 1005 };
    idp.accounts.set(account.id, account);
    idp.decide({ account: account.id });
    try {
      const h = harness();
      await signedIn(h);
      const [identity] = await h.store.listUserIdentities();
      assert.equal(identity?.name, 'Eve[2J[H Example');
      assert.deepEqual(
        (await h.store.listUsers()).map((u) => u.username),
        ['corp:eve31m'],
      );
    } finally {
      idp.decide({ account: 'alice-sub' });
      idp.accounts.delete(account.id);
    }
  });

  it('who may sign in: a refused identity gets access_denied and no account; who and why only in our log', async () => {
    const h = harness({ policy: { allowDomains: ['other.example'] } });
    const client = await registerClient(h);
    const browser = new TwoSiteBrowser(h);
    const { html } = await toConsent(h, browser, client, 'corp', REVISIONS[1].resource);
    const back = await approveAndSignIn(browser, html);
    assert.equal(back.searchParams.get('error'), 'access_denied');
    // The client learns that, not whose account it was: the person's email stays here.
    assert.equal(back.searchParams.get('error_description'), "the identity provider's account is not allowed to sign in here");
    assert.doesNotMatch(back.href, /alice/);
    const refused = h.log.find((e) => e.event === 'upstream_refused');
    assert.deepEqual([refused?.provider, refused?.client_id, refused?.step], ['corp', client.client_id, 'policy']);
    assert.match(String(refused?.reason), /alice@example\.com is not allowed/);
    assert.equal((await h.store.listUsers()).length, 0);
  });

  it('who may sign in: claims the ID token must carry (a tenant, a hosted domain)', async () => {
    const refusing = harness({ policy: { requireClaims: { hd: ['example.com'] } } });
    const client = await registerClient(refusing);
    const browser = new TwoSiteBrowser(refusing);
    const { html } = await toConsent(refusing, browser, client, 'corp', REVISIONS[1].resource);
    assert.equal((await approveAndSignIn(browser, html)).searchParams.get('error'), 'access_denied');
    assert.match(String(refusing.log.find((e) => e.event === 'upstream_refused')?.reason), /"hd" claim \(null\)/);
    // The ID token's own claims count: this provider's issuer, as the token says it.
    const admitting = harness({ policy: { requireClaims: { iss: [idp.issuer] } } });
    await signedIn(admitting);
  });

  it('GitHub-style: a domain rule needs an address the provider lists as verified', async () => {
    const account = {
      id: 'carol-sub',
      email: 'carol@example.com',
      name: 'Carol',
      username: 'carol',
      numericId: 1003,
      emails: [{ email: 'carol@example.com', primary: true, verified: false }],
    };
    hubIdp.accounts.set(account.id, account);
    hubIdp.decide({ account: account.id });
    try {
      const h = harness({ policy: { allowDomains: ['example.com'] } });
      const client = await registerClient(h);
      const browser = new TwoSiteBrowser(h);
      const { html } = await toConsent(h, browser, client, 'hub', REVISIONS[1].resource);
      assert.equal((await approveAndSignIn(browser, html)).searchParams.get('error'), 'access_denied');
      assert.match(String(h.log.find((e) => e.event === 'upstream_refused')?.reason), /no verified email/);
      // Verified, the same address passes.
      account.emails[0]!.verified = true;
      await signedIn(h, REVISIONS[1], 'hub');
    } finally {
      hubIdp.decide({ account: 'alice-sub' });
      hubIdp.accounts.delete(account.id);
    }
  });

  it('every failed sign-in is in the log with its cause, never a token', async () => {
    const h = harness();
    const client = await registerClient(h);
    const browser = new TwoSiteBrowser(h);
    const { html } = await toConsent(h, browser, client, 'corp', REVISIONS[1].resource);
    const { url: callback } = await approveUntil(browser, html, atCallback);
    const code = callback!.searchParams.get('code')!;
    // The code redeemed once elsewhere: the provider refuses it at our exchange.
    callback!.searchParams.set('code', `${code}x`);
    const response = await browser.fetch(callback!.href);
    assert.equal(new URL(response.headers.get('location')!).searchParams.get('error'), 'access_denied');
    const failed = h.log.find((e) => e.event === 'upstream_failed');
    assert.deepEqual(
      {
        provider: failed?.provider,
        client_id: failed?.client_id,
        error: failed?.error,
        step: failed?.step,
        status: failed?.status,
        upstream_error: failed?.upstream_error,
      },
      { provider: 'corp', client_id: client.client_id, error: 'access_denied', step: 'token exchange', status: 400, upstream_error: 'invalid_grant' },
    );
    assert.ok(!JSON.stringify(h.log).includes(code), 'the code is not in the log');
  });

  it('upstream tokens are sealed at rest: unreadable without the key', async () => {
    const h = harness();
    const { tokens } = await signedIn(h);
    const grant = await grantOf(h, tokens.access_token!);
    const session = await h.store.getUpstreamSession(grant.upstreamSessionId!);
    assert.ok(session);
    assert.ok(!session.sealedTokens.includes('.') || session.sealedTokens.startsWith('v1.'));
    const opened = JSON.parse(sealedValue(new SecretBox(parseSecretKeys(key, 'test')).open(session.sealedTokens, session.id))) as { accessToken: string };
    assert.ok(opened.accessToken.length > 10);
    assert.ok(!session.sealedTokens.includes(opened.accessToken));
    assert.equal(new SecretBox(parseSecretKeys(generateSecretKey(), 'other')).open(session.sealedTokens, session.id).ok, false);
  });

  async function grantOf(h: Harness, accessToken: string) {
    const grant = await h.store.getGrant(jwtClaims(accessToken).grant_id as string);
    assert.ok(grant);
    return grant;
  }

  it('a tool reaches the provider for the person with one user-info call, and learns of a revocation from it', async () => {
    const userinfoCalls: string[] = [];
    const counting: typeof fetch = (input, init) => {
      if (new URL(String(input)).pathname === '/me') userinfoCalls.push(String(input));
      return fetch(input, init);
    };
    const h = harness({ fetch: counting });
    const { tokens } = await signedIn(h);
    const before = userinfoCalls.length;
    const access = await h.server.upstreamAccess(jwtClaims(tokens.access_token));
    assert.ok(access);
    assert.equal(access.identity.email, 'alice@example.com');
    assert.equal((await access.userinfo()).sub, 'alice-sub');
    assert.equal(userinfoCalls.length - before, 1, 'one call to the provider, not a probe and then the call');
    const grant = await grantOf(h, tokens.access_token!);
    const session = await h.store.getUpstreamSession(grant.upstreamSessionId!);
    const upstreamTokens = JSON.parse(sealedValue(new SecretBox(parseSecretKeys(key, 'test')).open(session!.sealedTokens, session!.id))) as {
      accessToken: string;
    };
    await idp.revoke(upstreamTokens.accessToken);
    await assert.rejects(access.userinfo(), /no longer accepts the session/);
  });

  describe('the upstream session behind our grant', () => {
    it('refresh works while the upstream session stands', async () => {
      const h = harness();
      const { client, tokens } = await signedIn(h);
      const response = await refresh(h, client, tokens.refresh_token!);
      assert.equal(response.status, 200, await response.clone().text());
    });

    it('the upstream revokes: our refresh fails with invalid_grant and our grant is revoked', async () => {
      const h = harness();
      const { client, tokens } = await signedIn(h);
      const grant = await grantOf(h, tokens.access_token!);
      const session = await h.store.getUpstreamSession(grant.upstreamSessionId!);
      const upstreamTokens = JSON.parse(sealedValue(new SecretBox(parseSecretKeys(key, 'test')).open(session!.sealedTokens, session!.id))) as {
        accessToken: string;
        refreshToken: string;
      };
      await idp.revoke(upstreamTokens.accessToken);
      await idp.revoke(upstreamTokens.refreshToken);
      const response = await refresh(h, client, tokens.refresh_token!);
      assert.equal(response.status, 400);
      assert.equal(((await response.json()) as { error: string }).error, 'invalid_grant');
      assert.notEqual((await h.store.getGrant(grant.id))?.revokedAt, null);
    });

    it('an expired upstream access token is renewed transparently at our refresh', async () => {
      const h = harness();
      idp.setAccessTokenTtl(120);
      try {
        const { client, tokens } = await signedIn(h);
        const grant = await grantOf(h, tokens.access_token!);
        const box = new SecretBox(parseSecretKeys(key, 'test'));
        const before = JSON.parse(
          sealedValue(box.open((await h.store.getUpstreamSession(grant.upstreamSessionId!))!.sealedTokens, grant.upstreamSessionId!)),
        ) as { accessToken: string };
        h.clock.now += 300;
        const response = await refresh(h, client, tokens.refresh_token!);
        assert.equal(response.status, 200, await response.clone().text());
        const after = JSON.parse(
          sealedValue(box.open((await h.store.getUpstreamSession(grant.upstreamSessionId!))!.sealedTokens, grant.upstreamSessionId!)),
        ) as { accessToken: string };
        assert.notEqual(after.accessToken, before.accessToken);
      } finally {
        idp.setAccessTokenTtl(3600);
      }
    });

    it('the provider down at our refresh: temporarily_unavailable, the grant kept and the refresh token still good', async () => {
      const h = harness();
      const { client, tokens } = await signedIn(h);
      await idp.stop();
      try {
        const response = await refresh(h, client, tokens.refresh_token!);
        assert.equal(response.status, 503);
      } finally {
        await idp.start();
      }
      const retry = await refresh(h, client, tokens.refresh_token!);
      assert.equal(retry.status, 200, await retry.clone().text());
    });

    it('a retry of a refresh whose answer was lost checks the upstream session first: the provider down leaves it possible', async () => {
      const h = harness();
      const { client, tokens } = await signedIn(h);
      const lost = await refresh(h, client, tokens.refresh_token!);
      assert.equal(lost.status, 200);
      await idp.stop();
      try {
        assert.equal((await refresh(h, client, tokens.refresh_token!)).status, 503);
      } finally {
        await idp.start();
      }
      const retry = await refresh(h, client, tokens.refresh_token!);
      assert.equal(retry.status, 200, await retry.clone().text());
      const next = (await retry.json()) as { refresh_token: string };
      assert.equal((await refresh(h, client, next.refresh_token)).status, 200);
    });

    it('past the upstream session lifetime: refresh refused, grant revoked, and the browser must sign in upstream again', async () => {
      const h = harness({ sessionTtl: 3600 });
      const { client, tokens, browser } = await signedIn(h);
      h.clock.now += 3601;
      const response = await refresh(h, client, tokens.refresh_token!);
      assert.equal(response.status, 400);
      assert.match(((await response.json()) as { error_description: string }).error_description, /maximum lifetime/);
      // The browser's session rested on the same upstream sign-in: /authorize asks again.
      const again = await browser.fetch(
        authorizeUrl({
          response_type: 'code',
          client_id: client.client_id,
          redirect_uri: REDIRECT_URI,
          code_challenge: pkcePair().challenge,
          code_challenge_method: 'S256',
        }),
      );
      assert.match(again.headers.get('location') ?? '', /\/interaction\//);
    });
  });

  it('local users off: the sign-in page has only the providers, and a password post is refused', async () => {
    const h = harness({ localUsers: false });
    const client = await registerClient(h);
    const browser = new TwoSiteBrowser(h);
    const start = await browser.fetch(
      authorizeUrl({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT_URI,
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
      }),
    );
    const html = await (await browser.fetch(start.headers.get('location')!)).text();
    assert.doesNotMatch(html, /name="password"/);
    const { action, csrf } = parseForm(html);
    const refused = await browser.submit(action, { csrf, step: 'login', username: 'x', password: 'y' });
    assert.equal(refused.status, 400);
  });

  it('a request we would refuse never reaches the sign-in page, so nothing goes upstream for it', async () => {
    const h = harness();
    const client = await registerClient(h);
    const browser = new TwoSiteBrowser(h);
    const response = await browser.fetch(
      authorizeUrl({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT_URI,
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
        resource: 'https://elsewhere.example/mcp',
      }),
    );
    assert.equal(new URL(response.headers.get('location')!).searchParams.get('error'), 'invalid_target');
  });
});
