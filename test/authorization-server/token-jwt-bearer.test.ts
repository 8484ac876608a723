import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JWTPayload } from 'jose';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient as createClient } from '../../src/authorization-server/clients.js';
import { JWT_BEARER_GRANT_TYPE } from '../../src/core/protocol.js';
import { generateSecretKey, parseSecretKeys, SecretBox } from '../../src/core/secret-box.js';
import { startTestIssuer, type TestIssuer } from '../helpers/enterprise-idp.js';
import {
  createHarness,
  expectOAuthError,
  ISSUER,
  jwtClaims,
  OTHER_RESOURCE,
  postAs,
  postForm,
  RESOURCE,
  type Harness,
  type HarnessOptions,
  type TestClient,
} from '../helpers/harness.js';

let idp: TestIssuer;
let stranger: TestIssuer;
let platform: TestIssuer;
before(async () => {
  [idp, stranger, platform] = await Promise.all([startTestIssuer(), startTestIssuer(), startTestIssuer()]);
});
after(async () => {
  await Promise.all([idp.close(), stranger.close(), platform.close()]);
});

function idpHarness(overrides: HarnessOptions = {}): Harness {
  return createHarness({ trustedIdps: [idp.issuer], allowInsecureIssuers: true, ...overrides });
}

/** A confidential client registered for the jwt-bearer grant, as `clients add --grant-type …jwt-bearer` makes it. */
async function jagClient(h: Harness, metadata: Record<string, unknown> = {}): Promise<TestClient> {
  const valid = validateClientMetadata(
    { token_endpoint_auth_method: 'client_secret_basic', grant_types: [JWT_BEARER_GRANT_TYPE], ...metadata },
    h.server.metadata.scopes_supported,
  );
  const { client, clientSecret } = await createClient(h.store, valid, h.clock.now, { registeredBy: 'admin' });
  return { client_id: client.clientId, client_secret: clientSecret!, token_endpoint_auth_method: 'client_secret_basic' };
}

let counter = 0;
function jagClaims(h: Harness, client: TestClient, overrides: JWTPayload = {}): JWTPayload {
  return {
    iss: idp.issuer,
    sub: 'employee-42',
    aud: ISSUER,
    resource: RESOURCE,
    client_id: client.client_id,
    jti: `jag-${++counter}`,
    iat: h.clock.now,
    exp: h.clock.now + 300,
    scope: 'mcp:tools',
    email: 'employee42@corp.example',
    ...overrides,
  };
}

function signJag(claims: JWTPayload, issuer: TestIssuer = idp, header: Record<string, unknown> = {}): Promise<string> {
  return issuer.sign(claims, { typ: 'oauth-id-jag+jwt', ...header });
}

function present(h: Harness, client: TestClient | null, assertion: string, extra: Record<string, string> = {}): Promise<Response> {
  const values = { grant_type: JWT_BEARER_GRANT_TYPE, assertion, ...extra };
  return client ? postAs(h, '/token', client, values) : postForm(h, '/token', values);
}

async function refused(response: Response, pattern: RegExp, error = 'invalid_grant', status = 400): Promise<void> {
  const body = await expectOAuthError(response, status, error);
  assert.match(body.error_description ?? '', pattern);
}

describe('jwt-bearer grant — ID-JAG from a trusted identity provider', () => {
  it('issues an access token for a local user made from the IdP identity, and no refresh token', async () => {
    const h = idpHarness();
    const client = await jagClient(h);
    const response = await present(h, client, await signJag(jagClaims(h, client)));
    assert.equal(response.status, 200, await response.clone().text());
    const body = (await response.json()) as Record<string, string>;
    assert.equal(body.refresh_token, undefined);
    assert.equal(body.scope, 'mcp:tools');
    const claims = jwtClaims(body.access_token);
    const user = await h.store.getUser({ identity: { provider: 'trusted-idp', issuer: idp.issuer, subject: 'employee-42' } });
    assert.ok(user, 'the user is created on first use');
    assert.equal(user.username, 'trusted-idp:employee42@corp.example');
    assert.equal(claims.sub, user.id);
    assert.equal(claims.client_id, client.client_id);
    assert.equal(claims.aud, RESOURCE);
    // The same person again: the same user.
    const again = (await (await present(h, client, await signJag(jagClaims(h, client)))).json()) as Record<string, string>;
    assert.equal(jwtClaims(again.access_token).sub, user.id);
    const issued = h.log.filter((line) => line.event === 'token_issued');
    assert.equal(issued.length, 2);
    assert.equal(issued[0]!.idp, idp.issuer);
    assert.equal(issued[0]!.grant_type, JWT_BEARER_GRANT_TYPE);
    assert.ok(!JSON.stringify(h.log).includes('eyJ'), 'no token or assertion in the log');
  });

  it('advertises the grant and the ID-JAG profile only when a trusted IdP is configured', async () => {
    const on = idpHarness().server.metadata;
    assert.ok(on.grant_types_supported.includes(JWT_BEARER_GRANT_TYPE));
    assert.deepEqual(on.authorization_grant_profiles_supported, ['urn:ietf:params:oauth:grant-profile:id-jag']);
    const off = createHarness().server.metadata;
    assert.ok(!off.grant_types_supported.includes(JWT_BEARER_GRANT_TYPE));
    assert.equal(off.authorization_grant_profiles_supported, undefined);
  });

  it('is unsupported_grant_type when no IdP or workload issuer is trusted', async () => {
    const h = createHarness();
    const client = await jagClient(h);
    await refused(await present(h, client, await signJag(jagClaims(h, client))), /no trusted identity provider/, 'unsupported_grant_type');
  });

  it('refuses an ID-JAG for another audience, or for another beside us; takes a list naming us alone', async () => {
    const h = idpHarness();
    const client = await jagClient(h);
    await refused(
      await present(h, client, await signJag(jagClaims(h, client, { aud: 'https://other-as.example' }))),
      /aud does not name this authorization server: it must be the issuer identifier/,
    );
    await refused(
      await present(h, client, await signJag(jagClaims(h, client, { aud: ['https://other-as.example', ISSUER] }))),
      /names another audience beside this authorization server/,
    );
    await refused(await present(h, client, await signJag(jagClaims(h, client, { aud: `${ISSUER}/token` }))), /aud does not name this authorization server/);
    assert.equal((await present(h, client, await signJag(jagClaims(h, client, { aud: [ISSUER] })))).status, 200);
  });

  it('refuses an expired ID-JAG', async () => {
    const h = idpHarness();
    const client = await jagClient(h);
    await refused(await present(h, client, await signJag(jagClaims(h, client, { iat: h.clock.now - 900, exp: h.clock.now - 600 }))), /has expired/);
  });

  it('refuses an ID-JAG presented a second time (jti replay)', async () => {
    const h = idpHarness();
    const client = await jagClient(h);
    const jag = await signJag(jagClaims(h, client));
    assert.equal((await present(h, client, jag)).status, 200);
    await refused(await present(h, client, jag), /used before/);
  });

  it('refuses an ID-JAG whose signature does not verify (a claim changed after signing), and spends nothing', async () => {
    const h = idpHarness();
    const client = await jagClient(h);
    const claims = jagClaims(h, client);
    const [header, , signature] = (await signJag(claims)).split('.');
    const altered = `${header}.${Buffer.from(JSON.stringify({ ...claims, scope: 'mcp:tools mcp:admin' })).toString('base64url')}.${signature}`;
    const body = await expectOAuthError(await present(h, client, altered), 400, 'invalid_grant');
    assert.match(body.error_description ?? '', /signature/);
    // The genuine one, with the same jti, is still accepted.
    assert.equal((await present(h, client, await signJag(claims))).status, 200);
  });

  it('refuses an ID-JAG whose kid the IdP does not publish', async () => {
    const h = idpHarness();
    const client = await jagClient(h);
    await refused(await present(h, client, await signJag(jagClaims(h, client), idp, { kid: 'retired-key' })), /no key of the ID-JAG's issuer matches/);
  });

  it("answers 503 temporarily_unavailable when the IdP's keys cannot be fetched, and logs which issuer and why", async () => {
    // A trusted issuer where nothing listens: not the assertion's fault, nor for long.
    const down = 'http://127.0.0.1:9';
    const h = createHarness({ trustedIdps: [down], allowInsecureIssuers: true });
    const client = await jagClient(h);
    const response = await present(h, client, await signJag(jagClaims(h, client, { iss: down })));
    assert.equal(response.headers.get('retry-after'), '5');
    await refused(response, /^the keys of the assertion's issuer could not be fetched; try again shortly$/, 'temporarily_unavailable', 503);
    const logged = h.log.filter((line) => line.event === 'assertion_keys_unavailable');
    assert.equal(logged.length, 1);
    assert.equal(logged[0]!.issuer, down);
    assert.match(String(logged[0]!.reason), /127\.0\.0\.1:9\/\.well-known\/openid-configuration/);
  });

  it('refuses an unsigned ID-JAG (alg none)', async () => {
    const h = idpHarness();
    const client = await jagClient(h);
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${encode({ alg: 'none', typ: 'oauth-id-jag+jwt' })}.${encode(jagClaims(h, client))}.`;
    await refused(await present(h, client, unsigned), /unsigned/);
  });

  it('refuses an ID-JAG from an issuer nobody trusts, without contacting it', async () => {
    const h = idpHarness();
    const client = await jagClient(h);
    await refused(
      await present(h, client, await signJag(jagClaims(h, client, { iss: stranger.issuer }), stranger)),
      /issuer is not a trusted identity provider/,
    );
    assert.equal(stranger.requests.size, 0, 'nothing fetched from an untrusted issuer');
  });

  it('refuses a token from a trusted IdP whose typ is not oauth-id-jag+jwt', async () => {
    const h = idpHarness();
    const client = await jagClient(h);
    await refused(await present(h, client, await idp.sign(jagClaims(h, client), { typ: 'JWT' })), /typ is not oauth-id-jag\+jwt/);
  });

  it('refuses an ID-JAG issued to another client (client_id claim)', async () => {
    const h = idpHarness();
    const client = await jagClient(h);
    const other = await jagClient(h);
    await refused(await present(h, client, await signJag(jagClaims(h, other))), /client_id is not the client that presents it/);
  });

  it('refuses a public client (unauthorized_client) and a request with no client authentication (invalid_client)', async () => {
    const h = idpHarness();
    const confidential = await jagClient(h);
    const valid = validateClientMetadata(
      { token_endpoint_auth_method: 'none', grant_types: ['authorization_code'], redirect_uris: ['http://127.0.0.1:3/cb'] },
      h.server.metadata.scopes_supported,
    );
    const { client } = await createClient(h.store, valid, h.clock.now, { registeredBy: 'admin' });
    const publicClient: TestClient = { client_id: client.clientId, token_endpoint_auth_method: 'none' };
    await refused(await present(h, publicClient, await signJag(jagClaims(h, publicClient))), /confidential clients only/, 'unauthorized_client');
    await refused(await present(h, null, await signJag(jagClaims(h, confidential))), /client that authenticates/, 'invalid_client', 401);
  });

  it('refuses a confidential client not registered for the grant (unauthorized_client)', async () => {
    const h = idpHarness();
    const valid = validateClientMetadata(
      { token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'] },
      h.server.metadata.scopes_supported,
    );
    const { client, clientSecret } = await createClient(h.store, valid, h.clock.now, { registeredBy: 'admin' });
    const service: TestClient = { client_id: client.clientId, client_secret: clientSecret!, token_endpoint_auth_method: 'client_secret_basic' };
    await refused(await present(h, service, await signJag(jagClaims(h, service))), /not registered for/, 'unauthorized_client');
  });

  it('refuses an ID-JAG for a resource this server does not serve, and binds the token to the one it names', async () => {
    const h = idpHarness();
    const client = await jagClient(h);
    await refused(
      await present(h, client, await signJag(jagClaims(h, client, { resource: 'https://elsewhere.example/mcp' }))),
      /resource is not a server this authorization server issues tokens for/,
      'invalid_target',
    );
    const ok = (await (await present(h, client, await signJag(jagClaims(h, client, { resource: OTHER_RESOURCE })))).json()) as Record<string, string>;
    assert.equal(jwtClaims(ok.access_token).aud, OTHER_RESOURCE);
    await refused(
      await present(h, client, await signJag(jagClaims(h, client)), { resource: OTHER_RESOURCE }),
      /not the resource the ID-JAG was issued for/,
      'invalid_target',
    );
  });

  it('an ID-JAG that names no resource: the token is for the resource parameter, one we serve, else for the default resource', async () => {
    const h = idpHarness();
    const client = await jagClient(h);
    const unbound = () => signJag(jagClaims(h, client, { resource: undefined }));
    const plain = (await (await present(h, client, await unbound())).json()) as Record<string, string>;
    assert.equal(jwtClaims(plain.access_token).aud, RESOURCE);
    const picked = (await (await present(h, client, await unbound(), { resource: OTHER_RESOURCE })).json()) as Record<string, string>;
    assert.equal(jwtClaims(picked.access_token).aud, OTHER_RESOURCE);
    await refused(
      await present(h, client, await unbound(), { resource: 'https://elsewhere.example/mcp' }),
      /resource parameter is not a server this authorization server issues tokens for/,
      'invalid_target',
    );
  });

  it('grants requested scopes the IdP asserted, refuses one it did not (invalid_scope), and defaults to the asserted ones', async () => {
    const h = idpHarness();
    const client = await jagClient(h, { scope: 'mcp:tools mcp:admin' });
    await refused(
      await present(h, client, await signJag(jagClaims(h, client, { scope: 'mcp:tools' })), { scope: 'mcp:tools mcp:admin' }),
      /not granted by the identity provider: mcp:admin/,
      'invalid_scope',
    );
    const both = (await (await present(h, client, await signJag(jagClaims(h, client, { scope: 'mcp:tools mcp:admin other:scope' })))).json()) as Record<
      string,
      string
    >;
    assert.equal(both.scope, 'mcp:admin mcp:tools');
    const asked = (await (
      await present(h, client, await signJag(jagClaims(h, client, { scope: 'mcp:tools mcp:admin' })), { scope: 'mcp:admin' })
    ).json()) as Record<string, string>;
    assert.equal(asked.scope, 'mcp:admin');
  });

  it('an ID-JAG without scope grants only the default scopes, even to a client that may have mcp:admin', async () => {
    const h = idpHarness();
    const client = await jagClient(h, { scope: 'mcp:tools mcp:admin' });
    const unscoped = () => signJag(jagClaims(h, client, { scope: undefined }));
    const plain = (await (await present(h, client, await unscoped())).json()) as Record<string, string>;
    assert.equal(plain.scope, 'mcp:tools');
    assert.equal(jwtClaims(plain.access_token).scope, 'mcp:tools');
    await refused(
      await present(h, client, await unscoped(), { scope: 'mcp:tools mcp:admin' }),
      /scope not granted by the identity provider: mcp:admin \(the ID-JAG names no scope, so it grants only the default scopes: mcp:tools\)/,
      'invalid_scope',
    );
    assert.equal(((await (await present(h, client, await unscoped(), { scope: 'mcp:tools' })).json()) as Record<string, string>).scope, 'mcp:tools');
  });

  it('a client registered with no scope list (by an earlier version, or in code) gets only the default scopes, whatever the IdP granted', async () => {
    const h = idpHarness();
    const client = await jagClient(h);
    assert.equal((await h.store.getClient(client.client_id))?.scope, null);
    const granted = () => signJag(jagClaims(h, client, { scope: 'mcp:tools mcp:admin' }));
    assert.equal(((await (await present(h, client, await granted())).json()) as Record<string, string>).scope, 'mcp:tools');
    await refused(
      await present(h, client, await granted(), { scope: 'mcp:admin' }),
      /scope not allowed: mcp:admin \(the client has no scope list, so it may have only the default scopes \(mcp:tools\)\)/,
      'invalid_scope',
    );
  });

  it('keeps the person under an upstream provider with the same issuer, so one person is one user', async () => {
    const h = idpHarness({
      upstream: {
        providers: [{ kind: 'oidc', id: 'corp', issuer: idp.issuer, clientId: 'x', clientSecret: 'y' }],
        secretBox: new SecretBox(parseSecretKeys(generateSecretKey(), 'test')),
        allowLoopbackHttp: true,
      },
    });
    const client = await jagClient(h);
    assert.equal((await present(h, client, await signJag(jagClaims(h, client)))).status, 200);
    assert.ok(await h.store.getUser({ identity: { provider: 'corp', issuer: idp.issuer, subject: 'employee-42' } }));
  });

  it('never echoes the assertion in an error', async () => {
    const h = idpHarness();
    const client = await jagClient(h);
    const jag = await signJag(jagClaims(h, client, { aud: 'https://other-as.example' }));
    const text = await (await present(h, client, jag)).text();
    assert.ok(!text.includes(jag.split('.')[1]!) && !text.includes('other-as.example'));
  });
});

describe('jwt-bearer grant — workload identity', () => {
  function workloadHarness(rules: Array<Record<string, unknown>> = []): Harness {
    return createHarness({
      allowInsecureIssuers: true,
      workloads: [
        { issuer: platform.issuer, subject: 'system:serviceaccount:billing:*', client: 'billing-worker', name: 'Billing worker', scopes: ['mcp:tools'] },
        {
          issuer: platform.issuer,
          audience: 'context-auth',
          subject: 'spiffe://corp.example/reports',
          client: 'reports',
          scopes: ['mcp:tools', 'mcp:admin'],
          singleUse: false,
        },
        ...rules,
      ] as never,
    });
  }
  let wid = 0;
  function workloadToken(h: Harness, overrides: JWTPayload = {}, header: Record<string, unknown> = {}): Promise<string> {
    return platform.sign(
      {
        iss: platform.issuer,
        sub: 'system:serviceaccount:billing:invoicer',
        aud: ISSUER,
        iat: h.clock.now,
        exp: h.clock.now + 3600,
        jti: `w-${++wid}`,
        ...overrides,
      },
      header,
    );
  }

  it('issues a token for the rule’s client with no client authentication; the client exists from the start', async () => {
    const h = workloadHarness();
    await h.server.workloadClientsReady();
    const made = await h.store.getClient('billing-worker');
    assert.ok(made);
    assert.equal(made.registeredBy, 'admin');
    assert.equal(made.tokenEndpointAuthMethod, 'none');
    assert.deepEqual(made.grantTypes, [JWT_BEARER_GRANT_TYPE]);
    assert.equal(made.clientName, 'Billing worker');
    const response = await present(h, null, await workloadToken(h));
    assert.equal(response.status, 200, await response.clone().text());
    const body = (await response.json()) as Record<string, string>;
    assert.equal(body.refresh_token, undefined);
    assert.equal(body.scope, 'mcp:tools');
    const claims = jwtClaims(body.access_token);
    assert.equal(claims.sub, 'billing-worker');
    assert.equal(claims.client_id, 'billing-worker');
    assert.equal(claims.aud, RESOURCE);
  });

  it('refuses a token whose subject matches no rule', async () => {
    const h = workloadHarness();
    await refused(
      await present(h, null, await workloadToken(h, { sub: 'system:serviceaccount:payroll:runner' })),
      /subject matches no configured workload rule/,
    );
  });

  it('refuses a token for another audience, or for another beside us; takes a list naming us alone (as Kubernetes writes one)', async () => {
    const h = workloadHarness();
    await refused(await present(h, null, await workloadToken(h, { aud: 'https://kubernetes.default.svc' })), /aud does not name this authorization server/);
    await refused(
      await present(h, null, await workloadToken(h, { aud: ['https://kubernetes.default.svc', ISSUER] })),
      /names another audience beside this authorization server/,
    );
    assert.equal((await present(h, null, await workloadToken(h, { aud: [ISSUER] }))).status, 200);
  });

  it('refuses a token from an issuer no rule names, without contacting it', async () => {
    const h = workloadHarness();
    const token = await stranger.sign({
      iss: stranger.issuer,
      sub: 'system:serviceaccount:billing:invoicer',
      aud: ISSUER,
      iat: h.clock.now,
      exp: h.clock.now + 600,
      jti: 'x',
    });
    await refused(await present(h, null, token), /issuer is not trusted/);
    assert.equal(stranger.requests.size, 0);
  });

  it('refuses a request naming another client than the rule’s', async () => {
    const h = workloadHarness();
    await h.server.workloadClientsReady();
    await refused(
      await postForm(h, '/token', { grant_type: JWT_BEARER_GRANT_TYPE, assertion: await workloadToken(h), client_id: 'reports' }),
      /for another client/,
    );
    const ok = await postForm(h, '/token', { grant_type: JWT_BEARER_GRANT_TYPE, assertion: await workloadToken(h), client_id: 'billing-worker' });
    assert.equal(ok.status, 200);
  });

  it('accepts a token with a jti once under a single-use rule, and again under a rule that allows reuse', async () => {
    const h = workloadHarness();
    const once = await workloadToken(h);
    assert.equal((await present(h, null, once)).status, 200);
    await refused(await present(h, null, once), /used before/);
    const reusable = await workloadToken(h, { sub: 'spiffe://corp.example/reports', aud: 'context-auth' });
    assert.equal((await present(h, null, reusable)).status, 200);
    assert.equal((await present(h, null, reusable)).status, 200);
  });

  it('accepts a token without jti (no record of use)', async () => {
    const h = workloadHarness();
    assert.equal((await present(h, null, await workloadToken(h, { jti: undefined }))).status, 200);
  });

  it('grants requested scopes within the rule and refuses others (invalid_scope)', async () => {
    const h = workloadHarness();
    await refused(await present(h, null, await workloadToken(h), { scope: 'mcp:admin' }), /scope not allowed: mcp:admin/, 'invalid_scope');
    const reports = (await (
      await present(h, null, await workloadToken(h, { sub: 'spiffe://corp.example/reports', aud: 'context-auth' }), { scope: 'mcp:admin' })
    ).json()) as Record<string, string>;
    assert.equal(reports.scope, 'mcp:admin');
  });

  it('holds each rule to its own scopes when two rules name one client', async () => {
    const h = workloadHarness([
      { issuer: platform.issuer, subject: 'job-a', client: 'shared', scopes: ['mcp:tools'] },
      { issuer: platform.issuer, subject: 'job-b', client: 'shared', scopes: ['mcp:tools', 'mcp:admin'] },
    ]);
    await refused(await present(h, null, await workloadToken(h, { sub: 'job-a' }), { scope: 'mcp:admin' }), /scope not allowed: mcp:admin/, 'invalid_scope');
    assert.equal((await present(h, null, await workloadToken(h, { sub: 'job-b' }), { scope: 'mcp:admin' })).status, 200);
  });

  it('holds a rule naming a client that exists with no scope list to the default scopes', async () => {
    const h = workloadHarness([{ issuer: platform.issuer, subject: 'job-old', client: 'old-job', scopes: ['mcp:tools', 'mcp:admin'] }]);
    // As `clients add --grant-type jwt-bearer` made one before it gave a scope list.
    await jagClient(h);
    const [made] = await h.store.listClients();
    await h.store.createClient({ ...made!, clientId: 'old-job', scope: null });
    await h.server.workloadClientsReady();
    assert.equal(((await (await present(h, null, await workloadToken(h, { sub: 'job-old' }))).json()) as Record<string, string>).scope, 'mcp:tools');
    await refused(
      await present(h, null, await workloadToken(h, { sub: 'job-old' }), { scope: 'mcp:admin' }),
      /scope not allowed: mcp:admin \(the client has no scope list/,
      'invalid_scope',
    );
  });

  it('refuses a token typed for another use (an access token)', async () => {
    const h = workloadHarness();
    await refused(await present(h, null, await workloadToken(h, {}, { typ: 'at+jwt' })), /typ is not JWT/);
  });

  it('refuses an HS256 token signed with the issuer’s public key', async () => {
    const h = workloadHarness();
    const { createHmac } = await import('node:crypto');
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const input = `${encode({ alg: 'HS256', kid: 'key-1' })}.${encode({ iss: platform.issuer, sub: 'system:serviceaccount:billing:a', aud: ISSUER, iat: h.clock.now, exp: h.clock.now + 60, jti: 'h' })}`;
    const forged = `${input}.${createHmac('sha256', JSON.stringify(platform.publicJwk)).update(input).digest('base64url')}`;
    await refused(await present(h, null, forged), /algorithm that is not accepted/);
  });

  it('refuses a workload client that exists already without the grant, at start', async () => {
    const h = workloadHarness([{ issuer: platform.issuer, subject: 'x', client: 'taken', scopes: ['mcp:tools'] }]);
    const valid = validateClientMetadata(
      { token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'] },
      h.server.metadata.scopes_supported,
    );
    const { client } = await createClient(h.store, valid, h.clock.now, { registeredBy: 'admin' });
    await h.store.createClient({ ...client, clientId: 'taken' });
    await assert.rejects(h.server.workloadClientsReady(), /taken exists already and is not registered/);
  });
});
