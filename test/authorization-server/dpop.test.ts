/**
 * DPoP (RFC 9449) at the token endpoint: every grant binds its access token to the proof's key
 * (cnf.jkt, token_type DPoP); codes bound by dpop_jkt and public clients' refresh tokens are
 * redeemed only with a proof of their key; every defect of a proof is refused with
 * invalid_dpop_proof naming it, before anything is spent; nonces when the operator asks for them.
 */
import assert from 'node:assert/strict';
import { createPrivateKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient as createClient } from '../../src/authorization-server/clients.js';
import { DPOP_SIGNING_ALGORITHMS, dpopProofSigner, generateDpopKeyPair } from '../../src/core/dpop.js';
import { jwtSigner } from '../../src/core/jwt.js';
import { JWT_BEARER_GRANT_TYPE } from '../../src/core/protocol.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { FullStore, Store } from '../../src/store/store.js';
import { hashSecret } from '../../src/core/secrets.js';
import { withoutCapabilities } from '../helpers/core-store.js';
import { startPostgres } from '../helpers/postgres.js';
import { startTestIssuer } from '../helpers/enterprise-idp.js';
import {
  addResourceServer,
  addUser,
  authorizationRequest,
  authorizeUrl,
  Browser,
  completeInteraction,
  createHarness,
  expectOAuthError,
  introspect,
  ISSUER,
  jwtClaims,
  postForm,
  REDIRECT_URI,
  registerClient,
  registerServiceClient,
  RESOURCE,
  REVISIONS,
  type Harness,
  type HarnessOptions,
  type TestClient,
} from '../helpers/harness.js';
import { POSTGRES } from '../helpers/stores.js';

const TOKEN_URL = `${ISSUER}/token`;
type Signer = ReturnType<typeof dpopProofSigner>;
const newKey = (): Signer => dpopProofSigner(generateDpopKeyPair());

/** A proof for a token request to `h`, made now by its clock. */
function proofFor(h: Harness, key: Signer, options: { nonce?: string; url?: string; method?: string; now?: number } = {}): string {
  return key.sign({
    method: options.method ?? 'POST',
    url: options.url ?? TOKEN_URL,
    now: options.now ?? h.clock.now,
    ...(options.nonce ? { nonce: options.nonce } : {}),
  });
}

/** POST /token as `client` (its own authentication), with `dpop` as the DPoP header when given. */
function tokenRequest(h: Harness, client: TestClient, values: Record<string, string | undefined>, dpop?: string): Promise<Response> {
  const method = client.token_endpoint_auth_method;
  const headers: Record<string, string> = dpop === undefined ? {} : { dpop };
  if (method === 'client_secret_basic') {
    headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret!)}`).toString('base64')}`;
    return postForm(h, '/token', values, headers);
  }
  return postForm(
    h,
    '/token',
    { client_id: client.client_id, ...(method === 'client_secret_post' ? { client_secret: client.client_secret } : {}), ...values },
    headers,
  );
}

/** A code for `client`, approved by alice; `dpopJkt` binds it (RFC 9449 §10). */
async function codeFor(h: Harness, client: TestClient, dpopJkt?: string): Promise<{ code: string; verifier: string }> {
  const existing = await h.store.getUser({ username: 'alice' });
  const user = existing ? { username: 'alice', password: 'correct horse battery' } : await addUser(h);
  const { params, verifier } = authorizationRequest(client, REVISIONS[0], { dpop_jkt: dpopJkt });
  const browser = new Browser(h);
  const { location } = await completeInteraction(browser, await browser.fetch(authorizeUrl(params)), { user });
  const code = location.searchParams.get('code');
  if (!code) throw new Error(`no code: ${location}`);
  return { code, verifier };
}

function redeem(h: Harness, client: TestClient, code: { code: string; verifier: string }, dpop?: string): Promise<Response> {
  return tokenRequest(h, client, { grant_type: 'authorization_code', code: code.code, code_verifier: code.verifier, redirect_uri: REDIRECT_URI }, dpop);
}

function refresh(h: Harness, client: TestClient, refreshToken: string, dpop?: string): Promise<Response> {
  return tokenRequest(h, client, { grant_type: 'refresh_token', refresh_token: refreshToken }, dpop);
}

async function ok(response: Response): Promise<Record<string, string>> {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return JSON.parse(text) as Record<string, string>;
}

/** Asserts the answer is bound to `key`: token_type DPoP and cnf.jkt in the access token. */
function assertBound(body: Record<string, string>, key: Signer): void {
  assert.equal(body.token_type, 'DPoP');
  assert.deepEqual(jwtClaims(body.access_token).cnf, { jkt: key.jkt });
}

async function refusedProof(response: Response, pattern: RegExp, error = 'invalid_dpop_proof'): Promise<void> {
  const body = await expectOAuthError(response, 400, error);
  assert.match(body.error_description ?? '', pattern);
}

/** A confidential browser client (client_secret_basic) with refresh tokens. */
function confidentialClient(h: Harness): Promise<TestClient> {
  return registerClient(h, { token_endpoint_auth_method: 'client_secret_basic' });
}

describe('DPoP at the token endpoint — metadata', () => {
  it('publishes dpop_signing_alg_values_supported: the asymmetric algorithms proofs are checked with', async () => {
    const h = createHarness();
    const metadata = (await (await h.request('/.well-known/oauth-authorization-server')).json()) as Record<string, unknown>;
    assert.deepEqual(metadata.dpop_signing_alg_values_supported, [...DPOP_SIGNING_ALGORITHMS]);
    assert.ok(!(metadata.dpop_signing_alg_values_supported as string[]).some((alg) => alg === 'none' || alg.startsWith('HS')));
  });

  it('lets browsers send DPoP and read DPoP-Nonce (CORS)', async () => {
    const h = createHarness();
    const preflight = await h.request('/token', { method: 'OPTIONS' });
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /\bDPoP\b/);
    assert.match(preflight.headers.get('access-control-expose-headers') ?? '', /\bDPoP-Nonce\b/);
  });
});

describe("DPoP at the token endpoint — every grant binds its access token to the proof's key", () => {
  it('authorization_code (public client): DPoP token, cnf.jkt, and a refresh token bound to the key', async () => {
    const h = createHarness();
    const client = await registerClient(h);
    const key = newKey();
    const body = await ok(await redeem(h, client, await codeFor(h, client), proofFor(h, key)));
    assertBound(body, key);
    assert.ok(body.refresh_token!.endsWith(`.${key.jkt}`), "a public client's refresh token carries the key it is bound to");
  });

  it('without a proof, nothing changes: Bearer, no cnf, a plain refresh token', async () => {
    const h = createHarness();
    const client = await registerClient(h);
    const body = await ok(await redeem(h, client, await codeFor(h, client)));
    assert.equal(body.token_type, 'Bearer');
    assert.equal(jwtClaims(body.access_token).cnf, undefined);
    assert.ok(!body.refresh_token!.includes('.'));
  });

  it('refresh_token (public client): the new pair stays bound to the same key', async () => {
    const h = createHarness();
    const client = await registerClient(h);
    const key = newKey();
    const first = await ok(await redeem(h, client, await codeFor(h, client), proofFor(h, key)));
    const second = await ok(await refresh(h, client, first.refresh_token!, proofFor(h, key)));
    assertBound(second, key);
    assert.ok(second.refresh_token!.endsWith(`.${key.jkt}`), 'the binding is kept on rotation');
    assert.notEqual(second.refresh_token, first.refresh_token);
  });

  it("refresh_token (confidential client): the refresh token is not bound; each access token is bound to its request's proof", async () => {
    const h = createHarness();
    const client = await confidentialClient(h);
    const [one, two] = [newKey(), newKey()];
    const first = await ok(await redeem(h, client, await codeFor(h, client), proofFor(h, one)));
    assertBound(first, one);
    assert.ok(!first.refresh_token!.includes('.'), "a confidential client's refresh token is sender-constrained by its authentication already");
    const second = await ok(await refresh(h, client, first.refresh_token!, proofFor(h, two)));
    assertBound(second, two);
    const third = await ok(await refresh(h, client, second.refresh_token!));
    assert.equal(third.token_type, 'Bearer');
  });

  it('client_credentials', async () => {
    const h = createHarness();
    const client = await registerServiceClient(h);
    const key = newKey();
    assertBound(await ok(await tokenRequest(h, client, { grant_type: 'client_credentials' }, proofFor(h, key))), key);
  });

  it('jwt-bearer (an ID-JAG from a trusted identity provider)', async () => {
    const idp = await startTestIssuer();
    try {
      const h = createHarness({ trustedIdps: [idp.issuer], allowInsecureIssuers: true });
      const valid = validateClientMetadata(
        { token_endpoint_auth_method: 'client_secret_basic', grant_types: [JWT_BEARER_GRANT_TYPE] },
        h.server.metadata.scopes_supported,
      );
      const { client: record, clientSecret } = await createClient(h.store, valid, h.clock.now, { registeredBy: 'admin' });
      const client: TestClient = { client_id: record.clientId, client_secret: clientSecret!, token_endpoint_auth_method: 'client_secret_basic' };
      const assertion = await idp.sign(
        {
          iss: idp.issuer,
          sub: 'employee-1',
          aud: ISSUER,
          resource: RESOURCE,
          client_id: client.client_id,
          jti: 'jag-dpop',
          iat: h.clock.now,
          exp: h.clock.now + 300,
          scope: 'mcp:tools',
        },
        { typ: 'oauth-id-jag+jwt' },
      );
      const key = newKey();
      assertBound(await ok(await tokenRequest(h, client, { grant_type: JWT_BEARER_GRANT_TYPE, assertion }, proofFor(h, key))), key);
    } finally {
      await idp.close();
    }
  });

  it('introspection describes a bound token with its cnf and token_type DPoP', async () => {
    const h = createHarness();
    const client = await registerClient(h);
    const rs = await addResourceServer(h);
    const key = newKey();
    const bound = await ok(await redeem(h, client, await codeFor(h, client), proofFor(h, key)));
    const described = await introspect(h, bound.access_token, rs);
    assert.equal(described.active, true);
    assert.equal(described.token_type, 'DPoP');
    assert.deepEqual(described.cnf, { jkt: key.jkt });
    const plain = await ok(await redeem(h, client, await codeFor(h, client)));
    const plainDescribed = await introspect(h, plain.access_token, rs);
    assert.equal(plainDescribed.token_type, 'Bearer');
    assert.equal(plainDescribed.cnf, undefined);
  });
});

describe('DPoP at the token endpoint — defects of a proof are refused, naming them', () => {
  async function setup(options: HarnessOptions = {}): Promise<{ h: Harness; client: TestClient }> {
    const h = createHarness(options);
    return { h, client: await registerServiceClient(h) };
  }
  const grant = { grant_type: 'client_credentials' };

  it('a proof for another URL (htu)', async () => {
    const { h, client } = await setup();
    await refusedProof(await tokenRequest(h, client, grant, proofFor(h, newKey(), { url: `${ISSUER}/other` })), /htu/);
  });

  it('a proof for another method (htm)', async () => {
    const { h, client } = await setup();
    await refusedProof(await tokenRequest(h, client, grant, proofFor(h, newKey(), { method: 'GET' })), /htm/);
  });

  it('a stale proof (iat too old) and one from the future', async () => {
    const { h, client } = await setup();
    await refusedProof(await tokenRequest(h, client, grant, proofFor(h, newKey(), { now: h.clock.now - 600 })), /too old/);
    await refusedProof(await tokenRequest(h, client, grant, proofFor(h, newKey(), { now: h.clock.now + 600 })), /future/);
  });

  it('a replayed proof (the same jti twice)', async () => {
    const { h, client } = await setup();
    const proof = proofFor(h, newKey());
    await ok(await tokenRequest(h, client, grant, proof));
    await refusedProof(await tokenRequest(h, client, grant, proof), /already used/);
  });

  it('a proof whose jwk carries the private key', async () => {
    const { h, client } = await setup();
    const pair = generateDpopKeyPair();
    const sign = jwtSigner(
      { alg: 'ES256', typ: 'dpop+jwt', jwk: pair.privateJwk as Record<string, unknown> },
      createPrivateKey({ key: pair.privateJwk, format: 'jwk' }),
    );
    const leaky = sign({ jti: 'leaky-1', htm: 'POST', htu: TOKEN_URL, iat: h.clock.now });
    await refusedProof(await tokenRequest(h, client, grant, leaky), /private key/);
  });

  it('an RSA key with an exponent other than 65537 (a 3071-bit one: milliseconds a check), or of more than 4096 bits', async () => {
    const { h, client } = await setup();
    const random = (bytes: number, top: number) => {
      const value = randomBytes(bytes);
      value[0] = top;
      value[bytes - 1]! |= 1;
      return value.toString('base64url');
    };
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const claims = encode({ jti: 'rsa-1', htm: 'POST', htu: TOKEN_URL, iat: h.clock.now });
    const signature = randomBytes(384).toString('base64url');
    const huge = encode({ typ: 'dpop+jwt', alg: 'RS256', jwk: { kty: 'RSA', n: random(384, 0x80), e: random(384, 0x40) } });
    await refusedProof(await tokenRequest(h, client, grant, `${huge}.${claims}.${signature}`), /RSA key whose exponent is not 65537/);
    const long = encode({ typ: 'dpop+jwt', alg: 'RS256', jwk: { kty: 'RSA', n: random(1024, 0x80), e: 'AQAB' } });
    await refusedProof(await tokenRequest(h, client, grant, `${long}.${claims}.${signature}`), /8192-bit RSA key/);
    const rsa = dpopProofSigner(generateDpopKeyPair('RS256'));
    assertBound(await ok(await tokenRequest(h, client, grant, proofFor(h, rsa))), rsa);
  });

  it('alg none (an unsigned proof)', async () => {
    const { h, client } = await setup();
    const pair = generateDpopKeyPair();
    const { kty, crv, x, y } = pair.publicJwk as Record<string, string>;
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${encode({ typ: 'dpop+jwt', alg: 'none', jwk: { kty, crv, x, y } })}.${encode({ jti: 'x1', htm: 'POST', htu: TOKEN_URL, iat: h.clock.now })}.AAAA`;
    await refusedProof(await tokenRequest(h, client, grant, unsigned), /alg is not an asymmetric algorithm/);
  });

  it('two DPoP headers', async () => {
    const { h, client } = await setup();
    const key = newKey();
    const headers = new Headers({
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
    });
    headers.append('dpop', proofFor(h, key));
    headers.append('dpop', proofFor(h, key));
    await refusedProof(await h.request('/token', { method: 'POST', headers, body: 'grant_type=client_credentials' }), /more than one/);
  });

  it('no proof from a client registered with dpop_bound_access_tokens (RFC 9449 §5.2)', async () => {
    const h = createHarness();
    const client = await registerServiceClient(h, 'client_secret_basic', { dpop_bound_access_tokens: true });
    await refusedProof(await tokenRequest(h, client, grant), /dpop_bound_access_tokens/);
    const key = newKey();
    assertBound(await ok(await tokenRequest(h, client, grant, proofFor(h, key))), key);
  });
});

describe('DPoP at the token endpoint — codes bound by dpop_jkt (RFC 9449 §10)', () => {
  it('are redeemed with a proof of that key only; a missing proof or another key burns nothing', async () => {
    const h = createHarness();
    const client = await registerClient(h);
    const key = newKey();
    const code = await codeFor(h, client, key.jkt);
    assert.ok(code.code.endsWith(`.${key.jkt}`));
    await refusedProof(await redeem(h, client, code), /authorization code is bound/);
    await refusedProof(await redeem(h, client, code, proofFor(h, newKey())), /not made with the key the authorization code is bound to/);
    assertBound(await ok(await redeem(h, client, code, proofFor(h, key))), key);
  });

  it('a code whose thumbprint suffix is changed or dropped is no code at all', async () => {
    const h = createHarness();
    const client = await registerClient(h);
    const [key, thief] = [newKey(), newKey()];
    const code = await codeFor(h, client, key.jkt);
    const random = code.code.slice(0, code.code.lastIndexOf('.'));
    await expectOAuthError(await redeem(h, client, { ...code, code: `${random}.${thief.jkt}` }, proofFor(h, thief)), 400, 'invalid_grant');
    await expectOAuthError(await redeem(h, client, { ...code, code: random }), 400, 'invalid_grant');
  });

  it('a dpop_jkt that is not a thumbprint is refused at /authorize', async () => {
    const h = createHarness();
    const client = await registerClient(h);
    const { params } = authorizationRequest(client, REVISIONS[0], { dpop_jkt: 'not-a-thumbprint' });
    const response = await h.request(authorizeUrl(params));
    assert.equal(response.status, 303);
    const location = new URL(response.headers.get('location')!);
    assert.equal(location.searchParams.get('error'), 'invalid_request');
    assert.match(location.searchParams.get('error_description') ?? '', /dpop_jkt/);
  });
});

describe("DPoP at the token endpoint — public clients' bound refresh tokens", () => {
  async function boundPair(h: Harness): Promise<{ client: TestClient; key: Signer; tokens: Record<string, string> }> {
    const client = await registerClient(h);
    const key = newKey();
    return { client, key, tokens: await ok(await redeem(h, client, await codeFor(h, client), proofFor(h, key))) };
  }

  it('used without a proof (a downgrade to Bearer) or with another key: refused, and nothing spent', async () => {
    const h = createHarness();
    const { client, key, tokens } = await boundPair(h);
    await refusedProof(await refresh(h, client, tokens.refresh_token!), /refresh token is bound/);
    await refusedProof(await refresh(h, client, tokens.refresh_token!, proofFor(h, newKey())), /not made with the key the refresh token is bound to/);
    assertBound(await ok(await refresh(h, client, tokens.refresh_token!, proofFor(h, key))), key);
  });

  it('the retry of a refresh needs the key too, and gets the same bound token', async () => {
    const h = createHarness();
    const { client, key, tokens } = await boundPair(h);
    const lost = await ok(await refresh(h, client, tokens.refresh_token!, proofFor(h, key)));
    h.clock.now += 5;
    // The rotated token again, within the retry window, its successor unused: a retry, but only with the key.
    await refusedProof(await refresh(h, client, tokens.refresh_token!), /refresh token is bound/);
    await refusedProof(await refresh(h, client, tokens.refresh_token!, proofFor(h, newKey())), /not made with the key the refresh token is bound to/);
    const retried = await ok(await refresh(h, client, tokens.refresh_token!, proofFor(h, key)));
    assertBound(retried, key);
    assert.equal(retried.refresh_token, lost.refresh_token);
    assert.ok(retried.refresh_token!.endsWith(`.${key.jkt}`));
  });

  it("an unbound token refreshed with a key's proof: a retry that binds otherwise names another token, and is a reuse", async () => {
    for (const retryProof of ['none', 'another key'] as const) {
      const h = createHarness();
      const client = await registerClient(h);
      const key = newKey();
      const unbound = await ok(await redeem(h, client, await codeFor(h, client)));
      const bound = await ok(await refresh(h, client, unbound.refresh_token!, proofFor(h, key)));
      assert.ok(bound.refresh_token!.endsWith(`.${key.jkt}`), 'bound from the refresh on');
      const body = await expectOAuthError(
        await refresh(h, client, unbound.refresh_token!, retryProof === 'none' ? undefined : proofFor(h, newKey())),
        400,
        'invalid_grant',
      );
      assert.match(body.error_description ?? '', /already used; the grant is revoked/, retryProof);
      await expectOAuthError(await refresh(h, client, bound.refresh_token!, proofFor(h, key)), 400, 'invalid_grant');
    }
  });
});

describe('DPoP at the token endpoint — nonces (RFC 9449 §8)', () => {
  it('off by default: a proof without a nonce is taken and no DPoP-Nonce is sent', async () => {
    const h = createHarness();
    const client = await registerServiceClient(h);
    const response = await tokenRequest(h, client, { grant_type: 'client_credentials' }, proofFor(h, newKey()));
    assert.equal(response.headers.get('dpop-nonce'), null);
    await ok(response);
  });

  it('on: no nonce → use_dpop_nonce with one; with it → tokens and the next nonce; a stale one → use_dpop_nonce again', async () => {
    const h = createHarness({ dpop: { nonce: true } });
    const client = await registerServiceClient(h);
    const key = newKey();
    const grant = { grant_type: 'client_credentials' };
    const challenge = await tokenRequest(h, client, grant, proofFor(h, key));
    const nonce = challenge.headers.get('dpop-nonce');
    assert.ok(nonce, 'the challenge carries a nonce');
    await refusedProof(challenge, /nonce/, 'use_dpop_nonce');

    const answer = await tokenRequest(h, client, grant, proofFor(h, key, { nonce }));
    assert.ok(answer.headers.get('dpop-nonce'), 'a success gives the nonce for the next proof');
    assertBound(await ok(answer), key);

    await refusedProof(await tokenRequest(h, client, grant, proofFor(h, key, { nonce: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' })), /nonce/, 'use_dpop_nonce');
    h.clock.now += 600;
    const stale = await tokenRequest(h, client, grant, proofFor(h, key, { nonce }));
    assert.ok(stale.headers.get('dpop-nonce'));
    assert.notEqual(stale.headers.get('dpop-nonce'), nonce);
    await refusedProof(stale, /nonce/, 'use_dpop_nonce');
  });

  it('a nonce challenge burns no code', async () => {
    const h = createHarness({ dpop: { nonce: true } });
    const client = await registerClient(h);
    const key = newKey();
    const code = await codeFor(h, client, key.jkt);
    const challenge = await redeem(h, client, code, proofFor(h, key));
    const nonce = challenge.headers.get('dpop-nonce')!;
    await refusedProof(challenge, /nonce/, 'use_dpop_nonce');
    assertBound(await ok(await redeem(h, client, code, proofFor(h, key, { nonce }))), key);
  });

  it('a nonce challenge comes before the client authenticates: a client assertion sent with it is not spent, and the retry may carry it again', async () => {
    const h = createHarness({ dpop: { nonce: true } });
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const valid = validateClientMetadata(
      {
        token_endpoint_auth_method: 'private_key_jwt',
        grant_types: ['client_credentials'],
        jwks: { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1' }] },
      },
      h.server.metadata.scopes_supported,
    );
    const { client } = await createClient(h.store, valid, h.clock.now, { registeredBy: 'admin' });
    const assertion = jwtSigner(
      { alg: 'ES256', kid: 'k1', typ: 'JWT' },
      privateKey,
    )({ iss: client.clientId, sub: client.clientId, aud: ISSUER, jti: 'once', iat: h.clock.now, exp: h.clock.now + 60 });
    const send = (dpop: string) =>
      postForm(
        h,
        '/token',
        { grant_type: 'client_credentials', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion },
        { dpop },
      );
    const key = newKey();
    const challenge = await send(proofFor(h, key));
    const nonce = challenge.headers.get('dpop-nonce')!;
    await refusedProof(challenge, /nonce/, 'use_dpop_nonce');
    assertBound(await ok(await send(proofFor(h, key, { nonce }))), key);
    const again = await expectOAuthError(await send(proofFor(h, key, { nonce })), 401, 'invalid_client');
    assert.match(again.error_description ?? '', /used before/, 'the assertion is spent by the request that got the token');
  });

  it('a nonce one server gives is taken by another server on the same store', async () => {
    const store = createMemoryStore();
    const one = createHarness({ store, dpop: { nonce: true } });
    const two = createHarness({ store, dpop: { nonce: true } });
    const client = await registerServiceClient(one);
    const key = newKey();
    const grant = { grant_type: 'client_credentials' };
    const nonce = (await tokenRequest(one, client, grant, proofFor(one, key))).headers.get('dpop-nonce')!;
    assertBound(await ok(await tokenRequest(two, client, grant, proofFor(two, key, { nonce }))), key);
    // A server on another store (another signing key) does not take it.
    const stranger = createHarness({ dpop: { nonce: true } });
    const strangerClient = await registerServiceClient(stranger);
    await refusedProof(await tokenRequest(stranger, strangerClient, grant, proofFor(stranger, key, { nonce })), /nonce/, 'use_dpop_nonce');
  });
});

describe('DPoP at the token endpoint — replay records', () => {
  it('PostgreSQL: a proof used at one replica is refused at another on the same database', async () => {
    const opened = await POSTGRES.open();
    try {
      const one = createHarness({ store: opened.store });
      const two = createHarness({ store: opened.store });
      const client = await registerServiceClient(one);
      const proof = proofFor(one, newKey());
      await ok(await tokenRequest(one, client, { grant_type: 'client_credentials' }, proof));
      await refusedProof(await tokenRequest(two, client, { grant_type: 'client_credentials' }, proof), /already used/);
    } finally {
      await opened.close();
    }
  });

  it('SQLite: a proof used before a restart is refused after it (the record is in the file)', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'ca-dpop-restart-'));
    const path = join(folder, 'store.db');
    try {
      const first = openSqliteStore({ path });
      const before = createHarness({ store: first });
      const client = await registerServiceClient(before);
      const proof = proofFor(before, newKey());
      await ok(await tokenRequest(before, client, { grant_type: 'client_credentials' }, proof));
      await first.close();

      const second = openSqliteStore({ path });
      try {
        const after = createHarness({ store: second });
        await refusedProof(await tokenRequest(after, client, { grant_type: 'client_credentials' }, proof), /already used/);
        await ok(await tokenRequest(after, client, { grant_type: 'client_credentials' }, proofFor(after, newKey())));
      } finally {
        await second.close();
      }
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('a request whose client does not authenticate gets invalid_client: its proof is neither checked nor recorded', async () => {
    const h = createHarness();
    const client = await registerServiceClient(h);
    const impostor: TestClient = { ...client, client_secret: 'not the secret' };
    const grant = { grant_type: 'client_credentials' };
    await expectOAuthError(await tokenRequest(h, impostor, grant, proofFor(h, newKey(), { url: `${ISSUER}/other` })), 401, 'invalid_client');
    const key = newKey();
    const proof = proofFor(h, key);
    for (let i = 0; i < 3; i++) await expectOAuthError(await tokenRequest(h, impostor, grant, proof), 401, 'invalid_client');
    assertBound(await ok(await tokenRequest(h, client, grant, proof)), key);
    await refusedProof(await tokenRequest(h, client, grant, proof), /already used/);
  });

  it("a public client's replayed proof is refused before it spends a code or a refresh token", async () => {
    const h = createHarness();
    const client = await registerClient(h);
    const key = newKey();
    const redeemed = proofFor(h, key);
    const first = await ok(await redeem(h, client, await codeFor(h, client), redeemed));
    const code = await codeFor(h, client);
    await refusedProof(await redeem(h, client, code, redeemed), /already used/);
    assertBound(await ok(await redeem(h, client, code, proofFor(h, key))), key);
    const proof = proofFor(h, key);
    const second = await ok(await refresh(h, client, first.refresh_token!, proof));
    h.clock.now += 5;
    // Within the retry window the spent token, its successor unused, would be taken as a retry.
    await refusedProof(await refresh(h, client, first.refresh_token!, proof), /already used/);
    assertBound(await ok(await refresh(h, client, second.refresh_token!, proofFor(h, key))), key);
  });

  describe("a refresh's proof, spent in the transaction that rotates the token", () => {
    /** The store with the names of its calls that spend a proof or a refresh token noted in `calls`. */
    function noting(store: Store, calls: string[]): Store {
      const noted = Object.create(store) as Record<string, unknown>;
      for (const method of ['useAssertionId', 'refreshGrant', 'refreshGrantWithAssertion'] as const) {
        const original = (store as unknown as Record<string, ((...args: unknown[]) => unknown) | undefined>)[method];
        if (original) noted[method] = (...args: unknown[]) => (calls.push(method), original.apply(store, args));
      }
      return noted as unknown as Store;
    }

    /** A public client with a refresh token bound to `key`. */
    async function boundToken(h: Harness, client: TestClient, key: Signer): Promise<string> {
      return (await ok(await redeem(h, client, await codeFor(h, client), proofFor(h, key)))).refresh_token!;
    }

    it('one store call, one commit: the record is kept with the rotation, not apart', async () => {
      const calls: string[] = [];
      const h = createHarness({ serverStore: (store) => noting(store, calls) });
      const client = await registerClient(h);
      const key = newKey();
      const token = await boundToken(h, client, key);
      calls.length = 0;
      const proof = proofFor(h, key);
      const refreshed = await ok(await refresh(h, client, token, proof));
      assert.deepEqual(calls, ['refreshGrantWithAssertion']);
      await refusedProof(await refresh(h, client, refreshed.refresh_token!, proof), /already used/);
      assert.deepEqual(await h.store.getRefreshToken(hashSecret(refreshed.refresh_token!)).then((t) => t !== undefined), true, 'the replay spent nothing');
    });

    it('a store without refreshGrantWithAssertion records the proof first, as before: the same refusals', async () => {
      const calls: string[] = [];
      const h = createHarness({ serverStore: (store) => noting(withoutCapabilities(store, ['refreshWithAssertion']), calls) });
      const client = await registerClient(h);
      const key = newKey();
      const token = await boundToken(h, client, key);
      calls.length = 0;
      const proof = proofFor(h, key);
      const refreshed = await ok(await refresh(h, client, token, proof));
      assert.deepEqual(calls, ['useAssertionId', 'refreshGrant']);
      await refusedProof(await refresh(h, client, refreshed.refresh_token!, proof), /already used/);
      assertBound(await ok(await refresh(h, client, refreshed.refresh_token!, proofFor(h, key))), key);
    });

    for (const capable of [true, false]) {
      it(`a proof sent with a refresh that was refused is spent all the same: sent again with a good token, it is refused${capable ? '' : ' (a store without refreshGrantWithAssertion)'}`, async () => {
        const h = createHarness(capable ? {} : { serverStore: (store) => withoutCapabilities(store, ['refreshWithAssertion']) });
        const client = await registerClient(h);
        const key = newKey();
        const good = await boundToken(h, client, key);
        const refusals: Array<[string, Record<string, string>, string, RegExp]> = [
          ['a token the store does not know', { refresh_token: `${'x'.repeat(43)}.${key.jkt}` }, 'invalid_grant', /invalid/],
          ['a scope wider than granted (refused before the store is asked)', { refresh_token: good, scope: 'mcp:tools mcp:admin' }, 'invalid_scope', /narrow/],
          ['no refresh token at all', {}, 'invalid_request', /refresh_token is required/],
        ];
        for (const [what, values, error, pattern] of refusals) {
          const proof = proofFor(h, key);
          const body = await expectOAuthError(await tokenRequest(h, client, { grant_type: 'refresh_token', ...values }, proof), 400, error);
          assert.match(body.error_description ?? '', pattern, what);
          await refusedProof(await refresh(h, client, good, proof), /already used/);
        }
        assertBound(await ok(await refresh(h, client, good, proofFor(h, key))), key);
      });
    }

    const replicas: Array<[string, () => Promise<{ stores: [FullStore, FullStore]; close(): Promise<void> }>]> = [
      [
        'SQLite (two connections to one file, as two processes have)',
        async () => {
          const folder = mkdtempSync(join(tmpdir(), 'ca-dpop-replicas-'));
          const stores: [FullStore, FullStore] = [openSqliteStore({ path: join(folder, 'store.db') }), openSqliteStore({ path: join(folder, 'store.db') })];
          return {
            stores,
            close: async () => {
              await Promise.all(stores.map((store) => store.close()));
              rmSync(folder, { recursive: true, force: true });
            },
          };
        },
      ],
      [
        'PostgreSQL (two stores on one database)',
        async () => {
          const database = await startPostgres();
          const stores: [FullStore, FullStore] = [
            await openPostgresStore({ connectionString: database.connectionString }),
            await openPostgresStore({ connectionString: database.connectionString }),
          ];
          return {
            stores,
            close: async () => {
              await Promise.all(stores.map((store) => store.close()));
              await database.stop();
            },
          };
        },
      ],
    ];
    for (const [kind, open] of replicas) {
      it(`${kind}: a proof used at one replica is refused at the other, and of one proof sent to both at once, one goes`, async () => {
        const { stores, close } = await open();
        try {
          const [one, two] = stores.map((store) => createHarness({ store }));
          const client = await registerClient(one!);
          const key = newKey();
          let tokens = [await boundToken(one!, client, key), await boundToken(two!, client, key)];
          const proof = proofFor(one!, key);
          tokens[0] = (await ok(await refresh(one!, client, tokens[0]!, proof))).refresh_token!;
          await refusedProof(await refresh(two!, client, tokens[1]!, proof), /already used/);

          const shared = proofFor(one!, key);
          const answers = await Promise.all([refresh(one!, client, tokens[0]!, shared), refresh(two!, client, tokens[1]!, shared)]);
          const statuses = answers.map((answer) => answer.status);
          assert.deepEqual([...statuses].sort(), [200, 400], 'one goes, one is refused');
          const refused = statuses.indexOf(400);
          await refusedProof(answers[refused]!, /already used/);
          const went = (await ok(answers[1 - refused]!)).refresh_token!;
          tokens = refused === 0 ? [tokens[0]!, went] : [went, tokens[1]!];
          // The refused request spent nothing: its token still refreshes, with a proof of its own.
          assertBound(await ok(await refresh([one!, two!][refused]!, client, tokens[refused]!, proofFor(one!, key))), key);
        } finally {
          await close();
        }
      });
    }
  });

  describe("a workload's request (no client: its token authenticates it)", () => {
    let platform: Awaited<ReturnType<typeof startTestIssuer>>;
    before(async () => {
      platform = await startTestIssuer();
    });
    after(async () => {
      await platform.close();
    });
    const workloadToken = (h: Harness, claims: Record<string, unknown> = {}) =>
      platform.sign({
        iss: platform.issuer,
        sub: 'spiffe://corp.example/reports',
        aud: 'context-auth',
        iat: h.clock.now,
        exp: h.clock.now + 600,
        jti: randomBytes(8).toString('hex'),
        ...claims,
      });
    const present = (h: Harness, assertion: string, dpop: string) => postForm(h, '/token', { grant_type: JWT_BEARER_GRANT_TYPE, assertion }, { dpop });

    it('spends its proof once the grant has verified the token: a refused token records nothing, a replay leaves no grant', async () => {
      const h = createHarness({
        allowInsecureIssuers: true,
        workloads: [
          {
            issuer: platform.issuer,
            audience: 'context-auth',
            subject: 'spiffe://corp.example/reports',
            client: 'reports',
            scopes: ['mcp:tools'],
            singleUse: false,
          },
        ],
      });
      await h.server.workloadClientsReady();
      const key = newKey();
      const proof = proofFor(h, key);
      await expectOAuthError(await present(h, await workloadToken(h, { aud: 'someone-else' }), proof), 400, 'invalid_grant');
      const token = await workloadToken(h);
      assertBound(await ok(await present(h, token, proof)), key);
      const issued = h.log.filter((event) => event.event === 'token_issued').length;
      await refusedProof(await present(h, token, proof), /already used/);
      assert.equal(h.log.filter((event) => event.event === 'token_issued').length, issued, 'the replay made no grant');
    });
  });
});

describe('DPoP client metadata (RFC 9449 §5.2)', () => {
  it('dpop_bound_access_tokens is accepted at /register and echoed; anything but a boolean is refused', async () => {
    const h = createHarness();
    const client = await registerClient(h, { dpop_bound_access_tokens: true });
    assert.equal(client.dpop_bound_access_tokens, true);
    const response = await h.request('/register', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none', dpop_bound_access_tokens: 'yes' }),
    });
    const body = await expectOAuthError(response, 400, 'invalid_client_metadata');
    assert.match(body.error_description ?? '', /dpop_bound_access_tokens/);
  });

  it('a registered public client with dpop_bound_access_tokens gets no token without a proof', async () => {
    const h = createHarness();
    const client = await registerClient(h, { dpop_bound_access_tokens: true });
    await refusedProof(await redeem(h, client, await codeFor(h, client)), /dpop_bound_access_tokens/);
  });
});
