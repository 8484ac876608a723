/**
 * The jwt-bearer grant (RFC 7523 §2.1) in ContextClient, against a small authorization server and
 * context server on 127.0.0.1 that take only this grant: the token request it sends, how it
 * authenticates, asking the assertion callback again when the token expires or is refused, and
 * surfacing an error answer without a second request or another grant.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { exportPKCS8, generateKeyPair, jwtVerify } from 'jose';
import { ClientError } from '../../src/client/errors.js';
import type { AssertionContext } from '../../src/client/jwt-bearer.js';
import { ContextClient, type ContextClientOptions } from '../../src/client/session.js';
import { MemoryTokenStore } from '../../src/client/token-store.js';
import { serveHandler, type ServedApp } from './setup.js';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

interface TokenRequest {
  form: URLSearchParams;
  authorization: string | null;
}

/** What the token endpoint answers next: a token for so many seconds, or an error. */
type Answer = { expiresIn: number } | { error: string };

interface Peer {
  origin: string;
  /** How many access tokens were issued: the next is at-(issued + 1). */
  issued: number;
  serverUrl: string;
  tokenRequests: TokenRequest[];
  answer: Answer;
  /** Access tokens the context server accepts; a token taken out of it is refused with invalid_token. */
  valid: Set<string>;
  /** The access tokens the context server was shown, in order. */
  presented: string[];
  close(): Promise<void>;
}

async function startPeer(authMethods: string[]): Promise<Peer> {
  const peer = {
    issued: 0,
    tokenRequests: [] as TokenRequest[],
    answer: { expiresIn: 3600 } as Answer,
    valid: new Set<string>(),
    presented: [] as string[],
  };
  const served: ServedApp = await serveHandler(async (request) => {
    const origin = served.origin;
    const url = new URL(request.url);
    if (url.pathname === '/.well-known/oauth-protected-resource/mcp') return Response.json({ resource: `${origin}/mcp`, authorization_servers: [origin] });
    if (url.pathname === '/.well-known/oauth-authorization-server') {
      return Response.json({
        issuer: origin,
        token_endpoint: `${origin}/token`,
        grant_types_supported: [JWT_BEARER],
        token_endpoint_auth_methods_supported: authMethods,
        response_types_supported: ['code'],
      });
    }
    if (url.pathname === '/token') {
      const form = new URLSearchParams(await request.text());
      peer.tokenRequests.push({ form, authorization: request.headers.get('authorization') });
      if (form.get('grant_type') !== JWT_BEARER) return Response.json({ error: 'unsupported_grant_type' }, { status: 400 });
      if ('error' in peer.answer) return Response.json({ error: peer.answer.error, error_description: 'refused for the test' }, { status: 400 });
      const token = `at-${++peer.issued}`;
      peer.valid.add(token);
      return Response.json({ access_token: token, token_type: 'Bearer', expires_in: peer.answer.expiresIn });
    }
    if (url.pathname === '/mcp') {
      const token = request.headers.get('authorization')?.replace(/^Bearer /, '');
      if (token) peer.presented.push(token);
      if (token && peer.valid.has(token)) return Response.json({ ok: true });
      const error = token ? ', error="invalid_token"' : '';
      return new Response(null, {
        status: 401,
        headers: { 'www-authenticate': `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"${error}` },
      });
    }
    return new Response('not found', { status: 404 });
  });
  return Object.assign(peer, { origin: served.origin, serverUrl: `${served.origin}/mcp`, close: () => served.close() });
}

describe('the jwt-bearer grant', () => {
  let peer: Peer;
  let contexts: AssertionContext[];
  /** Seconds added to the client's clock. */
  let offset: number;

  before(async () => {
    peer = await startPeer(['none', 'client_secret_basic', 'private_key_jwt']);
  });
  after(() => peer.close());
  beforeEach(() => {
    peer.tokenRequests.length = 0;
    peer.presented.length = 0;
    peer.issued = 0;
    peer.valid.clear();
    peer.answer = { expiresIn: 3600 };
    contexts = [];
    offset = 0;
  });

  function client(options: Partial<ContextClientOptions> = {}): ContextClient {
    return new ContextClient({
      serverUrl: peer.serverUrl,
      store: new MemoryTokenStore(),
      clientId: 'workload-1',
      grantType: 'jwt-bearer',
      assertion: (context) => {
        contexts.push(context);
        return `assertion-${contexts.length}`;
      },
      now: () => Math.floor(Date.now() / 1000) + offset,
      ...options,
    });
  }

  it('sends grant_type, the assertion, the resource and the scope; with no credential, the client id alone', async () => {
    const response = await client({ scope: 'tools.read' }).fetch(peer.serverUrl);
    assert.equal(response.status, 200);
    assert.equal(peer.tokenRequests.length, 1);
    const [{ form, authorization }] = peer.tokenRequests as [TokenRequest];
    assert.deepEqual(Object.fromEntries(form), {
      grant_type: JWT_BEARER,
      assertion: 'assertion-1',
      resource: peer.serverUrl,
      scope: 'tools.read',
      client_id: 'workload-1',
    });
    assert.equal(authorization, null);
    // The callback is told what the assertion is for: the issuer is its audience.
    assert.deepEqual(contexts, [{ issuer: peer.origin, tokenEndpoint: `${peer.origin}/token`, resource: peer.serverUrl, scope: 'tools.read' }]);
  });

  it('authenticates with client_secret_basic when given a secret', async () => {
    await client({ clientSecret: 's3cret-value' }).fetch(peer.serverUrl);
    const [{ form, authorization }] = peer.tokenRequests as [TokenRequest];
    assert.equal(authorization, `Basic ${Buffer.from('workload-1:s3cret-value').toString('base64')}`);
    assert.equal(form.get('assertion'), 'assertion-1');
    assert.equal(form.get('client_secret'), null);
  });

  it('authenticates with private_key_jwt when given a private key', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    await client({ privateKey: await exportPKCS8(privateKey), keyId: 'k1' }).fetch(peer.serverUrl);
    const [{ form, authorization }] = peer.tokenRequests as [TokenRequest];
    assert.equal(authorization, null);
    assert.equal(form.get('grant_type'), JWT_BEARER);
    assert.equal(form.get('assertion'), 'assertion-1');
    assert.equal(form.get('client_assertion_type'), 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
    await jwtVerify(form.get('client_assertion')!, publicKey, { issuer: 'workload-1', subject: 'workload-1', audience: peer.origin });
  });

  it('asks the callback again when the access token expires: there is no refresh token', async () => {
    peer.answer = { expiresIn: 300 };
    const auth = client();
    await auth.fetch(peer.serverUrl);
    await auth.fetch(peer.serverUrl);
    assert.equal(contexts.length, 1, 'a valid token is reused');
    offset = 400;
    assert.equal((await auth.fetch(peer.serverUrl)).status, 200);
    assert.equal(contexts.length, 2, 'the callback was asked again');
    assert.deepEqual(
      peer.tokenRequests.map((r) => r.form.get('assertion')),
      ['assertion-1', 'assertion-2'],
    );
    assert.deepEqual(peer.presented, ['at-1', 'at-1', 'at-2']);
  });

  it('asks the callback again when the context server refuses the token (401)', async () => {
    const auth = client();
    await auth.fetch(peer.serverUrl);
    peer.valid.delete('at-1');
    const response = await auth.fetch(peer.serverUrl);
    assert.equal(response.status, 200);
    assert.equal(contexts.length, 2);
    assert.deepEqual(peer.presented, ['at-1', 'at-1', 'at-2']);
  });

  for (const error of ['invalid_grant', 'invalid_scope', 'unauthorized_client']) {
    it(`${error}: surfaced, with one token request and no other grant`, async () => {
      peer.answer = { error };
      await assert.rejects(
        client().fetch(peer.serverUrl),
        (thrown: Error) => thrown instanceof ClientError && thrown.code === 'token_request_failed' && thrown.message.includes(error),
      );
      assert.equal(peer.tokenRequests.length, 1);
    });
  }

  it('an error answer when the expired token is renewed: one token request, not a second after the 401', async () => {
    peer.answer = { expiresIn: 300 };
    const auth = client();
    await auth.fetch(peer.serverUrl);
    offset = 400;
    peer.answer = { error: 'invalid_grant' };
    await assert.rejects(auth.fetch(peer.serverUrl), /invalid_grant/);
    assert.equal(peer.tokenRequests.length, 2, 'the first grant, then one renewal');
    assert.ok(peer.tokenRequests.every((r) => r.form.get('grant_type') === JWT_BEARER));
  });

  it('a callback that fails, or gives nothing, is an assertion_unavailable error and no token request', async () => {
    const failing = client({ assertion: () => Promise.reject(new Error('the token file is gone')) });
    await assert.rejects(
      failing.fetch(peer.serverUrl),
      (e: Error) => e instanceof ClientError && e.code === 'assertion_unavailable' && /the token file is gone/.test(e.message),
    );
    await assert.rejects(client({ assertion: () => ' ' }).fetch(peer.serverUrl), (e: Error) => e instanceof ClientError && e.code === 'assertion_unavailable');
    assert.equal(peer.tokenRequests.length, 0);
  });

  it('refuses options that do not fit together', () => {
    assert.throws(() => client({ assertion: undefined }), /needs the assertion callback/);
    assert.throws(() => client({ clientId: undefined }), /needs the clientId/);
    assert.throws(() => client({ grantType: 'client_credentials' }), /assertion is for grantType 'jwt-bearer'/);
  });
});
