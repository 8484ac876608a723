/**
 * The gateway's token for its upstream comes from the token exchange grant's delegation, in
 * process: serve's app (coHostedApp) in front of the MCP SDK's server, which verifies each token
 * it gets as any upstream would, with `jose` against our JWKS. The person's token is the subject,
 * the gateway's path the actor, the upstream's URL the audience; the grant's refusals become the
 * gateway's answer, and nothing reaches the upstream then.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose';
import type { Hono } from 'hono';
import { coHostedApp } from '../../src/cli/co-hosted-app.js';
import { canonicalizeResourceUri } from '../../src/core/uri.js';
import { dpopProofSigner, generateDpopKeyPair } from '../../src/core/dpop.js';
import { TOKEN_EXCHANGE_GRANT_TYPE } from '../../src/core/id-jag.js';
import { ACCESS_TOKEN_TYPE } from '../../src/core/token-exchange.js';
import { httpUpstream } from '../../src/gateway/index.js';
import { StoreError, type FullStore } from '../../src/store/store.js';
import { createMemoryStore } from '../../src/store/memory.js';
import {
  addUser,
  authorize,
  createHarness,
  ISSUER,
  jwtClaims,
  postAs,
  redeemCode,
  registerClient,
  registerServiceClient,
  RESOURCE,
  type Harness,
  type TestClient,
} from '../helpers/harness.js';
import { sdkUpstream, type SdkUpstream } from '../helpers/mcp-upstreams.js';

const GATEWAY = `${ISSUER}/gw`;
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'gateway-test', version: '1.0.0' } },
});

describe('the gateway obtains its upstream token by token exchange', () => {
  let h: Harness;
  let app: Hono;
  let upstream: SdkUpstream;
  let audience: string;
  /** A delegation rule's client: resource /mcp's server, which may delegate to the gateway's path. */
  let notes: TestClient;
  /** Set to make the store fail as if the database were down (the grant's reads only). */
  const outage = { on: false };
  const seen: JWTPayload[] = [];

  before(async () => {
    const store = createMemoryStore();
    const failing: FullStore = new Proxy(store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (name !== 'getGrant' || typeof value !== 'function') return value;
        return (...args: unknown[]) => (outage.on ? Promise.reject(new StoreError('unavailable', 'the database is down')) : value.apply(target, args));
      },
    });
    notes = await registerServiceClient(createHarness({ store }));
    h = createHarness({
      store,
      serverStore: () => failing,
      resources: [RESOURCE, GATEWAY],
      tokenExchange: { delegations: [{ client: notes.client_id, from: RESOURCE, to: GATEWAY }] },
    });
    const jwks = createLocalJWKSet((await (await h.request('/jwks')).json()) as JSONWebKeySet);
    // What an upstream in any language does with a JWT library: the JWKS, the issuer, its own audience.
    upstream = await sdkUpstream(async (authorization) => {
      if (!authorization?.startsWith('Bearer ')) return 'no token';
      try {
        const { payload } = await jwtVerify(authorization.slice(7), jwks, {
          issuer: ISSUER,
          audience,
          algorithms: ['ES256'],
          typ: 'at+jwt',
          currentDate: new Date(h.clock.now * 1000),
        });
        seen.push(payload);
        return undefined;
      } catch (error) {
        return (error as Error).message;
      }
    });
    audience = canonicalizeResourceUri(upstream.url);
    app = coHostedApp(h.server, {
      resource: RESOURCE,
      now: () => h.clock.now,
      gateways: [{ path: '/gw', upstream: httpUpstream(upstream.url, { timeoutMs: 10_000 }), upstreamTokenAudience: audience }],
    });
  });
  after(() => upstream?.close());

  /** Alice's tokens for `resource`, through a public client, bound to `proof`'s key when given. */
  async function personsToken(resource: string, scope = 'mcp:tools', proof?: () => string): Promise<{ client: TestClient; access: string }> {
    const client = await registerClient(h);
    const user = (await h.store.getUser({ username: 'alice' })) ? { username: 'alice', password: 'correct horse battery' } : await addUser(h);
    const { location, verifier } = await authorize(h, { client, user, resource, scope });
    const redeemed = await (proof
      ? h.request('/token', {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', dpop: proof() },
          body: new URLSearchParams({
            grant_type: 'authorization_code',
            code: location.searchParams.get('code')!,
            code_verifier: verifier,
            redirect_uri: 'http://127.0.0.1:33333/callback',
            client_id: client.client_id,
            resource,
          }),
        })
      : redeemCode(h, client, location.searchParams.get('code')!, verifier, { resource }));
    const body = (await redeemed.json()) as Record<string, string>;
    assert.equal(redeemed.status, 200, JSON.stringify(body));
    return { client, access: body.access_token! };
  }

  function call(authorization: string, headers: Record<string, string> = {}): Promise<Response> {
    return Promise.resolve(app.fetch(new Request(GATEWAY, { method: 'POST', headers: { ...MCP_HEADERS, authorization, ...headers }, body: INITIALIZE })));
  }

  async function forwarded(response: Response): Promise<JWTPayload> {
    const text = await response.text();
    assert.equal(response.status, 200, text);
    return seen.at(-1)!;
  }

  it('gives the upstream a delegated token: the person as sub, the gateway in act, its audience, the scopes and grant of the person’s token', async () => {
    const person = await personsToken(GATEWAY, 'mcp:tools mcp:admin');
    const subject = jwtClaims(person.access);
    const claims = await forwarded(await call(`Bearer ${person.access}`));
    assert.equal(claims.iss, ISSUER);
    assert.equal(claims.aud, audience);
    assert.equal(claims.sub, subject.sub);
    assert.equal(claims.client_id, person.client.client_id);
    assert.equal(claims.scope, subject.scope);
    assert.deepEqual(String(claims.scope).split(' ').sort(), ['mcp:admin', 'mcp:tools']);
    assert.deepEqual(claims.act, { sub: GATEWAY });
    assert.equal(claims.grant_id, subject.grant_id);
    assert.notEqual(claims.jti, subject.jti);
    assert.equal(claims.cnf, undefined);
    assert.equal(claims.iat, h.clock.now);
    assert.equal(claims.exp, h.clock.now + 300, 'five minutes, not the ten of the person’s token');
    const event = h.log.findLast((entry) => entry.event === 'token_issued');
    assert.equal(event?.grant_type, TOKEN_EXCHANGE_GRANT_TYPE);
    assert.equal(event?.actor, GATEWAY);
    assert.equal(event?.resource, audience);
    assert.equal(event?.client_id, person.client.client_id);
  });

  it('ends no later than the person’s token', async () => {
    const person = await personsToken(GATEWAY);
    const subjectExp = Number(jwtClaims(person.access).exp);
    h.clock.now = subjectExp - 100;
    try {
      assert.equal((await forwarded(await call(`Bearer ${person.access}`))).exp, subjectExp);
    } finally {
      h.clock.now = 1_800_000_000;
    }
  });

  it('takes a DPoP-bound token with its proof, and gives the upstream a bearer token bound to no key', async () => {
    const key = dpopProofSigner(generateDpopKeyPair());
    const person = await personsToken(GATEWAY, 'mcp:tools', () => key.sign({ method: 'POST', url: `${ISSUER}/token`, now: h.clock.now }));
    assert.deepEqual(jwtClaims(person.access).cnf, { jkt: key.jkt });
    const proof = key.sign({ method: 'POST', url: GATEWAY, accessToken: person.access, now: h.clock.now });
    const claims = await forwarded(await call(`DPoP ${person.access}`, { dpop: proof }));
    assert.equal(claims.cnf, undefined, 'the gateway presents it, not the client: it cannot be bound to the client’s key');
    assert.deepEqual(claims.act, { sub: GATEWAY });
    assert.ok(upstream.received.at(-1)!.headers.authorization?.startsWith('Bearer '));
    assert.equal(upstream.received.at(-1)!.headers.dpop, undefined);
  });

  it('forwards a client’s own token (client credentials) with the client as subject', async () => {
    const robot = await registerServiceClient(h);
    const answer = await postAs(h, '/token', robot, { grant_type: 'client_credentials', resource: GATEWAY, scope: 'mcp:tools' });
    const token = ((await answer.json()) as { access_token: string }).access_token;
    const claims = await forwarded(await call(`Bearer ${token}`));
    assert.equal(claims.sub, robot.client_id);
    assert.equal(claims.client_id, robot.client_id);
    assert.deepEqual(claims.act, { sub: GATEWAY });
  });

  it('refuses, with 401 and nothing forwarded, a token revoked behind the guard’s back (another replica), once the guard took it', async () => {
    const person = await personsToken(GATEWAY);
    await forwarded(await call(`Bearer ${person.access}`));
    // Revoked in the store only: this process's revocations, which the guard reads, have not heard of it.
    await h.store.revokeGrant(String(jwtClaims(person.access).grant_id), h.clock.now);
    const received = upstream.received.length;
    const refused = await call(`Bearer ${person.access}`);
    assert.equal(refused.status, 401);
    assert.deepEqual(await refused.json(), { error: 'invalid_token', error_description: 'the access token has been revoked' });
    assert.equal(
      refused.headers.get('www-authenticate'),
      `Bearer resource_metadata="${ISSUER}/.well-known/oauth-protected-resource/gw", error="invalid_token", error_description="the access token has been revoked"`,
    );
    assert.equal(upstream.received.length, received, 'the upstream heard nothing of it');
    const event = h.log.findLast((entry) => entry.event === 'token_refused');
    assert.equal(event?.error, 'invalid_grant');
    assert.equal(event?.actor, GATEWAY);
  });

  it('refuses, with 403 saying why, a token the grant will not delegate: one already delegated, past the depth allowed', async () => {
    const person = await personsToken(RESOURCE);
    const exchanged = await postAs(h, '/token', notes, {
      grant_type: TOKEN_EXCHANGE_GRANT_TYPE,
      subject_token: person.access,
      subject_token_type: ACCESS_TOKEN_TYPE,
      resource: GATEWAY,
    });
    const delegated = ((await exchanged.json()) as { access_token: string }).access_token;
    assert.deepEqual(jwtClaims(delegated).act, { sub: notes.client_id });
    const received = upstream.received.length;
    const refused = await call(`Bearer ${delegated}`);
    assert.equal(refused.status, 403);
    assert.equal(refused.headers.get('www-authenticate'), null, 'no challenge: a wider token would not help');
    assert.deepEqual(await refused.json(), {
      error: 'access_denied',
      error_description:
        'the upstream context server cannot be called with this token: the access token is already delegated: a chain of 2 actors is more than this server allows (1)',
    });
    assert.equal(upstream.received.length, received);
  });

  it('answers 503 when the store cannot be reached, and forwards nothing', async () => {
    const person = await personsToken(GATEWAY);
    const received = upstream.received.length;
    outage.on = true;
    let refused: Response;
    try {
      refused = await call(`Bearer ${person.access}`);
    } finally {
      outage.on = false;
    }
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('retry-after'), '5');
    assert.equal(((await refused.json()) as { error: string }).error, 'temporarily_unavailable');
    assert.equal(upstream.received.length, received);
  });

  it('refuses a token for another resource (the grant checks the gateway is its audience)', async () => {
    const person = await personsToken(RESOURCE);
    const result = await h.server.gatewayToken({ subjectToken: person.access, gateway: GATEWAY, audience, maxLifetime: 300 });
    assert.deepEqual(result, { ok: false, defect: { code: 'refused', description: 'the access token is not for this gateway' } });
  });
});
