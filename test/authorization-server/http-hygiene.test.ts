import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { coHostedServer } from '../helpers/co-hosted.js';
import { STORE_KINDS, type OpenedStore } from '../helpers/stores.js';
import {
  basic,
  createHarness,
  expectOAuthError,
  REDIRECT_URI,
  registerClient,
  registerServiceClient,
  type Harness,
  type TestClient,
} from '../helpers/harness.js';

const ORIGIN = 'https://app.example.com';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const JSON_TYPE = { 'content-type': 'application/json' };
const LIMIT = 64 * 1024;
const b64 = (text: string): string => Buffer.from(text).toString('base64');

function post(h: Harness, path: string, body: BodyInit, headers: Record<string, string> = FORM): Promise<Response> {
  return h.request(path, { method: 'POST', body, headers });
}

/** Asserts that nothing in the server logged an unexpected (500-class) error. */
function assertNoInternalError(h: Harness): void {
  assert.deepEqual(
    h.log.filter((event) => event.event === 'internal_error'),
    [],
  );
}

describe('CORS', () => {
  const readable: [string, (h: Harness) => Promise<Response>][] = [
    ['GET /.well-known/oauth-authorization-server', (h) => h.request('/.well-known/oauth-authorization-server', { headers: { origin: ORIGIN } })],
    ['GET /jwks', (h) => h.request('/jwks', { headers: { origin: ORIGIN } })],
    ['POST /token', (h) => post(h, '/token', 'grant_type=client_credentials', { ...FORM, origin: ORIGIN })],
    [
      'POST /register',
      (h) => post(h, '/register', JSON.stringify({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' }), { ...JSON_TYPE, origin: ORIGIN }),
    ],
    ['POST /revoke', (h) => post(h, '/revoke', 'token=x', { ...FORM, origin: ORIGIN })],
  ];
  for (const [label, send] of readable) {
    it(`lets browsers read ${label}`, async () => {
      const response = await send(createHarness());
      assert.equal(response.headers.get('access-control-allow-origin'), '*');
    });
  }

  for (const [path, method] of [
    ['/.well-known/oauth-authorization-server', 'GET'],
    ['/token', 'POST'],
    ['/register', 'POST'],
    ['/revoke', 'POST'],
  ]) {
    it(`answers a preflight for ${path} with 204`, async () => {
      const response = await createHarness().request(path!, {
        method: 'OPTIONS',
        headers: { origin: ORIGIN, 'access-control-request-method': method!, 'access-control-request-headers': 'authorization, content-type' },
      });
      assert.equal(response.status, 204);
      assert.equal(response.headers.get('access-control-allow-origin'), '*');
      assert.match(response.headers.get('access-control-allow-methods') ?? '', new RegExp(`\\b${method}\\b`));
      assert.match(response.headers.get('access-control-allow-headers') ?? '', /authorization/i);
      assert.match(response.headers.get('access-control-allow-headers') ?? '', /content-type/i);
    });
  }

  const closed: [string, (h: Harness) => Promise<Response>][] = [
    ['GET /authorize', (h) => h.request('/authorize?client_id=x', { headers: { origin: ORIGIN } })],
    ['POST /authorize', (h) => post(h, '/authorize', 'client_id=x', { ...FORM, origin: ORIGIN })],
    ['GET /interaction/:id', (h) => h.request('/interaction/abc', { headers: { origin: ORIGIN } })],
    ['POST /interaction/:id', (h) => post(h, '/interaction/abc', 'csrf=x', { ...FORM, origin: ORIGIN })],
    ['POST /introspect', (h) => post(h, '/introspect', 'token=x', { ...FORM, origin: ORIGIN })],
    ['OPTIONS /introspect', (h) => h.request('/introspect', { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'POST' } })],
    ['OPTIONS /authorize', (h) => h.request('/authorize', { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'GET' } })],
  ];
  for (const [label, send] of closed) {
    it(`keeps ${label} unreadable from other origins`, async () => {
      const response = await send(createHarness());
      assert.equal(response.headers.get('access-control-allow-origin'), null);
      assert.notEqual(response.status, 204);
    });
  }
});

describe('methods', () => {
  for (const [method, path, allow] of [
    ['GET', '/token', 'POST'],
    ['PUT', '/token', 'POST'],
    ['DELETE', '/register', 'POST'],
    ['GET', '/register', 'POST'],
    ['PUT', '/.well-known/oauth-authorization-server', 'GET'],
    ['POST', '/.well-known/oauth-authorization-server', 'GET'],
    ['POST', '/jwks', 'GET'],
    ['GET', '/revoke', 'POST'],
    ['GET', '/introspect', 'POST'],
    ['DELETE', '/authorize', 'GET, POST'],
    ['PATCH', '/interaction/abc', 'GET, POST'],
  ] as const) {
    it(`answers ${method} ${path} with 405 and Allow: ${allow}`, async () => {
      const response = await createHarness().request(path, { method, ...(method === 'GET' ? {} : { body: 'x', headers: FORM }) });
      assert.equal(response.headers.get('allow'), allow);
      await expectOAuthError(response, 405);
    });
  }
});

describe('body size', () => {
  const big = 'a='.padEnd(LIMIT + 1, 'x');
  const cases: [string, string, Record<string, string>][] = [
    ['/token', `grant_type=client_credentials&${big}`, FORM],
    ['/revoke', `token=${big}`, FORM],
    ['/introspect', `token=${big}`, FORM],
    ['/register', JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: big }), JSON_TYPE],
  ];
  for (const [path, body, headers] of cases) {
    it(`refuses a body over 64 KiB at ${path} with 413`, async () => {
      const h = createHarness();
      await expectOAuthError(await post(h, path, body, headers), 413);
      // Whether or not Content-Length says so, and however the body arrives.
      await expectOAuthError(await post(h, path, 'a=b', { ...headers, 'content-length': String(LIMIT + 1) }), 413);
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < 20; i++) controller.enqueue(new Uint8Array(4096).fill(0x61));
          controller.close();
        },
      });
      await expectOAuthError(await h.request(path, { method: 'POST', body: stream, headers, duplex: 'half' } as RequestInit), 413);
    });
  }

  it('accepts a body of exactly 64 KiB', async () => {
    const h = createHarness();
    const body = 'grant_type=client_credentials&a='.padEnd(LIMIT, 'x');
    await expectOAuthError(await post(h, '/token', body), 401, 'invalid_client');
  });

  it('refuses a large authorization form post with 413', async () => {
    const response = await post(createHarness(), '/authorize', `client_id=${'x'.repeat(LIMIT + 1)}`);
    assert.equal(response.status, 413);
  });
});

describe('a body that breaks off', () => {
  // The client's connection dropped mid-body (Node errors the stream with "aborted"), or its
  // framing was broken (found by the fuzz run: Transfer-Encoding "gzip, chunked" on a plain body).
  const broken = () =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('grant_type=client_'));
        controller.error(new Error('aborted'));
      },
    });
  for (const [path, type] of [
    ['/token', FORM],
    ['/revoke', FORM],
    ['/introspect', FORM],
    ['/revocations', FORM],
    ['/register', JSON_TYPE],
  ] as const) {
    it(`${path}: 400 invalid_request, not an internal error`, async () => {
      const h = createHarness();
      const response = await h.request(path, { method: 'POST', body: broken(), headers: type, duplex: 'half' } as RequestInit);
      await expectOAuthError(response, 400, 'invalid_request');
      assertNoInternalError(h);
    });
  }
});

describe('text no store can keep (NUL, unpaired surrogates) is a 4xx on every store', () => {
  // Found by the fuzz run on PostgreSQL, which refuses NUL in text and \u0000 or a lone surrogate
  // in jsonb: each of these was a 500. Refused where requests come in, the same on every store.
  const cases: [string, string, (clientId: string) => RequestInit, number][] = [
    ['a NUL client_id', '/token', () => ({ method: 'POST', body: 'grant_type=client_credentials&client_id=%00', headers: FORM }), 400],
    [
      'a NUL in a refresh request',
      '/token',
      (id) => ({ method: 'POST', body: `grant_type=refresh_token&refresh_token=r%00&client_id=${id}`, headers: FORM }),
      400,
    ],
    [
      'a NUL client id in Basic',
      '/token',
      () => ({ method: 'POST', body: 'grant_type=client_credentials', headers: { ...FORM, authorization: basic('\u0000', 'secret') } }),
      401,
    ],
    ['a NUL token to revoke', '/revoke', () => ({ method: 'POST', body: 'token=x&client_id=%00', headers: FORM }), 400],
    [
      'a NUL in a client name',
      '/register',
      () => ({ method: 'POST', body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: 'a\u0000b' }), headers: JSON_TYPE }),
      400,
    ],
    [
      'an unpaired surrogate in a client name',
      '/register',
      () => ({ method: 'POST', body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: 'a\ud800' }), headers: JSON_TYPE }),
      400,
    ],
    [
      'a NUL in a metadata key',
      '/register',
      () => ({ method: 'POST', body: JSON.stringify({ redirect_uris: [REDIRECT_URI], 'x\u0000': 1 }), headers: JSON_TYPE }),
      400,
    ],
    ['a NUL client_id', '/authorize?response_type=code&client_id=%00', () => ({}), 400],
    [
      'a NUL state',
      '/authorize',
      (id) => ({
        method: 'POST',
        body: `response_type=code&client_id=${id}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256&state=%00`,
        headers: FORM,
      }),
      400,
    ],
    ['a NUL interaction id', '/interaction/%00', () => ({}), 400],
  ];
  for (const kind of STORE_KINDS) {
    describe(kind.name, () => {
      let opened: OpenedStore | undefined;
      before(async () => {
        opened = await kind.open();
      });
      after(() => opened?.close());
      for (const [label, path, init, status] of cases) {
        it(`${path.split('?')[0]}: ${label} → ${status}`, async () => {
          const h = coHostedServer(opened!.store);
          const client = await registerClient(h);
          const response = await h.request(path, init(client.client_id));
          const text = await response.text();
          assert.equal(response.status, status, text.slice(0, 300));
          assertNoInternalError(h);
        });
      }
    });
  }
});

describe('malformed requests get a 4xx OAuth error, never a 5xx', () => {
  interface Clients {
    pub: TestClient;
    conf: TestClient;
  }
  type Case = [string, string, (c: Clients) => RequestInit];
  const form =
    (body: BodyInit, headers: Record<string, string> = {}) =>
    () => ({ method: 'POST', body, headers: { ...FORM, ...headers } });
  const json = (body: string) => () => ({ method: 'POST', body, headers: JSON_TYPE });
  const cases: Case[] = [
    ['empty body', '/token', form('')],
    ['no content type', '/token', () => ({ method: 'POST', body: 'grant_type=client_credentials' })],
    ['text/plain', '/token', form('grant_type=client_credentials', { 'content-type': 'text/plain' })],
    ['multipart', '/token', form('--x\r\n\r\n--x--', { 'content-type': 'multipart/form-data; boundary=x' })],
    ['invalid UTF-8', '/token', form(new Uint8Array([0x67, 0x3d, 0xff, 0xfe, 0xc3]))],
    ['broken percent-encoding', '/token', form('%%%%=%%%&grant_type=%zz')],
    ['NUL bytes', '/token', (c) => form(`grant_type=authorization_code&code=%00&code_verifier=%00&client_id=${c.pub.client_id}%00`)()],
    ['a NUL client id', '/token', form('grant_type=client_credentials&client_id=%00')],
    ['a huge grant type', '/token', (c) => form(`grant_type=${'x'.repeat(30000)}&client_id=${c.pub.client_id}`)()],
    ['a repeated grant type', '/token', form('grant_type=client_credentials&grant_type=client_credentials')],
    ['repeated resources', '/token', (c) => form(`grant_type=authorization_code&code=x&code_verifier=x&client_id=${c.pub.client_id}&resource=a&resource=b`)()],
    [
      'a javascript: resource',
      '/token',
      (c) => ({
        ...form('grant_type=client_credentials&resource=javascript:alert(1)')(),
        headers: { ...FORM, authorization: basic(c.conf.client_id, c.conf.client_secret!) },
      }),
    ],
    [
      'a resource with a fragment',
      '/token',
      (c) => ({
        ...form(`grant_type=client_credentials&resource=${encodeURIComponent('http://127.0.0.1:9999/mcp#x')}`)(),
        headers: { ...FORM, authorization: basic(c.conf.client_id, c.conf.client_secret!) },
      }),
    ],
    [
      'a scope with control characters',
      '/token',
      (c) => ({
        ...form('grant_type=client_credentials&scope=%01%02%7f')(),
        headers: { ...FORM, authorization: basic(c.conf.client_id, c.conf.client_secret!) },
      }),
    ],
    ['a code verifier that is too short', '/token', (c) => form(`grant_type=authorization_code&code=x&code_verifier=short&client_id=${c.pub.client_id}`)()],
    [
      'a refresh token of 30 000 characters',
      '/token',
      (c) => form(`grant_type=refresh_token&refresh_token=${'r'.repeat(30000)}&client_id=${c.pub.client_id}`)(),
    ],
    ['a prototype key as grant type', '/token', (c) => form(`grant_type=constructor&client_id=${c.pub.client_id}`)()],
    ['a very long Basic header', '/token', form('grant_type=client_credentials', { authorization: `Basic ${'A'.repeat(20000)}` })],
    ['Basic of a lone colon', '/token', form('grant_type=client_credentials', { authorization: `Basic ${b64(':')}` })],
    ['Basic of NULs', '/token', form('grant_type=client_credentials', { authorization: `Basic ${b64('\u0000:\u0000')}` })],
    [
      'Basic with non-UTF-8 bytes',
      '/token',
      form('grant_type=client_credentials', { authorization: `Basic ${Buffer.from([0xff, 0x3a, 0xfe]).toString('base64')}` }),
    ],
    ['an unknown auth scheme', '/token', form('grant_type=client_credentials', { authorization: 'Digest username="x"' })],
    ['a JSON body', '/token', json('{"grant_type":"client_credentials"}')],
    ['registration as a form', '/register', form('redirect_uris=x')],
    ['invalid JSON', '/register', json('{')],
    ['JSON with a BOM', '/register', json('\uFEFF{}')],
    ['deeply nested JSON', '/register', json(`${'['.repeat(20000)}${']'.repeat(20000)}`)],
    ['a deeply nested client name', '/register', json(`{"redirect_uris":["${REDIRECT_URI}"],"client_name":${'['.repeat(20000)}${']'.repeat(20000)}}`)],
    ['null redirect URIs', '/register', json('{"redirect_uris":null}')],
    ['a null redirect URI', '/register', json('{"redirect_uris":[null]}')],
    ['an unparsable redirect URI', '/register', json('{"redirect_uris":["http://[::1"]}')],
    ['a redirect URI with a bad host', '/register', json('{"redirect_uris":["https://%zz/"]}')],
    ['an object as client name', '/register', json(`{"redirect_uris":["${REDIRECT_URI}"],"client_name":{"toString":1}}`)],
    ['objects as contacts', '/register', json(`{"redirect_uris":["${REDIRECT_URI}"],"contacts":[{}]}`)],
    ['a NUL in scope', '/register', json(`{"redirect_uris":["${REDIRECT_URI}"],"scope":"mcp:tools\\u0000"}`)],
    ['a prototype key as auth method', '/register', json(`{"redirect_uris":["${REDIRECT_URI}"],"token_endpoint_auth_method":"__proto__"}`)],
    ['a prototype key as grant type', '/register', json(`{"redirect_uris":["${REDIRECT_URI}"],"grant_types":["constructor"]}`)],
    ['no token', '/revoke', (c) => form(`client_id=${c.pub.client_id}`)()],
    ['a JSON body', '/revoke', json('{"token":"x"}')],
    ['a repeated token', '/revoke', (c) => form(`client_id=${c.pub.client_id}&token=a&token=b`)()],
    ['no credentials', '/introspect', form('token=x')],
    ['a JSON body', '/introspect', json('{"token":"x"}')],
    ['a public caller', '/introspect', (c) => form(`client_id=${c.pub.client_id}&token=eyJ.eyJ.x`)()],
  ];
  for (const [label, path, init] of cases) {
    it(`${path}: ${label}`, async () => {
      const h = createHarness();
      const clients = { pub: await registerClient(h), conf: await registerServiceClient(h) };
      const response = await h.request(path, init(clients));
      const body = await expectOAuthError(response, response.status);
      assert.ok(response.status >= 400 && response.status < 500, `${response.status} ${body.error}`);
      assertNoInternalError(h);
    });
  }

  for (const [label, path, init] of [
    ['no parameters', '/authorize', {}],
    ['broken percent-encoding', '/authorize?client_id=%zz&redirect_uri=%', {}],
    ['a repeated client_id', '/authorize?client_id=a&client_id=b', {}],
    ['an unknown interaction', '/interaction/does-not-exist', {}],
    ['an odd interaction id', '/interaction/%00%ff', {}],
    ['an interaction form without a cookie', '/interaction/abc', { method: 'POST', body: 'csrf=x', headers: FORM }],
    ['a form of the wrong type', '/authorize', { method: 'POST', body: '{}', headers: JSON_TYPE }],
  ] as const) {
    it(`${path}: ${label} is a 4xx page without internals`, async () => {
      const h = createHarness();
      const response = await h.request(path, init as RequestInit);
      assert.ok(response.status >= 400 && response.status < 500, String(response.status));
      assert.doesNotMatch(await response.text(), /\n\s+at |stack/i);
      assertNoInternalError(h);
    });
  }

  it('answers an unknown path with a JSON 404', async () => {
    await expectOAuthError(await createHarness().request('/no-such-endpoint'), 404);
  });
});
