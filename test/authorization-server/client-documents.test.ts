/**
 * Client ID metadata documents (MCP 2025-11-25): a client whose id is a URL, end to end through
 * /authorize, the consent page and /token, and every defence of the fetch, each with a test that
 * fails when the defence is removed. Documents are served by a real HTTP server on 127.0.0.1,
 * allowed only through the switch named for tests; with the switch off, loopback is refused.
 * Also: documents follow the registration policy, new ones are rate-limited like registrations,
 * a failure is remembered for a minute, and its cause reaches the log, never the requester.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  Browser,
  ISSUER,
  REDIRECT_URI,
  REVISIONS,
  addUser,
  authorize,
  authorizeUrl,
  createHarness,
  parseForm,
  pkcePair,
  redeemCode,
  type Harness,
  plainTokens,
  postForm,
  expectOAuthError,
  signInAndConsent,
} from '../helpers/harness.js';
import type { RateLimitOptions } from '../../src/authorization-server/index.js';
import { jwtSigner } from '../../src/core/jwt.js';
import { CHATGPT_REDIRECT_URI, CLAUDE_AI_REDIRECT_URI, chatGptDocument, claudeAiDocument } from '../helpers/recorded-hosts.js';

/** A port on 127.0.0.1 nothing listens on (it did a moment ago). */
async function closedPort(): Promise<number> {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

interface Served {
  status?: number;
  type?: string;
  body?: unknown;
  raw?: string;
  headers?: Record<string, string>;
  delayMs?: number;
}

describe('client ID metadata documents', () => {
  const routes = new Map<string, Served>();
  const hits = new Map<string, number>();
  let server: http.Server;
  let base: string;

  before(async () => {
    server = http.createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const served = routes.get(path);
      if (!served) return void res.writeHead(404).end();
      const send = () => {
        res.writeHead(served.status ?? 200, { 'content-type': served.type ?? 'application/json', ...served.headers });
        res.end(served.raw ?? JSON.stringify(served.body));
      };
      if (served.delayMs) setTimeout(send, served.delayMs);
      else send();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** Serves a valid document for a new path; returns its URL (the client_id). */
  function documentAt(path: string, overrides: Record<string, unknown> = {}, served: Served = {}): string {
    const clientId = `${base}${path}`;
    routes.set(path, {
      body: {
        client_id: clientId,
        client_name: 'Doc Client',
        redirect_uris: [REDIRECT_URI],
        grant_types: ['authorization_code', 'refresh_token'],
        ...overrides,
      },
      ...served,
    });
    return clientId;
  }

  const testSwitch = (extra: Record<string, unknown> = {}): Harness =>
    createHarness({ clientIdMetadataDocuments: { allowLoopbackHttp: true, timeoutMs: 500, ...extra } });

  /** GET /authorize for a client: the first response (a redirect into the pages, or an error page). */
  async function start(h: Harness, clientId: string, redirectUri = REDIRECT_URI): Promise<Response> {
    return new Browser(h).fetch(
      authorizeUrl({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: redirectUri,
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
        state: 's',
      }),
    );
  }

  async function refused(response: Response, pattern: RegExp): Promise<void> {
    const text = await response.text();
    assert.ok(response.status >= 400, `refused, not ${response.status}`);
    assert.equal(response.headers.get('location'), null, 'never redirected anywhere');
    assert.match(text, pattern);
  }

  /**
   * The document could not be used: the person (or prober) sees the one generic answer, never
   * the cause; the cause is in the server's log.
   */
  async function unusable(h: Harness, clientId: string, cause: RegExp, redirectUri = REDIRECT_URI): Promise<void> {
    const response = await start(h, clientId, redirectUri);
    const text = await response.text();
    assert.equal(response.status, 400, text);
    assert.equal(response.headers.get('location'), null, 'never redirected anywhere');
    assert.match(text, /could not be fetched or is not valid/);
    assert.doesNotMatch(text, cause, 'the cause is not shown');
    const logged = h.log.filter((event) => event.event === 'client_document_failed' && event.client_id === clientId).at(-1);
    assert.match(String(logged?.reason), cause, `the log says why: ${JSON.stringify(logged)}`);
  }

  it('metadata says so, and says not when it is off', async () => {
    const on = (await (await testSwitch().request('/.well-known/oauth-authorization-server')).json()) as Record<string, unknown>;
    assert.equal(on.client_id_metadata_document_supported, true);
    const off = createHarness({ clientIdMetadataDocuments: { enabled: false } });
    const metadata = (await (await off.request('/.well-known/oauth-authorization-server')).json()) as Record<string, unknown>;
    assert.equal(metadata.client_id_metadata_document_supported, false);
  });

  for (const revision of REVISIONS) {
    it(`${revision.name}: a URL client signs in, consents (seeing its site) and redeems its code`, async () => {
      const h = testSwitch();
      const user = await addUser(h);
      const clientId = documentAt(`/doc-${revision.resource ? 'b' : 'a'}.json`);
      const client = { client_id: clientId };
      const browser = new Browser(h);
      const first = await browser.fetch(
        authorizeUrl({
          response_type: 'code',
          client_id: clientId,
          redirect_uri: REDIRECT_URI,
          code_challenge: pkcePair().challenge,
          code_challenge_method: 'S256',
          resource: revision.resource,
        }),
      );
      const login = await browser.fetch(first.headers.get('location')!);
      const { action, csrf } = parseForm(await login.text());
      const afterLogin = await browser.submit(action, { csrf, step: 'login', username: user.username, password: user.password });
      const consent = await (await browser.fetch(afterLogin.headers.get('location')!)).text();
      assert.match(
        plainTokens(consent),
        new RegExp(`Verified: this application is published by <strong><code>127\\.0\\.0\\.1:\\d+</code></strong>`),
        'the consent page names the site, as what is verified',
      );
      assert.doesNotMatch(consent, /Unverified name/, 'its name comes from that site');
      assert.match(consent, /Doc Client/);

      const { location, verifier } = await authorize(h, { client, user, resource: revision.resource, browser });
      const code = location.searchParams.get('code');
      assert.ok(code, location.href);
      const response = await redeemCode(h, client, code, verifier, { resource: revision.resource });
      assert.equal(response.status, 200, await response.clone().text());
      assert.equal((await h.store.getClient(clientId))?.clientName, 'Doc Client');
    });
  }

  it('a document with public keys makes a private_key_jwt client: its code is redeemed with a client assertion, never with its id alone', async () => {
    const h = testSwitch();
    const user = await addUser(h);
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const clientId = documentAt('/keyed.json', {
      token_endpoint_auth_method: 'private_key_jwt',
      jwks: { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1' }] },
    });
    const assertion = () =>
      jwtSigner({ alg: 'ES256', kid: 'k1', typ: 'JWT' }, privateKey)({ iss: clientId, sub: clientId, aud: ISSUER, jti: randomUUID(), exp: h.clock.now + 60 });
    const withAssertion = {
      client_id: undefined,
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: assertion(),
    };

    const first = await authorize(h, { client: { client_id: clientId }, user });
    const idOnly = await redeemCode(h, { client_id: clientId }, first.location.searchParams.get('code')!, first.verifier);
    assert.match((await expectOAuthError(idOnly, 401, 'invalid_client')).error_description ?? '', /registered for private_key_jwt/);

    const { location, verifier } = await authorize(h, { client: { client_id: clientId }, user });
    const response = await redeemCode(h, { client_id: clientId }, location.searchParams.get('code')!, verifier, withAssertion);
    assert.equal(response.status, 200, await response.clone().text());
    assert.equal((await h.store.getClient(clientId))?.tokenEndpointAuthMethod, 'private_key_jwt');
  });

  describe('a document keeps what it can: what this server will not honour is left out, never a reason to refuse it', () => {
    /** The client made from a document, through /authorize, and what the log says was left out. */
    async function accepted(h: Harness, clientId: string, redirectUri: string) {
      const response = await start(h, clientId, redirectUri);
      assert.equal(response.status, 303, await response.clone().text());
      const client = await h.store.getClient(clientId);
      assert.ok(client, 'the client is kept');
      const trimmed = h.log.filter((event) => event.event === 'client_metadata_trimmed' && event.client_id === clientId);
      return { client, dropped: trimmed.map((event) => String(event.dropped)).join('\n') };
    }

    it("claude.ai's document as recorded: accepted, up to the consent page; jwt-bearer left out of the public client kept, and logged", async () => {
      const h = testSwitch();
      const user = await addUser(h);
      const clientId = `${base}/oauth/mcp-oauth-client-metadata`;
      routes.set('/oauth/mcp-oauth-client-metadata', { body: claudeAiDocument(clientId) });
      const { client, dropped } = await accepted(h, clientId, CLAUDE_AI_REDIRECT_URI);
      assert.deepEqual(client.grantTypes, ['authorization_code', 'refresh_token']);
      assert.deepEqual(client.metadata.grant_types, ['authorization_code', 'refresh_token']);
      assert.equal(client.tokenEndpointAuthMethod, 'none');
      assert.equal(
        dropped,
        'grant_types urn:ietf:params:oauth:grant-type:jwt-bearer: needs a confidential client (token_endpoint_auth_method other than none)',
      );
      assert.equal(h.log.filter((event) => event.event === 'client_document_failed').length, 0);

      const pages: string[] = [];
      const browser = new Browser(h);
      const { challenge } = pkcePair();
      const first = await browser.fetch(
        authorizeUrl({
          response_type: 'code',
          client_id: clientId,
          redirect_uri: CLAUDE_AI_REDIRECT_URI,
          code_challenge: challenge,
          code_challenge_method: 'S256',
          state: 's',
        }),
      );
      const back = await signInAndConsent(browser, first, user, 'approve', ISSUER, pages);
      const consent = pages.at(-1)!;
      assert.match(consent, /<h1>Authorize Claude\?<\/h1>/, 'the consent page');
      assert.match(consent, /<dt>Returns to<\/dt><dd><code class="token"><span>claude\.ai<\/span><\/code><\/dd>/);
      assert.doesNotMatch(consent, /an app on your device/, 'a web site, not an app');
      assert.equal(`${back.origin}${back.pathname}`, CLAUDE_AI_REDIRECT_URI);
      assert.ok(back.searchParams.get('code'));
    });

    it('a document listing one redirect URI that breaks the rules keeps the others; with none left it cannot be used, and the log says why each', async () => {
      const h = testSwitch();
      const mixed = documentAt('/mixed-redirects.json', { redirect_uris: ['myapp://cb', REDIRECT_URI, 'http://evil.example/cb'] });
      const { client, dropped } = await accepted(h, mixed, REDIRECT_URI);
      assert.deepEqual(client.redirectUris, [REDIRECT_URI]);
      assert.match(
        dropped,
        /redirect_uris myapp:\/\/cb: redirect URI scheme myapp: is not allowed.*; redirect_uris http:\/\/evil\.example\/cb: http redirect URIs are allowed only on a loopback host/,
      );
      await unusable(
        h,
        documentAt('/no-redirects.json', { redirect_uris: ['myapp://cb', 'http://evil.example/cb'] }),
        /no redirect URI can be registered: myapp:\/\/cb: .*; http:\/\/evil\.example\/cb: /,
        'myapp://cb',
      );
    });

    it('a private-use redirect URI the operator admits is kept from a document too', async () => {
      const h = createHarness({ allowedRedirectSchemes: ['com.example.app'], clientIdMetadataDocuments: { allowLoopbackHttp: true, timeoutMs: 500 } });
      const clientId = documentAt('/native.json', { redirect_uris: ['com.example.app:/oauth2redirect', REDIRECT_URI] });
      const { client, dropped } = await accepted(h, clientId, 'com.example.app:/oauth2redirect');
      assert.deepEqual(client.redirectUris, ['com.example.app:/oauth2redirect', REDIRECT_URI]);
      assert.equal(dropped, '');
    });

    it('client_credentials is left out of a document (anyone can publish one); the rest is kept', async () => {
      const h = testSwitch();
      const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const keyed = { token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [publicKey.export({ format: 'jwk' })] } };
      const { client, dropped } = await accepted(
        h,
        documentAt('/with-machine.json', { ...keyed, grant_types: ['authorization_code', 'client_credentials'] }),
        REDIRECT_URI,
      );
      assert.deepEqual(client.grantTypes, ['authorization_code']);
      assert.equal(dropped, 'grant_types client_credentials: client_credentials clients are created by an operator, not by a document');
    });
  });

  describe('token_endpoint_auth_methods_supported in a document: the strongest method both sides support', () => {
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwks = { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'r1', alg: 'RS256' }] };
    for (const [label, fields, method] of [
      [
        "ChatGPT's fields, keys inline: its preference, private_key_jwt",
        {
          token_endpoint_auth_method: 'private_key_jwt',
          token_endpoint_auth_methods_supported: ['none', 'private_key_jwt'],
          token_endpoint_auth_signing_alg: 'RS256',
          jwks,
        },
        'private_key_jwt',
      ],
      ['only none offered: a public client', { token_endpoint_auth_method: 'none', token_endpoint_auth_methods_supported: ['none'] }, 'none'],
      [
        'private_key_jwt preferred but no keys given: none, from the list',
        { token_endpoint_auth_method: 'private_key_jwt', token_endpoint_auth_methods_supported: ['none', 'private_key_jwt'] },
        'none',
      ],
      [
        'a list partly supported, with keys: private_key_jwt',
        { token_endpoint_auth_method: undefined, token_endpoint_auth_methods_supported: ['tls_client_auth', 'client_secret_basic', 'private_key_jwt'], jwks },
        'private_key_jwt',
      ],
      [
        'a list partly supported, no keys: none',
        { token_endpoint_auth_method: undefined, token_endpoint_auth_methods_supported: ['client_secret_post', 'none'] },
        'none',
      ],
      [
        'none preferred over keys it also has',
        { token_endpoint_auth_method: 'none', token_endpoint_auth_methods_supported: ['none', 'private_key_jwt'], jwks },
        'none',
      ],
    ] as const) {
      it(`${label}`, async () => {
        const h = testSwitch();
        const clientId = documentAt(`/methods-${label.replace(/\W+/g, '-')}.json`, fields);
        assert.equal((await start(h, clientId)).status, 303);
        const client = await h.store.getClient(clientId);
        assert.equal(client?.tokenEndpointAuthMethod, method);
        assert.equal(client?.metadata.token_endpoint_auth_method, method);
        assert.equal(client?.metadata.jwks === undefined, method !== 'private_key_jwt', 'keys kept only for private_key_jwt');
      });
    }
  });

  describe("ChatGPT's document as recorded, its keys at a jwks_uri on 127.0.0.1 (the documents' test switch covers them)", () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const KID = 'chatgpt-test';

    function chatGpt(): { clientId: string; assertion: (h: Harness) => string } {
      const clientId = `${base}/oauth/client.json`;
      routes.set('/oauth/jwks.json', { body: { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: KID, use: 'sig', alg: 'RS256' }] } });
      routes.set('/oauth/client.json', { body: chatGptDocument(clientId, `${base}/oauth/jwks.json`) });
      const sign = jwtSigner({ alg: 'RS256', kid: KID, typ: 'JWT' }, privateKey);
      return { clientId, assertion: (h) => sign({ iss: clientId, sub: clientId, aud: ISSUER, jti: randomUUID(), iat: h.clock.now, exp: h.clock.now + 60 }) };
    }
    const asClient = (assertion: string) => ({
      client_id: undefined,
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: assertion,
    });

    it('private_key_jwt: the code is redeemed with an RS256 assertion whose aud is the issuer, and refreshed with a new one', async () => {
      const h = testSwitch();
      const user = await addUser(h);
      const { clientId, assertion } = chatGpt();
      const { location, verifier } = await authorize(h, { client: { client_id: clientId }, user, redirectUri: CHATGPT_REDIRECT_URI });
      assert.equal(`${location.origin}${location.pathname}`, CHATGPT_REDIRECT_URI);
      assert.equal(location.searchParams.get('iss'), ISSUER);
      const client = await h.store.getClient(clientId);
      assert.equal(client?.tokenEndpointAuthMethod, 'private_key_jwt');
      assert.equal(client?.metadata.jwks_uri, `${base}/oauth/jwks.json`);
      assert.equal(client?.metadata.token_endpoint_auth_signing_alg, 'RS256');

      const withoutAssertion = await redeemCode(h, { client_id: clientId }, location.searchParams.get('code')!, verifier, {
        redirect_uri: CHATGPT_REDIRECT_URI,
      });
      assert.match((await expectOAuthError(withoutAssertion, 401, 'invalid_client')).error_description ?? '', /registered for private_key_jwt/);
      const again = await authorize(h, { client: { client_id: clientId }, user, redirectUri: CHATGPT_REDIRECT_URI });
      const redeemed = await redeemCode(h, { client_id: clientId }, again.location.searchParams.get('code')!, again.verifier, {
        redirect_uri: CHATGPT_REDIRECT_URI,
        ...asClient(assertion(h)),
      });
      assert.equal(redeemed.status, 200, await redeemed.clone().text());
      const tokens = (await redeemed.json()) as { refresh_token: string };
      assert.equal(hits.get('/oauth/jwks.json'), 1, 'its keys were fetched from its jwks_uri');

      const refreshed = await postForm(h, '/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...asClient(assertion(h)) });
      assert.equal(refreshed.status, 200, await refreshed.clone().text());
    });

    it('the switch covers http://127.0.0.1 only: a jwks_uri at http://localhost, or at 127.0.0.1 without the switch, is refused', async () => {
      const h = testSwitch();
      const clientId = documentAt('/localhost-keys.json', {
        token_endpoint_auth_method: 'private_key_jwt',
        jwks_uri: `http://localhost:${new URL(base).port}/oauth/jwks.json`,
      });
      await unusable(h, clientId, /jwks_uri must be an https URL/);
      // Registration is no document: the documents' switch does not let it name such keys.
      const registered = await h.request('/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'private_key_jwt', jwks_uri: `${base}/oauth/jwks.json` }),
      });
      assert.match((await expectOAuthError(registered, 400, 'invalid_client_metadata')).error_description ?? '', /jwks_uri must be an https URL/);
    });
  });

  describe('refused, each by its own defence', () => {
    it('a private, loopback or link-local address, found before any connection (without the test switch)', async () => {
      // Any attempt to connect is recorded and refused here: this test never sends a packet
      // anywhere, even if the defence it checks were gone.
      const attempts: string[] = [];
      const request = ((url: URL) => {
        attempts.push(String(url));
        throw new Error('no connection may be attempted');
      }) as unknown as typeof http.request;
      const h = createHarness({ clientIdMetadataDocuments: { request } });
      for (const clientId of [
        'https://10.0.0.1/client.json',
        'https://169.254.169.254/latest.json',
        'https://[::1]/c.json',
        'https://localhost/c.json',
        'https://192.168.1.10/c.json',
      ]) {
        await unusable(h, clientId, /non-public address/);
      }
      assert.deepEqual(attempts, []);
    });

    it('plain http (other than the test switch), and URLs that are not plain identifiers', async () => {
      const h = testSwitch();
      await refused(await start(h, 'http://docs.example/c.json'), /must be https/);
      await refused(await start(h, 'https://docs.example/'), /must have a path/);
      await refused(await start(h, 'https://user:pw@docs.example/c.json'), /credentials/);
      await refused(await start(h, `${base}/a/../c.json`), /normalised form/);
    });

    it('a redirect, even to a public address; never to a private one', async () => {
      // The server answers with a redirect to a private address; it is never followed.
      const h = testSwitch();
      const clientId = documentAt('/moved.json', {}, { status: 302, headers: { location: 'http://10.0.0.1/internal.json' } });
      await unusable(h, clientId, /redirects are not followed/);
    });

    it('a document over the size limit', async () => {
      const h = testSwitch();
      const clientId = documentAt('/big.json', { padding: 'x'.repeat(70 * 1024) });
      await unusable(h, clientId, /larger than/);
    });

    it('a document that is not application/json', async () => {
      const h = testSwitch();
      const clientId = documentAt('/html.json', {}, { type: 'text/html' });
      await unusable(h, clientId, /not application\/json/);
    });

    it('a document slower than the timeout', async () => {
      const h = testSwitch();
      const clientId = documentAt('/slow.json', {}, { delayMs: 1500 });
      await unusable(h, clientId, /too long|in time/);
    });

    it('a document that names another client_id', async () => {
      const h = testSwitch();
      const clientId = documentAt('/other.json', { client_id: `${base}/someone-else.json` });
      await unusable(h, clientId, /client_id is not the URL/);
    });

    it('a redirect_uri the document does not list', async () => {
      const h = testSwitch();
      const clientId = documentAt('/narrow.json');
      await refused(await start(h, clientId, 'http://127.0.0.1:44444/elsewhere'), /not one the application registered/);
    });

    it('a document holding a NUL or an unpaired surrogate (PostgreSQL cannot keep either)', async () => {
      const h = testSwitch();
      await unusable(h, documentAt('/surrogate.json', { client_name: 'Doc \ud800' }), /NUL characters or unpaired surrogates/);
      await unusable(h, documentAt('/nul.json', { client_name: 'Doc \u0000' }), /NUL characters or unpaired surrogates/);
    });

    it('a document claiming a secret or a confidential method', async () => {
      const h = testSwitch();
      await unusable(h, documentAt('/secret.json', { client_secret: 'shh' }), /cannot hold a client secret/);
      await unusable(h, documentAt('/basic.json', { token_endpoint_auth_method: 'client_secret_basic' }), /must be none/);
      await unusable(h, documentAt('/keyless.json', { token_endpoint_auth_method: 'private_key_jwt' }), /exactly one of jwks and jwks_uri/);
      await unusable(
        h,
        documentAt('/secret-methods.json', {
          token_endpoint_auth_method: undefined,
          token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
        }),
        /must be none or private_key_jwt \(none of those offered is\)/,
      );
    });

    it("a document host that fails (an error status, too slow) is the client's problem: 400 invalid_client, never a 5xx", async () => {
      // Found by the fuzz run: anyone can name such a URL as client_id, and a 503 from us would
      // read as our outage (alerts, retries) when the fault is the client's host.
      const h = testSwitch();
      for (const clientId of [
        documentAt('/down.json', {}, { status: 503 }),
        documentAt('/broken.json', {}, { status: 500 }),
        documentAt('/late.json', {}, { delayMs: 1500 }),
      ]) {
        const page = await start(h, clientId);
        assert.equal(page.status, 400, `authorize, ${clientId}`);
        assert.match(await page.text(), /could not be fetched or is not valid/);
        const token = await redeemCode(h, { client_id: clientId }, 'code', 'verifier');
        assert.equal(token.status, 400, `token, ${clientId}`);
        assert.equal(((await token.json()) as { error: string }).error, 'invalid_client');
      }
    });

    it('turned off: a URL client is unknown, even one used before; an allow-list refuses other hosts', async () => {
      const store = createHarness().store;
      const on = createHarness({ store, clientIdMetadataDocuments: { allowLoopbackHttp: true } });
      const clientId = documentAt('/before.json');
      assert.equal((await start(on, clientId)).status, 303);
      const off = createHarness({ store, clientIdMetadataDocuments: { enabled: false, allowLoopbackHttp: true } });
      await refused(await start(off, clientId), /not registered/);
      const listed = testSwitch({ allowHosts: ['docs.example'] });
      await refused(await start(listed, documentAt('/unlisted.json')), /not among the hosts/);
    });
  });

  describe('documents follow the registration policy unless turned on explicitly', () => {
    it('registration closed or behind a token: a URL client is unknown, nothing is fetched, and the metadata says so', async () => {
      for (const [i, registration] of (['closed', { initialAccessToken: 'a'.repeat(32) }] as const).entries()) {
        const h = createHarness({ registration, clientIdMetadataDocuments: { allowLoopbackHttp: true } });
        const clientId = documentAt(`/closed-${i}.json`);
        await refused(await start(h, clientId), /not registered with this server/);
        const token = await expectOAuthError(
          await postForm(h, '/token', { grant_type: 'authorization_code', code: 'c', code_verifier: 'v', client_id: clientId }),
          401,
          'invalid_client',
        );
        assert.equal(token.error_description, 'unknown client');
        assert.equal(hits.get(`/closed-${i}.json`), undefined, 'never fetched');
        assert.equal(await h.store.getClient(clientId), undefined, 'no client created');
        const metadata = (await (await h.request('/.well-known/oauth-authorization-server')).json()) as Record<string, unknown>;
        assert.equal(metadata.client_id_metadata_document_supported, false);
      }
    });

    it('enabled: true accepts them with registration closed', async () => {
      const h = createHarness({ registration: 'closed', clientIdMetadataDocuments: { enabled: true, allowLoopbackHttp: true } });
      assert.equal((await start(h, documentAt('/closed-on.json'))).status, 303);
      const metadata = (await (await h.request('/.well-known/oauth-authorization-server')).json()) as Record<string, unknown>;
      assert.equal(metadata.client_id_metadata_document_supported, true);
    });
  });

  describe('new documents are limited like registrations', () => {
    const PEER = 'x-test-peer';
    const limited = (rateLimits: RateLimitOptions): Harness =>
      createHarness({
        clientAddress: (request) => request.headers.get(PEER) ?? undefined,
        rateLimits,
        clientIdMetadataDocuments: { allowLoopbackHttp: true, timeoutMs: 500 },
      });
    /** GET /authorize for a document client, from an address (none: unknown). */
    const from = (h: Harness, peer: string | undefined, clientId: string): Promise<Response> =>
      new Browser((path, init) => {
        const headers = new Headers(init.headers);
        if (peer) headers.set(PEER, peer);
        return h.request(path, { ...init, headers });
      }).fetch(
        authorizeUrl({
          response_type: 'code',
          client_id: clientId,
          redirect_uri: REDIRECT_URI,
          code_challenge: pkcePair().challenge,
          code_challenge_method: 'S256',
        }),
      );

    async function tooMany(response: Response, words: RegExp): Promise<void> {
      const text = await response.text();
      assert.equal(response.status, 429, text);
      assert.equal(response.headers.get('location'), null, 'a page, never a redirect');
      assert.match(response.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
      assert.match(text, words);
    }

    it('per address: past the budget a new document is refused before it is fetched; a known one fetched again is not counted', async () => {
      const h = limited({ clientDocument: { burst: 2, perMinute: 1 / 60 } });
      const known = documentAt('/limit-a.json', {}, { headers: { 'cache-control': 'max-age=60' } });
      assert.equal((await from(h, '203.0.113.5', known)).status, 303);
      assert.equal((await from(h, '203.0.113.5', documentAt('/limit-b.json'))).status, 303);
      const third = documentAt('/limit-c.json');
      await tooMany(await from(h, '203.0.113.5', third), /Too many attempts from your network/);
      assert.equal(hits.get('/limit-c.json'), undefined, 'never fetched');
      assert.equal(await h.store.getClient(third), undefined);
      // At /token too: the OAuth JSON 429.
      const token = await postForm(
        h,
        '/token',
        { grant_type: 'authorization_code', code: 'c', code_verifier: 'v', client_id: documentAt('/limit-d.json') },
        { [PEER]: '203.0.113.5' },
      );
      await expectOAuthError(token, 429, 'temporarily_unavailable');
      // Another address has its own budget.
      assert.equal((await from(h, '198.51.100.7', third)).status, 303);
      // The known document's cache ends: fetched again, and admitted with the budget still empty.
      h.clock.now += 61;
      assert.equal((await from(h, '203.0.113.5', known)).status, 303);
      assert.equal(hits.get('/limit-a.json'), 2);
      assert.ok(h.log.some((event) => event.event === 'rate_limited' && event.limit === 'clientDocument'));
    });

    it('for all addresses together, whatever the address (or none): past the total a new document is refused', async () => {
      const h = limited({ clientDocument: false, clientDocumentTotal: { burst: 2, perMinute: 1 / 60 } });
      const known = documentAt('/total-a.json', {}, { headers: { 'cache-control': 'max-age=60' } });
      assert.equal((await from(h, '203.0.113.1', known)).status, 303);
      assert.equal((await from(h, '203.0.113.2', documentAt('/total-b.json'))).status, 303);
      await tooMany(await from(h, '203.0.113.3', documentAt('/total-c.json')), /This server is busy/);
      await tooMany(await from(h, undefined, documentAt('/total-d.json')), /This server is busy/);
      assert.equal(hits.get('/total-c.json'), undefined, 'never fetched');
      h.clock.now += 61;
      assert.equal((await from(h, '203.0.113.4', known)).status, 303, 'a known document is not new');
    });
  });

  describe('a failure tells the requester nothing about our network', () => {
    it('a private address, a refused port, an open port answering badly, a timeout, bad JSON: one answer at /token and /revoke; the cause in the log', async () => {
      const h = testSwitch();
      const cases: Array<[string, RegExp]> = [
        ['https://localhost/x', /non-public address/],
        [`http://127.0.0.1:${await closedPort()}/x`, /ECONNREFUSED/],
        [`${base}/nothing-here.json`, /HTTP 404/],
        [documentAt('/bad-json.json', {}, { raw: '{"client_id": ' }), /not valid JSON/],
        [documentAt('/as-text.json', {}, { type: 'text/plain' }), /not application\/json/],
        [documentAt('/late-token.json', {}, { delayMs: 1500 }), /too long|in time/],
      ];
      const bodies = new Set<string>();
      for (const [clientId, cause] of cases) {
        const token = await postForm(h, '/token', {
          grant_type: 'authorization_code',
          code: 'c',
          code_verifier: 'v',
          client_id: clientId,
          redirect_uri: REDIRECT_URI,
        });
        const revoke = await postForm(h, '/revoke', { token: 'anything', client_id: clientId });
        for (const response of [token, revoke]) {
          assert.equal(response.status, 400, clientId);
          bodies.add(await response.text());
        }
        const logged = h.log.find((event) => event.event === 'client_document_failed' && event.client_id === clientId);
        assert.match(String(logged?.reason), cause, `the log says why: ${JSON.stringify(logged)}`);
      }
      assert.deepEqual(
        [...bodies],
        [JSON.stringify({ error: 'invalid_client', error_description: 'the client ID metadata document could not be fetched or is not valid' })],
      );
    });
  });

  describe('a document that failed is remembered for a minute', () => {
    it('not fetched again meanwhile (the same answer), then fetched again', async () => {
      const h = testSwitch();
      const clientId = documentAt('/flaky.json', {}, { status: 503 });
      await unusable(h, clientId, /HTTP 503/);
      await unusable(h, clientId, /HTTP 503/);
      const token = await expectOAuthError(
        await postForm(h, '/token', { grant_type: 'authorization_code', code: 'c', code_verifier: 'v', client_id: clientId }),
        400,
        'invalid_client',
      );
      assert.match(token.error_description ?? '', /could not be fetched or is not valid/);
      assert.equal(hits.get('/flaky.json'), 1);
      documentAt('/flaky.json');
      h.clock.now += 59;
      assert.equal((await start(h, clientId)).status, 400, 'still remembered');
      assert.equal(hits.get('/flaky.json'), 1);
      h.clock.now += 2;
      assert.equal((await start(h, clientId)).status, 303);
      assert.equal(hits.get('/flaky.json'), 2);
    });

    it('at most 1000 failures are remembered: the oldest is forgotten first', async () => {
      const h = createHarness({ rateLimits: { clientDocumentTotal: false }, clientIdMetadataDocuments: { allowLoopbackHttp: true, timeoutMs: 500 } });
      const revoke = (i: number) => postForm(h, '/revoke', { token: 'anything', client_id: `${base}/gone-${i}.json` });
      for (let i = 0; i <= 1000; i++) assert.equal((await revoke(i)).status, 400);
      await revoke(1000);
      assert.equal(hits.get('/gone-1000.json'), 1, 'the newest is remembered');
      await revoke(0);
      assert.equal(hits.get('/gone-0.json'), 2, 'the oldest was forgotten');
    });
  });

  it('cached as its Cache-Control says, within bounds; no-store is fetched each time', async () => {
    const h = testSwitch();
    const cached = documentAt('/cached.json', {}, { headers: { 'cache-control': 'max-age=600' } });
    await start(h, cached);
    await start(h, cached);
    assert.equal(hits.get('/cached.json'), 1);
    h.clock.now += 601;
    await start(h, cached);
    assert.equal(hits.get('/cached.json'), 2);
    const fresh = documentAt('/fresh.json', {}, { headers: { 'cache-control': 'no-store' } });
    await start(h, fresh);
    await start(h, fresh);
    assert.equal(hits.get('/fresh.json'), 2);
  });
});
