/**
 * Abuse of dynamic client registration (RFC 7591 §5, RFC 9700 §4.1 for the redirect URIs it
 * registers). Open registration stores nothing it cannot stand behind: redirect URIs valid as
 * written under RFC 3986 (not as the forgiving WHATWG parser repairs them; the others are left
 * out, and a registration with none left is refused), web clients on https only, no
 * client_credentials clients, names without control characters, bounded bodies; clients
 * nobody uses are swept after the registration TTL; and each address has a registration budget.
 * Client ID metadata documents, which create clients too, keep to the same policy and budget.
 * Each group is its own `describe`, so further limits join the group they belong to.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  authorizationRequest,
  authorizeUrl,
  Browser,
  expectOAuthError,
  pkcePair,
  registerClient,
  REDIRECT_URI,
  REVISIONS,
  type Harness,
} from '../helpers/harness.js';
import { PEER_HEADER } from '../helpers/co-hosted.js';
import { assertUnchanged, onEveryStore } from './setup.js';

const DAY = 24 * 3600;

function register(h: Harness, metadata: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
  return h.request('/register', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ token_endpoint_auth_method: 'none', redirect_uris: [REDIRECT_URI], ...metadata }),
  });
}

/** Redirect URIs the WHATWG parser would repair into something with a host, and other tricks. */
const MALFORMED_REDIRECT_URIS = [
  'https:///cb',
  'https:evil.example/cb',
  'https:////evil.example/cb',
  'https:\\\\evil.example/cb',
  'https://evil.example\\@app.example/cb',
  'javascript:alert(1)//',
  'data:text/html,<script>alert(1)</script>',
  'http://evil.example/cb',
  'https://user:pass@app.example/cb',
  'https://app.example/cb#fragment',
  'https://app.example/c b',
  'https://app.example/cb\n',
  `https://app.example/${'a'.repeat(2100)}`,
];

onEveryStore('DCR abuse', (env) => {
  describe('redirect URIs (RFC 3986, RFC 9700 §4.1)', () => {
    for (const uri of MALFORMED_REDIRECT_URIS) {
      it(`never stores ${JSON.stringify(uri.slice(0, 60))}: alone, invalid_redirect_uri; beside a valid one, left out`, async () => {
        const h = await env.target();
        const before = await env.counts();
        await expectOAuthError(await register(h, { redirect_uris: [uri] }), 400, 'invalid_redirect_uri');
        assertUnchanged(before, await env.counts(), ['clients'], uri);
        const beside = await register(h, { redirect_uris: [REDIRECT_URI, uri] });
        assert.equal(beside.status, 201);
        const { client_id } = (await beside.json()) as { client_id: string };
        assert.deepEqual((await h.store.getClient(client_id))?.redirectUris, [REDIRECT_URI], 'only the valid one is stored');
      });
    }

    it('refuses more than 20 redirect URIs', async () => {
      const h = await env.target();
      const uris = Array.from({ length: 21 }, (_, i) => `https://app.example/cb${i}`);
      await expectOAuthError(await register(h, { redirect_uris: uris }), 400, 'invalid_redirect_uri');
    });
  });

  describe('application_type and grant types', () => {
    it('a web application may not register a loopback redirect URI', async () => {
      const h = await env.target();
      const before = await env.counts();
      await expectOAuthError(await register(h, { application_type: 'web', redirect_uris: ['http://127.0.0.1:4000/cb'] }), 400, 'invalid_redirect_uri');
      assertUnchanged(before, await env.counts(), ['clients'], 'application_type');
      assert.equal((await register(h, { application_type: 'native', redirect_uris: ['http://127.0.0.1:4000/cb'] })).status, 201);
      // An application_type nobody knows is left out: the client keeps the rules of one that sent none.
      const kiosk = await register(h, { application_type: 'kiosk' });
      assert.equal(kiosk.status, 201);
      const { client_id } = (await kiosk.json()) as { client_id: string };
      assert.equal((await h.store.getClient(client_id))?.metadata.application_type, undefined);
    });

    it('open registration does not create client_credentials clients (tokens with nobody consenting)', async () => {
      const h = await env.target();
      const before = await env.counts();
      const response = await register(h, { token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'], redirect_uris: [] });
      await expectOAuthError(response, 400, 'invalid_client_metadata');
      assertUnchanged(before, await env.counts(), ['clients'], 'client_credentials');
    });

    it('a client name that would spoof the consent page (control characters, 10 KB) is never stored', async () => {
      const h = await env.target();
      const before = await env.counts();
      await expectOAuthError(await register(h, { client_name: 'Trusted\u0000App' }), 400, 'invalid_client_metadata');
      assertUnchanged(before, await env.counts(), ['clients'], 'client_name');
      for (const name of ['App\u001b[2J', 'x'.repeat(10_000)]) {
        const response = await register(h, { client_name: name });
        assert.equal(response.status, 201);
        const { client_id } = (await response.json()) as { client_id: string };
        const stored = await h.store.getClient(client_id);
        assert.equal(stored?.clientName, null, 'left out: the consent page shows the client id instead');
        assert.equal(stored?.metadata.client_name, undefined);
      }
    });
  });

  describe('body limits', () => {
    it('a registration body over 64 KiB is refused with 413, declared or streamed, and nothing is stored', async () => {
      const h = await env.target();
      const before = await env.counts();
      const big = JSON.stringify({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none', padding: 'x'.repeat(70 * 1024) });
      await expectOAuthError(
        await h.request('/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: big }),
        413,
        'invalid_request',
      );
      // No Content-Length: the limit holds while the body streams in.
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < 80; i++) controller.enqueue(new TextEncoder().encode(i === 0 ? '{"padding":"' : 'x'.repeat(1024)));
          controller.close();
        },
      });
      const streamed = await h.request('/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: stream,
        duplex: 'half',
      } as RequestInit);
      await expectOAuthError(streamed, 413, 'invalid_request');
      assertUnchanged(before, await env.counts(), ['clients'], 'big body');
    });
  });

  describe('registration TTL', () => {
    it('a client nobody used is swept after the TTL, and its id then opens nothing; a used one stays', async () => {
      const h = await env.target({ registrationTtl: 7 * DAY });
      const unused = await registerClient(h);
      const used = await registerClient(h);
      h.clock.now += 6 * DAY;
      // Using a client (an authorization request) counts as use.
      const { params: usedParams } = authorizationRequest(used, REVISIONS[1]);
      assert.equal((await new Browser(h).fetch(authorizeUrl(usedParams))).status, 303);
      h.clock.now += 2 * DAY;
      await h.server.sweep();
      assert.equal(await h.store.getClient(unused.client_id), undefined);
      assert.ok(await h.store.getClient(used.client_id));
      const { params } = authorizationRequest(unused, REVISIONS[1]);
      const response = await new Browser(h).fetch(authorizeUrl(params));
      assert.equal(response.status, 400);
      assert.equal(response.headers.get('location'), null);
    });
  });

  describe('rate limit per address', () => {
    it('an address past its registration budget gets 429 with Retry-After and registers nothing; another address is served', async () => {
      const h = await env.target({ rateLimits: { register: { burst: 3, perMinute: 1 } } });
      const before = await env.counts();
      const from = (address: string) => register(h, {}, { [PEER_HEADER]: address });
      for (let i = 0; i < 3; i++) assert.equal((await from('203.0.113.7')).status, 201);
      const refused = await from('203.0.113.7');
      await expectOAuthError(refused, 429);
      assert.ok(Number(refused.headers.get('retry-after')) > 0, 'Retry-After');
      assert.equal((await env.counts()).clients, before.clients + 3);
      assert.equal((await from('198.51.100.8')).status, 201);
    });
  });

  describe('client ID metadata documents, the other way to create a client', () => {
    let documents: http.Server;
    let base: string;
    let fetched = 0;
    before(async () => {
      // Every path is a valid document naming itself: each new URL is a new client, if admitted.
      documents = http.createServer((req, res) => {
        fetched++;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ client_id: `${base}${req.url}`, redirect_uris: [REDIRECT_URI] }));
      });
      await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(documents.address() as AddressInfo).port}`;
    });
    after(() => new Promise<void>((resolve) => documents.close(() => resolve())));

    const authorizeAs = (h: Harness, clientId: string, address: string): Promise<Response> =>
      h.request(
        authorizeUrl({
          response_type: 'code',
          client_id: clientId,
          redirect_uri: REDIRECT_URI,
          code_challenge: pkcePair().challenge,
          code_challenge_method: 'S256',
        }),
        { headers: { [PEER_HEADER]: address } },
      );

    it('forty new document URLs from one address do not make forty clients (the per-address budget, as /register)', async () => {
      const h = await env.target({ clientIdMetadataDocuments: { allowLoopbackHttp: true } });
      const before = await env.counts();
      const fetchedBefore = fetched;
      const statuses = [];
      for (let i = 0; i < 40; i++) statuses.push((await authorizeAs(h, `${base}/flood-${env.kind.name}-${i}.json`, '203.0.113.40')).status);
      assert.deepEqual(statuses, [...Array(30).fill(303), ...Array(10).fill(429)]);
      assert.equal((await env.counts()).clients, before.clients + 30);
      assert.equal(fetched - fetchedBefore, 30, 'a refused URL is not even fetched');
      assert.equal((await authorizeAs(h, `${base}/other-${env.kind.name}.json`, '198.51.100.40')).status, 303, 'another address is served');
    });

    it('registration closed: no document client either, and nothing fetched', async () => {
      const h = await env.target({ registration: 'closed', clientIdMetadataDocuments: { allowLoopbackHttp: true } });
      const before = await env.counts();
      const fetchedBefore = fetched;
      const response = await authorizeAs(h, `${base}/closed-${env.kind.name}.json`, '203.0.113.41');
      assert.equal(response.status, 400);
      assert.equal(response.headers.get('location'), null);
      assertUnchanged(before, await env.counts(), ['clients'], 'registration closed');
      assert.equal(fetched, fetchedBefore);
    });
  });
});
