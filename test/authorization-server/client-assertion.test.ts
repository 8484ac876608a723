/**
 * private_key_jwt (RFC 7523 §2.2): clients that register public keys and authenticate at /token,
 * /revoke and /introspect with a client assertion they sign. Every defect is its own test, each
 * answered with invalid_client and a description that names it without echoing the assertion.
 * Key sets at a jwks_uri are served by a real HTTP server on 127.0.0.1 (the test switch on).
 */
import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient as createClient } from '../../src/authorization-server/clients.js';
import { jwtSigner } from '../../src/core/jwt.js';
import {
  ISSUER,
  basic,
  createHarness,
  expectOAuthError,
  jwtClaims,
  postForm,
  registerClient,
  registerServiceClient,
  type Harness,
  type HarnessOptions,
} from '../helpers/harness.js';

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const CC = { grant_type: 'client_credentials' };
const encode = (part: object): string => Buffer.from(JSON.stringify(part)).toString('base64url');

interface KeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
  jwk: Record<string, unknown>;
}

function keyPair(kid = 'k1'): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { privateKey, publicKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, use: 'sig' } };
}

interface Machine {
  clientId: string;
  keys: KeyPair;
  /** A signed assertion; `claims` overrides or (undefined) removes the defaults. */
  assertion(claims?: Record<string, unknown>, header?: { alg?: string; kid?: string }): string;
}

function machineOf(h: Harness, clientId: string, keys: KeyPair): Machine {
  return {
    clientId,
    keys,
    assertion: (claims = {}, header = {}) => {
      const all: Record<string, unknown> = { iss: clientId, sub: clientId, aud: ISSUER, jti: randomUUID(), iat: h.clock.now, exp: h.clock.now + 60, ...claims };
      for (const [name, value] of Object.entries(all)) if (value === undefined) delete all[name];
      return jwtSigner({ alg: header.alg ?? 'ES256', kid: header.kid ?? 'k1', typ: 'JWT' }, keys.privateKey)(all);
    },
  };
}

/** A client_credentials client with private_key_jwt, created as an operator would. */
async function addMachine(h: Harness, metadata: Record<string, unknown> = {}, keys = keyPair()): Promise<Machine> {
  const valid = validateClientMetadata(
    { token_endpoint_auth_method: 'private_key_jwt', grant_types: ['client_credentials'], jwks: { keys: [keys.jwk] }, ...metadata },
    h.server.metadata.scopes_supported,
    { allowLoopbackJwksUri: true },
  );
  const { client, clientSecret } = await createClient(h.store, valid, h.clock.now, { registeredBy: 'admin', canIntrospect: false });
  assert.equal(clientSecret, undefined, 'a private_key_jwt client gets no secret');
  return machineOf(h, client.clientId, keys);
}

const withAssertion = (assertion: string, extra: Record<string, string> = {}) => ({
  client_assertion_type: ASSERTION_TYPE,
  client_assertion: assertion,
  ...extra,
});

function tokenRequest(h: Harness, assertion: string, extra: Record<string, string> = {}, headers: Record<string, string> = {}): Promise<Response> {
  return postForm(h, '/token', { ...CC, ...withAssertion(assertion, extra) }, headers);
}

/** The description of an invalid_client 401, checked not to hold the assertion's payload. */
async function refusal(response: Response, assertion?: string, status = 401, error = 'invalid_client'): Promise<string> {
  const body = await expectOAuthError(response, status, error);
  if (assertion) {
    for (const part of assertion.split('.')) if (part.length > 8) assert.ok(!JSON.stringify(body).includes(part), 'the assertion is never echoed');
  }
  return body.error_description ?? '';
}

describe('private_key_jwt at the token endpoint', () => {
  it('issues a client_credentials token to a client that proves itself with its key', async () => {
    const h = createHarness();
    const machine = await addMachine(h);
    const response = await tokenRequest(h, machine.assertion());
    assert.equal(response.status, 200, await response.clone().text());
    const body = (await response.json()) as Record<string, unknown>;
    assert.equal(jwtClaims(body.access_token).client_id, machine.clientId);
    assert.equal(body.refresh_token, undefined);
  });

  it('accepts our issuer identifier alone, as a single string, and a client_id equal to the sub', async () => {
    const h = createHarness();
    const machine = await addMachine(h);
    assert.equal((await tokenRequest(h, machine.assertion({ aud: ISSUER }), { client_id: machine.clientId })).status, 200);
    // draft-ietf-oauth-rfc7523bis: the token endpoint URL, or a list, is no longer our name.
    assert.match(
      await refusal(await tokenRequest(h, machine.assertion({ aud: `${ISSUER}/token` }))),
      new RegExp(`aud does not name this authorization server: it must be the issuer identifier ${ISSUER}, as a single string`),
    );
    assert.match(await refusal(await tokenRequest(h, machine.assertion({ aud: [ISSUER] }))), /aud must be a single string, not a list/);
    assert.match(
      await refusal(await tokenRequest(h, machine.assertion({ aud: ['https://elsewhere.example', ISSUER] }))),
      /aud must be a single string, not a list/,
    );
  });

  it('with clientAssertionAudience issuer-or-token-endpoint, also takes the token endpoint URL, never a list naming anyone else', async () => {
    const h = createHarness({ clientAssertionAudience: 'issuer-or-token-endpoint' });
    const machine = await addMachine(h);
    for (const aud of [ISSUER, `${ISSUER}/token`, [ISSUER, `${ISSUER}/token`], [`${ISSUER}/token`]]) {
      assert.equal((await tokenRequest(h, machine.assertion({ aud }))).status, 200, JSON.stringify(aud));
    }
    assert.match(
      await refusal(await tokenRequest(h, machine.assertion({ aud: ['https://elsewhere.example', ISSUER] }))),
      /names another audience beside this authorization server/,
    );
    assert.match(
      await refusal(await tokenRequest(h, machine.assertion({ aud: `${ISSUER}/introspect` }))),
      /must be the issuer identifier .* or the token endpoint URL/,
    );
    assert.throws(
      () => createHarness({ clientAssertionAudience: 'token-endpoint' as 'issuer' }),
      /clientAssertionAudience must be 'issuer' or 'issuer-or-token-endpoint'/,
    );
  });

  // [label, how the assertion is made wrong, what the description says]
  const defects: [string, (m: Machine, h: Harness) => string, RegExp][] = [
    ['a wrong audience', (m) => m.assertion({ aud: 'https://other.example' }), /aud does not name this authorization server/],
    ['another endpoint of ours as audience', (m) => m.assertion({ aud: `${ISSUER}/introspect` }), /aud does not name/],
    ['an expired assertion', (m, h) => m.assertion({ iat: h.clock.now - 600, exp: h.clock.now - 300 }), /has expired/],
    ['no exp', (m) => m.assertion({ exp: undefined }), /has no exp/],
    ['an exp more than five minutes ahead', (m, h) => m.assertion({ iat: undefined, exp: h.clock.now + 3600 }), /lives too long: at most 300 seconds/],
    ['an iat to exp span longer than five minutes', (m, h) => m.assertion({ iat: h.clock.now - 400, exp: h.clock.now + 60 }), /lives too long/],
    ['no jti', (m) => m.assertion({ jti: undefined }), /has no jti/],
    ['an unknown kid', (m) => m.assertion({}, { kid: 'k2' }), /no key .* matches its kid and alg/],
    ['iss different from sub', (m) => m.assertion({ iss: 'someone-else' }), /iss and sub must both be the client_id/],
    ['no sub', (m) => m.assertion({ sub: undefined }), /has no sub/],
    ['a sub that is no client', (m) => m.assertion({ iss: 'no-such-client', sub: 'no-such-client' }), /sub is not a registered client/],
    ['a signature by another key', (m, h) => machineOf(h, m.clientId, keyPair()).assertion(), /signature does not verify/],
    [
      'alg none',
      (m, h) =>
        `${encode({ alg: 'none', typ: 'JWT' })}.${encode({ iss: m.clientId, sub: m.clientId, aud: ISSUER, jti: randomUUID(), exp: h.clock.now + 60 })}.`,
      /unsigned \(alg none is never accepted\)/,
    ],
    [
      'HS256 keyed with the public key (algorithm confusion)',
      (m, h) => {
        const input = `${encode({ alg: 'HS256', kid: 'k1', typ: 'JWT' })}.${encode({ iss: m.clientId, sub: m.clientId, aud: ISSUER, jti: randomUUID(), exp: h.clock.now + 60 })}`;
        const pem = m.keys.publicKey.export({ format: 'pem', type: 'spki' });
        return `${input}.${createHmac('sha256', pem).update(input).digest('base64url')}`;
      },
      /algorithm that is not accepted \(none and HMAC never are\)/,
    ],
    ['a token that is not a JWT', () => 'not-a-jwt', /not a signed JWT/],
  ];
  for (const [label, make, description] of defects) {
    it(`refuses ${label} with invalid_client`, async () => {
      const h = createHarness();
      const machine = await addMachine(h);
      const assertion = make(machine, h);
      const response = await tokenRequest(h, assertion);
      assert.match(await refusal(response, assertion), description);
      assert.ok(!JSON.stringify(h.log).includes(assertion), 'the assertion is never logged');
    });
  }

  it('refuses a replayed assertion: its jti is used once', async () => {
    const h = createHarness();
    const machine = await addMachine(h);
    const assertion = machine.assertion();
    assert.equal((await tokenRequest(h, assertion)).status, 200);
    assert.match(await refusal(await tokenRequest(h, assertion), assertion), /was used before/);
  });

  it('spends the jti only once the signature verified: a forgery cannot burn the real client’s jti', async () => {
    const h = createHarness();
    const machine = await addMachine(h);
    const jti = randomUUID();
    const forged = machineOf(h, machine.clientId, keyPair()).assertion({ jti });
    assert.match(await refusal(await tokenRequest(h, forged)), /signature does not verify/);
    assert.equal((await tokenRequest(h, machine.assertion({ jti }))).status, 200);
  });

  it('refuses a client registered with a secret that presents an assertion', async () => {
    const h = createHarness();
    const secretClient = await registerServiceClient(h);
    const assertion = machineOf(h, secretClient.client_id, keyPair()).assertion();
    assert.match(await refusal(await tokenRequest(h, assertion), assertion), /registered for client_secret_basic, not private_key_jwt/);
  });

  it('refuses a private_key_jwt client that presents a secret, or only its id', async () => {
    const h = createHarness();
    const machine = await addMachine(h);
    assert.match(await refusal(await postForm(h, '/token', CC, { authorization: basic(machine.clientId, 'guess') })), /registered for private_key_jwt/);
    assert.match(await refusal(await postForm(h, '/token', { ...CC, client_id: machine.clientId, client_secret: 'guess' })), /registered for private_key_jwt/);
    assert.match(await refusal(await postForm(h, '/token', { ...CC, client_id: machine.clientId })), /registered for private_key_jwt/);
  });

  it('refuses mixing methods with invalid_request', async () => {
    const h = createHarness();
    const machine = await addMachine(h);
    const secretClient = await registerServiceClient(h);
    const withBasic = await tokenRequest(h, machine.assertion(), {}, { authorization: basic(secretClient.client_id, secretClient.client_secret!) });
    assert.match(await refusal(withBasic, undefined, 400, 'invalid_request'), /one client authentication method/);
    const withSecret = await tokenRequest(h, machine.assertion(), { client_id: secretClient.client_id, client_secret: secretClient.client_secret! });
    assert.match(await refusal(withSecret, undefined, 400, 'invalid_request'), /one client authentication method/);
    const halfOnly = await postForm(h, '/token', { ...CC, client_assertion: machine.assertion() });
    assert.match(await refusal(halfOnly, undefined, 400, 'invalid_request'), /sent together/);
  });

  it('refuses another client_assertion_type, and a client_id that is not the sub', async () => {
    const h = createHarness();
    const machine = await addMachine(h);
    const wrongType = await postForm(h, '/token', { ...CC, client_assertion_type: 'urn:example:other', client_assertion: machine.assertion() });
    assert.match(await refusal(wrongType), /client_assertion_type must be/);
    assert.match(await refusal(await tokenRequest(h, machine.assertion(), { client_id: 'someone-else' })), /client_id does not match/);
  });

  it('holds the client to the signing algorithm it registered', async () => {
    const h = createHarness();
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const keys: KeyPair = { privateKey: rsa.privateKey, publicKey: rsa.publicKey, jwk: { ...rsa.publicKey.export({ format: 'jwk' }), kid: 'k1' } };
    const machine = await addMachine(h, { token_endpoint_auth_signing_alg: 'RS256' }, keys);
    assert.equal((await tokenRequest(h, machine.assertion({}, { alg: 'RS256' }))).status, 200);
    assert.match(await refusal(await tokenRequest(h, machine.assertion({}, { alg: 'PS256' }))), /token_endpoint_auth_signing_alg RS256/);
  });

  it('asks a client with several keys to name one by kid', async () => {
    const h = createHarness();
    const first = keyPair('k1');
    const second = keyPair('k2');
    const machine = await addMachine(h, { jwks: { keys: [first.jwk, second.jwk] } }, second);
    assert.equal((await tokenRequest(h, machine.assertion({}, { kid: 'k2' }))).status, 200);
    const noKid = { ...first.jwk, kid: undefined };
    const unnamed = await addMachine(h, { jwks: { keys: [{ ...noKid }, { ...second.jwk, kid: undefined }] } }, first);
    const header = encode({ alg: 'ES256', typ: 'JWT' });
    const claims = encode({ iss: unnamed.clientId, sub: unnamed.clientId, aud: ISSUER, jti: randomUUID(), exp: h.clock.now + 60 });
    assert.match(await refusal(await tokenRequest(h, `${header}.${claims}.${'A'.repeat(86)}`)), /must name one by kid/);
  });
});

describe('private_key_jwt at /revoke and /introspect', () => {
  it('revokes a token for a client that proves itself with an assertion naming our issuer, and refuses a replay', async () => {
    const h = createHarness();
    const machine = await addMachine(h);
    const { access_token: token } = (await (await tokenRequest(h, machine.assertion())).json()) as { access_token: string };
    assert.match(
      await refusal(await postForm(h, '/revoke', { token, ...withAssertion(machine.assertion({ aud: `${ISSUER}/revoke` })) })),
      /aud does not name this authorization server/,
    );
    const assertion = machine.assertion();
    assert.equal((await postForm(h, '/revoke', { token, ...withAssertion(assertion) })).status, 200);
    assert.match(await refusal(await postForm(h, '/revoke', { token, ...withAssertion(assertion) })), /was used before/);
  });

  it('introspects for a private_key_jwt client, and refuses an expired assertion', async () => {
    const h = createHarness();
    const machine = await addMachine(h);
    const { access_token: token } = (await (await tokenRequest(h, machine.assertion())).json()) as { access_token: string };
    const response = await postForm(h, '/introspect', { token, ...withAssertion(machine.assertion()) });
    assert.equal(response.status, 200);
    const body = (await response.json()) as Record<string, unknown>;
    assert.equal(body.active, true);
    assert.equal(body.client_id, machine.clientId);
    const expired = machine.assertion({ iat: h.clock.now - 600, exp: h.clock.now - 300 });
    assert.match(await refusal(await postForm(h, '/introspect', { token, ...withAssertion(expired) }), expired), /has expired/);
  });
});

describe('private_key_jwt with a jwks_uri', () => {
  let server: http.Server;
  let base: string;
  let fetches = 0;
  let served: Record<string, unknown> = { keys: [] };

  before(async () => {
    server = http.createServer((_req, res) => {
      fetches++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(served));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const harness = (options: HarnessOptions = {}) => createHarness({ clientJwks: { allowLoopbackHttp: true }, ...options });

  it('fetches the key set once and uses it from the cache for the next assertion', async () => {
    const h = harness();
    const keys = keyPair();
    served = { keys: [keys.jwk] };
    fetches = 0;
    const machine = await addMachine(h, { jwks: undefined, jwks_uri: `${base}/jwks` }, keys);
    assert.equal((await tokenRequest(h, machine.assertion())).status, 200);
    assert.equal((await tokenRequest(h, machine.assertion())).status, 200);
    assert.equal(fetches, 1, 'the second assertion does not refetch');
  });

  it('refuses a jwks_uri at a private address without connecting, and logs why', async () => {
    let connections = 0;
    const request = ((..._args: unknown[]) => {
      connections++;
      throw new Error('no connection may be attempted');
    }) as unknown as typeof http.request;
    const h = createHarness({ clientJwks: { request } });
    const machine = await addMachine(h, { jwks: undefined, jwks_uri: 'https://10.0.0.1/jwks' });
    const assertion = machine.assertion();
    assert.match(await refusal(await tokenRequest(h, assertion), assertion), /client's keys could not be fetched/);
    assert.equal(connections, 0);
    const logged = h.log.find((event) => event.event === 'client_jwks_failed');
    assert.match(String(logged?.cause), /non-public address/);
    assert.ok(!JSON.stringify(h.log).includes(assertion), 'the assertion is never logged');
  });
});

describe('registering a private_key_jwt client', () => {
  const keys = keyPair();
  const VALID = { token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [keys.jwk] } };

  it('registers with jwks, echoes the metadata and hands out no secret', async () => {
    const h = createHarness();
    const client = await registerClient(h, VALID);
    assert.equal(client.client_secret, undefined);
    assert.equal(client.token_endpoint_auth_method, 'private_key_jwt');
    assert.deepEqual(client.jwks, { keys: [keys.jwk] });
  });

  it('registers with an https jwks_uri and a signing algorithm we verify', async () => {
    const h = createHarness();
    const client = await registerClient(h, {
      token_endpoint_auth_method: 'private_key_jwt',
      jwks_uri: 'https://robot.example/jwks.json',
      token_endpoint_auth_signing_alg: 'ES256',
    });
    assert.equal(client.jwks_uri, 'https://robot.example/jwks.json');
    assert.equal(client.token_endpoint_auth_signing_alg, 'ES256');
  });

  it('leaves out the keys of a client that authenticates with a secret: kept unused, they would read as if they counted', async () => {
    const h = createHarness();
    const client = await registerClient(h, { token_endpoint_auth_method: 'client_secret_basic', jwks: { keys: [keys.jwk] } });
    assert.equal(client.token_endpoint_auth_method, 'client_secret_basic');
    assert.equal(client.jwks, undefined);
    assert.equal((await h.store.getClient(client.client_id))?.metadata.jwks, undefined);
  });

  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const refused: [string, Record<string, unknown>, RegExp][] = [
    ['no keys', { token_endpoint_auth_method: 'private_key_jwt' }, /exactly one of jwks and jwks_uri/],
    ['both jwks and jwks_uri', { ...VALID, jwks_uri: 'https://robot.example/jwks.json' }, /exactly one of jwks and jwks_uri/],
    ['a private key', { ...VALID, jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'k1' }] } }, /private member d/],
    ['a symmetric key', { ...VALID, jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0', kid: 'k1' }] } }, /symmetric \(kty oct\)/],
    ['jwks without keys', { ...VALID, jwks: { keys: 'x' } }, /JSON Web Key Set/],
    ['an unreadable key', { ...VALID, jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'bad' }] } }, /not a public key/],
    ['an http jwks_uri', { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'http://127.0.0.1:1/jwks' }, /jwks_uri must be an https URL/],
    ['signing alg HS256', { ...VALID, token_endpoint_auth_signing_alg: 'HS256' }, /token_endpoint_auth_signing_alg must be an asymmetric algorithm/],
    ['signing alg none', { ...VALID, token_endpoint_auth_signing_alg: 'none' }, /token_endpoint_auth_signing_alg must be/],
  ];
  for (const [label, metadata, description] of refused) {
    it(`refuses ${label}`, async () => {
      const h = createHarness();
      const response = await h.request('/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Robot', redirect_uris: ['http://127.0.0.1:33333/callback'], ...metadata }),
      });
      const body = await expectOAuthError(response, 400, 'invalid_client_metadata');
      assert.match(body.error_description ?? '', description);
    });
  }
});
