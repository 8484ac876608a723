/**
 * GET/POST /authorize: what is checked before the redirect URI is trusted (errors as a page),
 * what is checked after (errors back to the client with state and iss), and the prompt values.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  addUser,
  authorizationRequest,
  authorizeUrl,
  Browser,
  completeInteraction,
  createHarness,
  form,
  ISSUER,
  jwtClaims,
  OTHER_RESOURCE,
  REDIRECT_URI,
  redeemCode,
  registerClient,
  RESOURCE,
  REVISIONS,
  type Harness,
  type Revision,
  type TestClient,
  plainTokens,
} from '../helpers/harness.js';

async function setup(): Promise<{ h: Harness; client: TestClient; user: { username: string; password: string } }> {
  const h = createHarness();
  return { h, client: await registerClient(h), user: await addUser(h) };
}

/** GET /authorize with these parameters, as a fresh browser (no cookies). */
function get(h: Harness, params: Record<string, string | undefined>, browser = new Browser(h)): Promise<Response> {
  return browser.fetch(authorizeUrl(params));
}

/** A raw query string, for requests `form()` cannot express (repeated parameters). */
function getRaw(h: Harness, query: string): Promise<Response> {
  return new Browser(h).fetch(`/authorize?${query}`);
}

/** The request went back to the client with an error: 303 to the redirect URI with error, error_description, state and iss. */
function assertErrorRedirect(response: Response, error: string, state: string | null = 'state-123', redirectUri = REDIRECT_URI): URL {
  assert.equal(response.status, 303, `expected a redirect with ${error}`);
  const location = new URL(response.headers.get('location')!);
  assert.equal(`${location.origin}${location.pathname}`, redirectUri);
  assert.equal(location.searchParams.get('error'), error, location.toString());
  assert.ok(location.searchParams.get('error_description'), 'error_description is set');
  assert.equal(location.searchParams.get('state'), state);
  assert.equal(location.searchParams.get('iss'), ISSUER);
  assert.equal(location.searchParams.has('code'), false);
  return location;
}

/** The request was shown an HTML error page and sent nowhere. */
async function assertErrorPage(response: Response, error: string): Promise<string> {
  assert.equal(response.status, 400);
  assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
  assert.equal(response.headers.get('location'), null, 'an untrusted redirect URI is never redirected to');
  const body = await response.text();
  assert.match(body, new RegExp(`<code>${error}</code>`));
  return body;
}

/** The request was accepted and the browser sent to our login/consent pages. */
function assertInteraction(response: Response): void {
  assert.equal(response.status, 303);
  const location = new URL(response.headers.get('location')!, ISSUER);
  assert.equal(location.origin, ISSUER);
  assert.match(location.pathname, /^\/interaction\/[A-Za-z0-9_-]+$/);
}

/** Runs a full authorization with `params` and returns the final redirect and the token it redeems to. */
async function approveAndRedeem(
  h: Harness,
  client: TestClient,
  user: { username: string; password: string },
  request: { params: Record<string, string | undefined>; verifier: string },
  tokenExtra: Record<string, string | undefined> = {},
): Promise<{ location: URL; claims: Record<string, unknown>; pages: string[] }> {
  const browser = new Browser(h);
  const { location, pages } = await completeInteraction(browser, await get(h, request.params, browser), { user });
  const code = location.searchParams.get('code');
  assert.ok(code, `a code: ${location}`);
  const response = await redeemCode(h, client, code, request.verifier, { resource: request.params.resource, ...tokenExtra });
  assert.equal(response.status, 200, await response.clone().text());
  const body = (await response.json()) as { access_token: string };
  return { location, claims: jwtClaims(body.access_token), pages };
}

for (const revision of REVISIONS) {
  describe(`/authorize — ${revision.name}`, () => {
    const valid = (client: TestClient, overrides: Record<string, string | undefined> = {}) => authorizationRequest(client, revision, overrides).params;

    describe('response_type', () => {
      it('accepts code', async () => {
        const { h, client } = await setup();
        assertInteraction(await get(h, valid(client)));
      });

      for (const responseType of ['token', 'id_token', 'code id_token', 'CODE']) {
        it(`redirects with unsupported_response_type for ${JSON.stringify(responseType)}`, async () => {
          const { h, client } = await setup();
          assertErrorRedirect(await get(h, valid(client, { response_type: responseType })), 'unsupported_response_type');
        });
      }

      it('redirects with invalid_request when it is missing', async () => {
        const { h, client } = await setup();
        assertErrorRedirect(await get(h, valid(client, { response_type: undefined })), 'invalid_request');
      });
    });

    describe('PKCE', () => {
      it('refuses a request without code_challenge', async () => {
        const { h, client } = await setup();
        assertErrorRedirect(await get(h, valid(client, { code_challenge: undefined, code_challenge_method: undefined })), 'invalid_request');
        assertErrorRedirect(await get(h, valid(client, { code_challenge: undefined })), 'invalid_request');
      });

      it('refuses the plain method', async () => {
        const { h, client } = await setup();
        const verifier = 'a'.repeat(43);
        assertErrorRedirect(await get(h, valid(client, { code_challenge: verifier, code_challenge_method: 'plain' })), 'invalid_request');
      });

      it('refuses a challenge without a method (it would mean plain) and a malformed S256 challenge', async () => {
        const { h, client } = await setup();
        assertErrorRedirect(await get(h, valid(client, { code_challenge_method: undefined })), 'invalid_request');
        assertErrorRedirect(await get(h, valid(client, { code_challenge: 'too-short' })), 'invalid_request');
        assertErrorRedirect(await get(h, valid(client, { code_challenge_method: 's256' })), 'invalid_request');
      });

      it('is required of confidential clients too', async () => {
        const { h } = await setup();
        const confidential = await registerClient(h, { token_endpoint_auth_method: 'client_secret_basic' });
        assert.ok(confidential.client_secret);
        assertErrorRedirect(await get(h, valid(confidential, { code_challenge: undefined, code_challenge_method: undefined })), 'invalid_request');
        assertInteraction(await get(h, valid(confidential)));
      });
    });

    describe('state', () => {
      const awkward = 'a b&c=d+e%20f/?#ü—🎉';

      it('comes back verbatim with the code', async () => {
        const { h, client, user } = await setup();
        const { location } = await approveAndRedeem(h, client, user, authorizationRequest(client, revision, { state: awkward }));
        assert.equal(location.searchParams.get('state'), awkward);
        assert.equal(location.searchParams.get('iss'), ISSUER);
      });

      it('comes back verbatim with an error', async () => {
        const { h, client } = await setup();
        assertErrorRedirect(await get(h, valid(client, { state: awkward, response_type: 'token' })), 'unsupported_response_type', awkward);
      });

      it('is left out of the response when the request had none', async () => {
        const { h, client } = await setup();
        const location = assertErrorRedirect(await get(h, valid(client, { state: undefined, prompt: 'none' })), 'login_required', null);
        assert.equal(location.searchParams.has('state'), false);
      });
    });

    describe('client and redirect URI (errors shown, never redirected)', () => {
      it('shows a page for an unknown client', async () => {
        const { h, client } = await setup();
        await assertErrorPage(await get(h, valid(client, { client_id: 'no-such-client' })), 'invalid_client');
      });

      it('shows a page for a missing client_id', async () => {
        const { h, client } = await setup();
        await assertErrorPage(await get(h, valid(client, { client_id: undefined })), 'invalid_request');
      });

      it('shows a page for an unknown client even when the rest of the request is wrong too', async () => {
        const { h, client } = await setup();
        await assertErrorPage(await get(h, valid(client, { client_id: 'nope', response_type: 'token', code_challenge: undefined })), 'invalid_client');
      });

      for (const [label, uri] of [
        ['another path', 'http://127.0.0.1:33333/other'],
        ['an added query', 'http://127.0.0.1:33333/callback?x=1'],
        ['a trailing slash', 'http://127.0.0.1:33333/callback/'],
        ['localhost instead of 127.0.0.1', 'http://localhost:33333/callback'],
        ['https instead of http', 'https://127.0.0.1:33333/callback'],
        ['an attacker host', 'https://attacker.example/callback'],
        ['a fragment', 'http://127.0.0.1:33333/callback#x'],
        ['userinfo', 'http://evil@127.0.0.1:33333/callback'],
        ['another case in the path', 'http://127.0.0.1:33333/Callback'],
      ] as const) {
        it(`shows a page for a redirect URI with ${label}`, async () => {
          const { h, client } = await setup();
          const response = await get(h, valid(client, { redirect_uri: uri, response_type: 'token' }));
          await assertErrorPage(response, 'invalid_request');
        });
      }

      it('accepts a loopback redirect URI that differs only in port, and sends the code there', async () => {
        const { h, client, user } = await setup();
        const redirectUri = 'http://127.0.0.1:40123/callback';
        const request = authorizationRequest(client, revision, { redirect_uri: redirectUri });
        const { location } = await approveAndRedeem(h, client, user, request, { redirect_uri: redirectUri });
        assert.equal(`${location.origin}${location.pathname}`, redirectUri);
        // Errors go to that port too, now that it is trusted.
        assertErrorRedirect(
          await get(h, valid(client, { redirect_uri: redirectUri, response_type: 'token' })),
          'unsupported_response_type',
          'state-123',
          redirectUri,
        );
      });

      it('does not let a non-loopback https redirect URI vary its port', async () => {
        const { h } = await setup();
        const client = await registerClient(h, { redirect_uris: ['https://app.example.com/cb'] });
        assertInteraction(await get(h, valid(client, { redirect_uri: 'https://app.example.com/cb' })));
        await assertErrorPage(await get(h, valid(client, { redirect_uri: 'https://app.example.com:8443/cb' })), 'invalid_request');
      });

      it('uses the only registered redirect URI when the request names none, and asks when there are several', async () => {
        const { h, client } = await setup();
        assertErrorRedirect(await get(h, valid(client, { redirect_uri: undefined, response_type: 'token' })), 'unsupported_response_type');
        const two = await registerClient(h, { redirect_uris: [REDIRECT_URI, 'http://127.0.0.1:33333/second'] });
        await assertErrorPage(await get(h, valid(two, { redirect_uri: undefined })), 'invalid_request');
      });

      it('shows the error page with the security headers and no script', async () => {
        const { h, client } = await setup();
        const response = await get(h, valid(client, { client_id: '<script>alert(1)</script>' }));
        assert.equal(response.headers.get('x-frame-options'), 'DENY');
        assert.match(response.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
        assert.equal(response.headers.get('cache-control'), 'no-store');
        const body = await assertErrorPage(response, 'invalid_client');
        assert.doesNotMatch(body, /<script/i);
      });
    });

    describe('errors after the redirect URI is trusted', () => {
      it('carries error, error_description, state and iss', async () => {
        const { h, client } = await setup();
        const location = assertErrorRedirect(await get(h, valid(client, { scope: 'not-a-scope' })), 'invalid_scope');
        assert.deepEqual([...location.searchParams.keys()].sort(), ['error', 'error_description', 'iss', 'state']);
      });

      for (const name of ['response_type', 'state', 'scope', 'code_challenge', 'code_challenge_method', 'prompt']) {
        it(`refuses a repeated ${name} with invalid_request`, async () => {
          const { h, client } = await setup();
          const query = form(valid(client, { scope: 'mcp:tools', prompt: 'consent' }));
          query.append(name, query.get(name)!);
          const response = await getRaw(h, query.toString());
          assert.equal(response.status, 303);
          const location = new URL(response.headers.get('location')!);
          assert.equal(location.searchParams.get('error'), 'invalid_request');
          assert.equal(location.searchParams.get('iss'), ISSUER);
        });
      }

      for (const name of ['client_id', 'redirect_uri']) {
        it(`shows a page for a repeated ${name} (the redirect cannot be trusted)`, async () => {
          const { h, client } = await setup();
          const query = form(valid(client));
          query.append(name, query.get(name)!);
          await assertErrorPage(await getRaw(h, query.toString()), 'invalid_request');
        });
      }

      it('refuses two resources with invalid_target (one token, one audience)', async () => {
        const { h, client } = await setup();
        const query = form(valid(client, { resource: RESOURCE }));
        query.append('resource', OTHER_RESOURCE);
        assertErrorRedirect(await getRaw(h, query.toString()), 'invalid_target');
      });

      it('refuses request objects', async () => {
        const { h, client } = await setup();
        assertErrorRedirect(await get(h, valid(client, { request: 'eyJhbGciOiJub25lIn0.e30.' })), 'request_not_supported');
        assertErrorRedirect(await get(h, valid(client, { request_uri: 'urn:example:x' })), 'request_uri_not_supported');
      });
    });

    describe('POST /authorize', () => {
      it('works like GET', async () => {
        const { h, client, user } = await setup();
        const request = authorizationRequest(client, revision);
        const browser = new Browser(h);
        const response = await browser.submit('/authorize', Object.fromEntries(form(request.params)));
        assertInteraction(response);
        const { location } = await completeInteraction(browser, response, { user });
        assert.ok(location.searchParams.get('code'));
        assert.equal(location.searchParams.get('state'), 'state-123');
        const token = await redeemCode(h, client, location.searchParams.get('code')!, request.verifier, { resource: revision.resource });
        assert.equal(token.status, 200);
      });

      it('reports errors like GET', async () => {
        const { h, client } = await setup();
        const browser = new Browser(h);
        assertErrorRedirect(
          await browser.submit('/authorize', Object.fromEntries(form(valid(client, { response_type: 'token' })))),
          'unsupported_response_type',
        );
        await assertErrorPage(await browser.submit('/authorize', Object.fromEntries(form(valid(client, { client_id: 'nope' })))), 'invalid_client');
      });

      it('refuses a body that is not a form', async () => {
        const { h, client } = await setup();
        const response = await h.request('/authorize', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(valid(client)),
        });
        await assertErrorPage(response, 'invalid_request');
      });
    });

    describe('prompt', () => {
      it('prompt=none without a session: login_required', async () => {
        const { h, client } = await setup();
        assertErrorRedirect(await get(h, valid(client, { prompt: 'none' })), 'login_required');
      });

      it('prompt=none with a session but no consent: consent_required', async () => {
        const { h, client, user } = await setup();
        const browser = new Browser(h);
        // Sign in, then deny: a session without a consent.
        const first = await completeInteraction(browser, await get(h, valid(client), browser), { user, decision: 'deny' });
        assert.equal(first.location.searchParams.get('error'), 'access_denied');
        assertErrorRedirect(await get(h, valid(client, { prompt: 'none' }), browser), 'consent_required');
      });

      it('prompt=none with a session and a consent: the code, without any page', async () => {
        const { h, client, user } = await setup();
        const browser = new Browser(h);
        await completeInteraction(browser, await get(h, valid(client), browser), { user });
        const response = await get(h, valid(client, { prompt: 'none' }), browser);
        assert.equal(response.status, 303);
        const location = new URL(response.headers.get('location')!);
        assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
        assert.ok(location.searchParams.get('code'));
        assert.equal(location.searchParams.get('iss'), ISSUER);
      });

      it('prompt=none cannot be combined with another value', async () => {
        const { h, client } = await setup();
        assertErrorRedirect(await get(h, valid(client, { prompt: 'none login' })), 'invalid_request');
      });

      it('prompt=login shows the login form despite a session and a consent', async () => {
        const { h, client, user } = await setup();
        const browser = new Browser(h);
        await completeInteraction(browser, await get(h, valid(client), browser), { user });
        const again = await completeInteraction(browser, await get(h, valid(client, { prompt: 'login' }), browser), { user });
        assert.deepEqual(again.pages, ['login']);
        assert.ok(again.location.searchParams.get('code'));
      });

      it('prompt=consent shows the consent page despite a consent', async () => {
        const { h, client, user } = await setup();
        const browser = new Browser(h);
        await completeInteraction(browser, await get(h, valid(client), browser), { user });
        const again = await completeInteraction(browser, await get(h, valid(client, { prompt: 'consent' }), browser), { user });
        assert.deepEqual(again.pages, ['consent']);
      });
    });
  });
}

describe('/authorize — resource (Revision B)', () => {
  const revisionB: Revision = REVISIONS[1];

  /** The consent page of a request, reached by signing in. */
  async function consentPageFor(h: Harness, params: Record<string, string | undefined>, user: { username: string; password: string }): Promise<string> {
    const browser = new Browser(h);
    const response = await get(h, params, browser);
    assertInteraction(response);
    const path = new URL(response.headers.get('location')!, ISSUER).pathname;
    const login = await (await browser.fetch(path)).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(login)![1]!;
    await browser.submit(path, { csrf, step: 'login', username: user.username, password: user.password });
    return (await browser.fetch(path)).text();
  }

  for (const [label, input] of [
    ['the canonical form', 'http://127.0.0.1:9999/mcp'],
    ['an uppercase scheme and host', 'HTTP://127.0.0.1:9999/mcp'],
    ['a trailing slash', 'http://127.0.0.1:9999/mcp/'],
  ] as const) {
    it(`accepts ${label} and binds the token to the canonical URI`, async () => {
      const { h, client, user } = await setup();
      const request = authorizationRequest(client, revisionB, { resource: input });
      const page = await consentPageFor(h, request.params, user);
      assert.match(plainTokens(page), /<code>http:\/\/127\.0\.0\.1:9999\/mcp<\/code>/);
      const { claims } = await approveAndRedeem(h, client, user, request, { resource: RESOURCE });
      assert.equal(claims.aud, RESOURCE);
    });
  }

  it('accepts an uppercase host name and lowercases it', async () => {
    const h = createHarness({ resources: ['https://mcp.example.com/api'] });
    const client = await registerClient(h);
    const user = await addUser(h);
    const request = authorizationRequest(client, revisionB, { resource: 'HTTPS://MCP.Example.COM/api' });
    const { claims } = await approveAndRedeem(h, client, user, request);
    assert.equal(claims.aud, 'https://mcp.example.com/api');
  });

  it('issues for another of its resources when asked', async () => {
    const { h, client, user } = await setup();
    const { claims } = await approveAndRedeem(h, client, user, authorizationRequest(client, revisionB, { resource: OTHER_RESOURCE }));
    assert.equal(claims.aud, OTHER_RESOURCE);
  });

  for (const [label, input] of [
    ['a fragment', 'http://127.0.0.1:9999/mcp#frag'],
    ['an unknown server', 'http://127.0.0.1:9999/unknown'],
    ['another host', 'https://attacker.example/mcp'],
    ['a relative URI', '/mcp'],
    ['an empty value', ''],
    ['a non-http scheme', 'urn:example:mcp'],
  ] as const) {
    it(`refuses ${label} with invalid_target`, async () => {
      const { h, client } = await setup();
      assertErrorRedirect(await get(h, authorizationRequest(client, revisionB, { resource: input }).params), 'invalid_target');
    });
  }
});

describe('/authorize — without resource (Revision A)', () => {
  it('uses the default resource: on the consent page and in the token', async () => {
    const h = createHarness({ defaultResource: OTHER_RESOURCE });
    const client = await registerClient(h);
    const user = await addUser(h);
    const request = authorizationRequest(client, REVISIONS[0]);
    assert.equal(request.params.resource, undefined);
    const browser = new Browser(h);
    const response = await get(h, request.params, browser);
    const path = new URL(response.headers.get('location')!, ISSUER).pathname;
    const csrf = /name="csrf" value="([^"]+)"/.exec(await (await browser.fetch(path)).text())![1]!;
    await browser.submit(path, { csrf, step: 'login', username: user.username, password: user.password });
    const consent = await (await browser.fetch(path)).text();
    assert.match(plainTokens(consent), /<code>http:\/\/127\.0\.0\.1:9999\/other<\/code>/);

    const { claims } = await approveAndRedeem(h, client, user, authorizationRequest(client, REVISIONS[0]));
    assert.equal(claims.aud, OTHER_RESOURCE);
  });

  it('defaults to the first configured resource', async () => {
    const { h, client, user } = await setup();
    const { claims } = await approveAndRedeem(h, client, user, authorizationRequest(client, REVISIONS[0]));
    assert.equal(claims.aud, RESOURCE);
  });
});
