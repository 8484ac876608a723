/**
 * Token exchange (RFC 8693) for delegation: a context server (resource A's) exchanges a person's
 * access token for A for a token for resource B, naming itself in `act`; each refusal of the
 * issue's list has its test.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient as createClient } from '../../src/authorization-server/clients.js';
import { resolveTokenExchange, type TokenExchangeOptions } from '../../src/authorization-server/grants/token-exchange-policy.js';
import { dpopProofSigner, generateDpopKeyPair } from '../../src/core/dpop.js';
import { TOKEN_EXCHANGE_GRANT_TYPE } from '../../src/core/id-jag.js';
import { ACCESS_TOKEN_TYPE } from '../../src/core/token-exchange.js';
import { createMemoryStore } from '../../src/store/memory.js';
import {
  addResourceServer,
  addUser,
  authorize,
  createHarness,
  expectOAuthError,
  introspect,
  ISSUER,
  jwtClaims,
  obtainTokens,
  OTHER_RESOURCE,
  postAs,
  REDIRECT_URI,
  postForm,
  basic,
  registerClient,
  RESOURCE,
  REVISIONS,
  type Harness,
  type TestClient,
} from '../helpers/harness.js';

/** A confidential client an operator created: a context server's own credentials at this server. */
async function serverClient(store: ReturnType<typeof createMemoryStore>, now: number): Promise<TestClient> {
  const metadata = validateClientMetadata({ token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'] }, [
    'mcp:tools',
    'mcp:admin',
  ]);
  const { client, clientSecret } = await createClient(store, metadata, now, { registeredBy: 'admin' });
  return { client_id: client.clientId, client_secret: clientSecret!, token_endpoint_auth_method: 'client_secret_basic' };
}

interface Setup {
  h: Harness;
  /** Resource A's server (RESOURCE), allowed to delegate to B (OTHER_RESOURCE). */
  a: TestClient;
  /** Resource B's server, allowed to delegate to A. */
  b: TestClient;
}

/** A server whose policy lets A's server delegate A → B and B's server B → A; `policy` changes the rules. */
async function setup(
  policy: (a: string, b: string) => TokenExchangeOptions = (a, b) => ({
    delegations: [
      { client: a, from: RESOURCE, to: OTHER_RESOURCE },
      { client: b, from: OTHER_RESOURCE, to: RESOURCE },
    ],
  }),
): Promise<Setup> {
  const store = createMemoryStore();
  const a = await serverClient(store, 1_800_000_000);
  const b = await serverClient(store, 1_800_000_000);
  const h = createHarness({ store, tokenExchange: policy(a.client_id, b.client_id) });
  return { h, a, b };
}

/** Alice's tokens for A (RESOURCE), through a public client: `scope` asked for. */
async function personsTokens(h: Harness, scope = 'mcp:tools'): Promise<{ client: TestClient; access: string; refresh: string }> {
  const { client, tokens } = await obtainTokens(h, REVISIONS[1], { scope });
  return { client, access: String(tokens.access_token), refresh: String(tokens.refresh_token) };
}

function exchange(h: Harness, caller: TestClient, subjectToken: string, extra: Record<string, string | undefined> = {}): Promise<Response> {
  return postAs(h, '/token', caller, {
    grant_type: TOKEN_EXCHANGE_GRANT_TYPE,
    subject_token: subjectToken,
    subject_token_type: ACCESS_TOKEN_TYPE,
    resource: OTHER_RESOURCE,
    ...extra,
  });
}

async function ok(response: Response): Promise<Record<string, string | number>> {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return JSON.parse(text) as Record<string, string | number>;
}

async function refused(response: Response, error: string, description: RegExp): Promise<void> {
  const body = await expectOAuthError(response, 400, error);
  assert.match(body.error_description ?? '', description);
}

describe('token exchange: delegated tokens', () => {
  it('gives resource A’s server a token for B: the person as sub, the caller in act, the subject’s scope, no refresh token', async () => {
    const { h, a } = await setup();
    const person = await personsTokens(h);
    const subject = jwtClaims(person.access);
    const body = await ok(await exchange(h, a, person.access));
    assert.equal(body.issued_token_type, ACCESS_TOKEN_TYPE);
    assert.equal(body.token_type, 'Bearer');
    assert.equal(body.scope, 'mcp:tools');
    assert.equal(body.refresh_token, undefined);
    const claims = jwtClaims(body.access_token);
    assert.equal(claims.iss, ISSUER);
    assert.equal(claims.aud, OTHER_RESOURCE);
    assert.equal(claims.sub, subject.sub);
    assert.equal(claims.client_id, a.client_id);
    assert.deepEqual(claims.act, { sub: a.client_id });
    assert.equal(claims.scope, 'mcp:tools');
    assert.notEqual(claims.jti, subject.jti);
    const event = h.log.find((entry) => entry.event === 'token_issued' && entry.grant_type === TOKEN_EXCHANGE_GRANT_TYPE);
    assert.equal(event?.client_id, a.client_id);
    assert.equal(event?.subject_client_id, person.client.client_id);
    // A resource server's introspection describes it, actor included.
    const described = await introspect(h, body.access_token, await addResourceServer(h));
    assert.equal(described.active, true);
    assert.deepEqual(described.act, { sub: a.client_id });
    assert.equal(described.aud, OTHER_RESOURCE);
  });

  it('ends no later than the subject token', async () => {
    const { h, a } = await setup();
    const person = await personsTokens(h);
    const subjectExp = Number(jwtClaims(person.access).exp);
    h.clock.now += 400;
    const body = await ok(await exchange(h, a, person.access));
    assert.equal(jwtClaims(body.access_token).exp, subjectExp);
    assert.equal(body.expires_in, subjectExp - h.clock.now);
  });

  it('advertises the grant type only when a delegation is configured, and refuses it otherwise (unsupported_grant_type)', async () => {
    const { h } = await setup();
    const metadata = (await (await h.request('/.well-known/oauth-authorization-server')).json()) as { grant_types_supported: string[] };
    assert.ok(metadata.grant_types_supported.includes(TOKEN_EXCHANGE_GRANT_TYPE));
    const plain = createHarness();
    const plainMetadata = (await (await plain.request('/.well-known/oauth-authorization-server')).json()) as { grant_types_supported: string[] };
    assert.ok(!plainMetadata.grant_types_supported.includes(TOKEN_EXCHANGE_GRANT_TYPE));
    const caller = await serverClient(plain.store, plain.clock.now);
    const person = await personsTokens(plain);
    await refused(await exchange(plain, caller, person.access), 'unsupported_grant_type', /no token exchange is configured/);
  });

  it('refuses a resource the policy does not allow from A, and one not served (invalid_target)', async () => {
    const { h, a } = await setup();
    const person = await personsTokens(h);
    await refused(await exchange(h, a, person.access, { resource: RESOURCE }), 'invalid_target', /delegation from .*\/mcp to .*\/mcp is not allowed/);
    await refused(
      await exchange(h, a, person.access, { resource: 'https://elsewhere.example/mcp' }),
      'invalid_target',
      /not a server this authorization server issues tokens for/,
    );
    await refused(await exchange(h, a, person.access, { resource: undefined }), 'invalid_target', /resource is required/);
    await refused(await exchange(h, a, person.access, { audience: OTHER_RESOURCE }), 'invalid_target', /with resource, not audience/);
    assert.equal(h.log.filter((entry) => entry.event === 'token_issued' && entry.grant_type === TOKEN_EXCHANGE_GRANT_TYPE).length, 0);
  });

  it('refuses a client that is not the subject token’s resource server, and a public client (unauthorized_client)', async () => {
    const { h, b } = await setup();
    const person = await personsTokens(h);
    // B's server may delegate B → A, not A's tokens.
    await refused(await exchange(h, b, person.access), 'unauthorized_client', /may not exchange tokens for the subject token's resource/);
    // The person's own client holds the token, but is no resource's server.
    const confidential = await registerClient(h, { token_endpoint_auth_method: 'client_secret_basic' });
    await refused(await exchange(h, confidential, person.access), 'unauthorized_client', /no delegation rule names it/);
    await refused(await exchange(h, confidential, 'not even a token'), 'unauthorized_client', /no delegation rule names it/);
    await refused(await exchange(h, person.client, person.access), 'unauthorized_client', /confidential clients only/);
  });

  it('refuses an expired subject token (invalid_grant)', async () => {
    const { h, a } = await setup();
    const person = await personsTokens(h);
    h.clock.now += 601;
    await refused(await exchange(h, a, person.access), 'invalid_grant', /the subject token has expired/);
  });

  it('refuses a subject token that is not ours, or not an access token (invalid_grant)', async () => {
    const { h, a } = await setup();
    const person = await personsTokens(h);
    const [header, payload] = person.access.split('.');
    await refused(await exchange(h, a, `${header}.${payload}.${'A'.repeat(86)}`), 'invalid_grant', /not an access token issued by this server/);
    await refused(await exchange(h, a, person.refresh), 'invalid_grant', /not an access token issued by this server/);
  });

  it('refuses a revoked subject token, and one whose grant was revoked (invalid_grant)', async () => {
    const { h, a } = await setup();
    const person = await personsTokens(h);
    // The person's client revokes the access token alone…
    assert.equal((await postAs(h, '/revoke', person.client, { token: person.access })).status, 200);
    await refused(await exchange(h, a, person.access), 'invalid_grant', /the subject token has been revoked/);
    // …or its whole grant, through the refresh token.
    const other = await personsTokens(h);
    assert.equal((await postAs(h, '/revoke', other.client, { token: other.refresh })).status, 200);
    await refused(await exchange(h, a, other.access), 'invalid_grant', /the subject token has been revoked/);
  });

  it('refuses a client’s own token (client credentials): no person to act for (invalid_grant)', async () => {
    const { h, a } = await setup();
    const machine = await ok(await postAs(h, '/token', a, { grant_type: 'client_credentials', resource: RESOURCE }));
    await refused(await exchange(h, a, String(machine.access_token)), 'invalid_grant', /there is no one to act for/);
  });

  it('refuses a DPoP-bound subject token without a proof of its key (invalid_grant), and binds the new token to it with one', async () => {
    const { h, a } = await setup();
    await addUser(h);
    const client = await registerClient(h);
    const key = dpopProofSigner(generateDpopKeyPair());
    const proof = () => key.sign({ method: 'POST', url: `${ISSUER}/token`, now: h.clock.now });
    const { tokens } = await obtainTokensWithProof(h, client, proof);
    const bound = String(tokens.access_token);
    assert.deepEqual(jwtClaims(bound).cnf, { jkt: key.jkt });
    await refused(await exchange(h, a, bound), 'invalid_grant', /bound to a DPoP key: send a DPoP proof made with that key/);
    const stranger = dpopProofSigner(generateDpopKeyPair());
    const strangersProof = stranger.sign({ method: 'POST', url: `${ISSUER}/token`, now: h.clock.now });
    await refused(await exchangeWithProof(h, a, bound, strangersProof), 'invalid_grant', /bound to a DPoP key/);
    const body = await ok(await exchangeWithProof(h, a, bound, proof()));
    assert.equal(body.token_type, 'DPoP');
    assert.deepEqual(jwtClaims(body.access_token).cnf, { jkt: key.jkt });
  });

  it('refuses a delegated token as subject beyond the configured depth (invalid_grant), and nests act within it', async () => {
    const shallow = await setup();
    const person = await personsTokens(shallow.h);
    const delegated = String((await ok(await exchange(shallow.h, shallow.a, person.access))).access_token);
    await refused(
      await exchange(shallow.h, shallow.b, delegated, { resource: RESOURCE }),
      'invalid_grant',
      /a chain of 2 actors is more than this server allows \(1\)/,
    );

    const deep = await setup((a, b) => ({
      maxDelegationDepth: 2,
      delegations: [
        { client: a, from: RESOURCE, to: OTHER_RESOURCE },
        { client: b, from: OTHER_RESOURCE, to: RESOURCE },
      ],
    }));
    const deepPerson = await personsTokens(deep.h);
    const first = String((await ok(await exchange(deep.h, deep.a, deepPerson.access))).access_token);
    const second = String((await ok(await exchange(deep.h, deep.b, first, { resource: RESOURCE }))).access_token);
    assert.deepEqual(jwtClaims(second).act, { sub: deep.b.client_id, act: { sub: deep.a.client_id } });
    assert.equal(jwtClaims(second).sub, jwtClaims(deepPerson.access).sub);
    await refused(await exchange(deep.h, deep.a, second), 'invalid_grant', /a chain of 3 actors is more than this server allows \(2\)/);
  });

  it('carries at most the subject token’s scopes and the policy’s (invalid_scope beyond them)', async () => {
    const { h, a } = await setup((client) => ({ delegations: [{ client, from: RESOURCE, to: OTHER_RESOURCE, scopes: ['mcp:tools'] }] }));
    const person = await personsTokens(h, 'mcp:tools mcp:admin');
    assert.equal((await ok(await exchange(h, a, person.access))).scope, 'mcp:tools');
    await refused(await exchange(h, a, person.access, { scope: 'mcp:admin' }), 'invalid_scope', /beyond the subject token's and this delegation's: mcp:admin/);
    const narrow = await personsTokens(h, 'mcp:admin');
    await refused(await exchange(h, a, narrow.access), 'invalid_scope', /no scope of the subject token is one this delegation may carry/);
    await refused(await exchange(h, a, narrow.access, { scope: 'mcp:tools' }), 'invalid_scope', /mcp:tools/);
  });

  it('honours may_act: a subject token naming another actor is refused (invalid_grant)', async () => {
    const { h, a } = await setup();
    const person = await personsTokens(h);
    const claims = jwtClaims(person.access);
    const signing = await h.server.keys.current();
    const mayActOther = signing.sign({ ...claims, jti: 'may-act-1', may_act: { sub: 'someone-else' } });
    await refused(await exchange(h, a, mayActOther), 'invalid_grant', /may_act does not name this client/);
    const mayActCaller = signing.sign({ ...claims, jti: 'may-act-2', may_act: { sub: a.client_id } });
    await ok(await exchange(h, a, mayActCaller));
  });

  it('is revocable: by its client at /revoke, and with the person’s grant', async () => {
    const { h, a } = await setup();
    const rs = await addResourceServer(h);
    const person = await personsTokens(h);
    const first = String((await ok(await exchange(h, a, person.access))).access_token);
    assert.equal((await postAs(h, '/revoke', a, { token: first })).status, 200);
    assert.equal((await introspect(h, first, rs)).active, false);
    assert.ok(h.server.revocations.isRevoked({ claims: jwtClaims(first) }));
    // Revoking the person's grant (their refresh token) refuses every token delegated from it.
    const second = String((await ok(await exchange(h, a, person.access))).access_token);
    assert.equal((await introspect(h, second, rs)).active, true);
    assert.equal((await postAs(h, '/revoke', person.client, { token: person.refresh })).status, 200);
    assert.equal((await introspect(h, second, rs)).active, false);
    assert.ok(h.server.revocations.isRevoked({ claims: jwtClaims(second) }));
  });

  it('refuses what token exchange does not take here (invalid_request)', async () => {
    const { h, a } = await setup();
    const person = await personsTokens(h);
    await refused(
      await exchange(h, a, person.access, { subject_token_type: 'urn:ietf:params:oauth:token-type:saml2' }),
      'invalid_request',
      /subject_token_type .* is not one this server exchanges/,
    );
    await refused(
      await exchange(h, a, person.access, { requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' }),
      'invalid_request',
      /exchanged for an access token only/,
    );
    await refused(
      await exchange(h, a, person.access, { actor_token: 'x', actor_token_type: ACCESS_TOKEN_TYPE }),
      'invalid_request',
      /actor_token is not supported/,
    );
    await refused(await exchange(h, a, '', {}), 'invalid_request', /subject_token is required/);
  });
});

describe('token exchange policy', () => {
  const served = { resources: [RESOURCE, OTHER_RESOURCE], scopesSupported: ['mcp:tools', 'mcp:admin'] };
  it('is off without rules, and refuses rules that can never match', () => {
    assert.equal(resolveTokenExchange(undefined, served), null);
    assert.equal(resolveTokenExchange({ delegations: [] }, served), null);
    assert.throws(
      () => resolveTokenExchange({ delegations: [{ client: 'a', from: RESOURCE, to: 'https://elsewhere.example/mcp' }] }, served),
      /delegations\[0\]\.to must be one of the resources/,
    );
    assert.throws(() => resolveTokenExchange({ delegations: [{ client: 'a', from: RESOURCE, to: RESOURCE }] }, served), /from and to are the same resource/);
    assert.throws(
      () => resolveTokenExchange({ delegations: [{ client: 'a', from: RESOURCE, to: OTHER_RESOURCE, scopes: ['files:write'] }] }, served),
      /does not offer: files:write/,
    );
    assert.throws(() => resolveTokenExchange({ delegations: [{ client: '', from: RESOURCE, to: OTHER_RESOURCE }] }, served), /client must be a client id/);
    assert.throws(
      () => resolveTokenExchange({ maxDelegationDepth: 0, delegations: [{ client: 'a', from: RESOURCE, to: OTHER_RESOURCE }] }, served),
      /maxDelegationDepth/,
    );
    assert.deepEqual(resolveTokenExchange({ delegations: [{ client: 'a', from: RESOURCE, to: OTHER_RESOURCE }] }, served), {
      maxDelegationDepth: 1,
      delegations: [{ client: 'a', from: RESOURCE, to: OTHER_RESOURCE, scopes: undefined }],
      idJagAudiences: [],
    });
  });

  it('takes ID-JAG audiences by issuer, with the email and client mapping checked', () => {
    assert.deepEqual(
      resolveTokenExchange({ idJagAudiences: [{ issuer: 'https://ras.example/', email: true, clients: { ours: 'theirs' } }] }, served)?.idJagAudiences,
      [{ issuer: 'https://ras.example', email: true, clients: { ours: 'theirs' } }],
    );
    assert.throws(() => resolveTokenExchange({ idJagAudiences: [{ issuer: 'http://ras.example' }] }, served), /idJagAudiences\[0\]\.issuer: .*https/);
    assert.throws(
      () => resolveTokenExchange({ idJagAudiences: [{ issuer: 'https://ras.example', clients: { ours: '' } }] }, served),
      /clients must map our client ids/,
    );
    assert.throws(
      () => resolveTokenExchange({ idJagAudiences: [{ issuer: 'https://ras.example', email: 'yes' as unknown as boolean }] }, served),
      /email must be true or false/,
    );
  });
});

/** Alice's tokens for A through `client`, the code redeemed with a DPoP proof: bound tokens. */
async function obtainTokensWithProof(h: Harness, client: TestClient, proof: () => string): Promise<{ tokens: Record<string, unknown> }> {
  const { location, verifier } = await authorize(h, { client, user: { username: 'alice', password: 'correct horse battery' }, resource: RESOURCE });
  const response = await postForm(
    h,
    '/token',
    {
      grant_type: 'authorization_code',
      code: location.searchParams.get('code')!,
      code_verifier: verifier,
      redirect_uri: REDIRECT_URI,
      client_id: client.client_id,
      resource: RESOURCE,
    },
    { dpop: proof() },
  );
  return { tokens: await ok(response) };
}

function exchangeWithProof(h: Harness, caller: TestClient, subjectToken: string, dpop: string): Promise<Response> {
  return postForm(
    h,
    '/token',
    { grant_type: TOKEN_EXCHANGE_GRANT_TYPE, subject_token: subjectToken, subject_token_type: ACCESS_TOKEN_TYPE, resource: OTHER_RESOURCE },
    { authorization: basic(caller.client_id, caller.client_secret!), dpop },
  );
}
