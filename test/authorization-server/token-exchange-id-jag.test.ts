/**
 * Issuing ID-JAGs by token exchange, as the people's identity provider: a client holding a
 * person's refresh token asks for an ID-JAG for an authorization server the operator named. Its
 * redemption by another context-auth is test/e2e/id-jag-issuer.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { hashPassword } from '../../src/core/passwords.js';
import { ID_JAG_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT_TYPE } from '../../src/core/id-jag.js';
import { ACCESS_TOKEN_TYPE, REFRESH_TOKEN_TYPE } from '../../src/core/token-exchange.js';
import type { IdJagAudienceOptions } from '../../src/authorization-server/grants/token-exchange-policy.js';
import {
  createHarness,
  expectOAuthError,
  ISSUER,
  jwtClaims,
  obtainTokensAs,
  postAs,
  registerClient,
  REVISIONS,
  type Harness,
  type TestClient,
} from '../helpers/harness.js';

const RAS = 'https://ras.example';
const RAS_RESOURCE = 'https://tools.example/mcp';

function idJagHarness(audiences: IdJagAudienceOptions[] = [{ issuer: RAS }]): Harness {
  return createHarness({ tokenExchange: { idJagAudiences: audiences } });
}

/** A confidential client of alice's, with her refresh token (scope `scope`). */
async function aliceClient(h: Harness, scope = 'mcp:tools mcp:admin'): Promise<{ client: TestClient; refresh: string; access: string }> {
  const client = await registerClient(h, { token_endpoint_auth_method: 'client_secret_basic' });
  const tokens = await obtainTokensAs(h, REVISIONS[1], client, { scope });
  return { client, refresh: tokens.refresh_token!, access: tokens.access_token! };
}

function askIdJag(h: Harness, client: TestClient, subjectToken: string, extra: Record<string, string | undefined> = {}): Promise<Response> {
  return postAs(h, '/token', client, {
    grant_type: TOKEN_EXCHANGE_GRANT_TYPE,
    requested_token_type: ID_JAG_TOKEN_TYPE,
    subject_token: subjectToken,
    subject_token_type: REFRESH_TOKEN_TYPE,
    audience: RAS,
    resource: RAS_RESOURCE,
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

describe('token exchange: issuing ID-JAGs', () => {
  it('signs an ID-JAG with our keys for an allowed audience: typ, iss, sub, aud, client_id, jti, iat, exp, resource, scope', async () => {
    const h = idJagHarness();
    const { client, refresh } = await aliceClient(h);
    const body = await ok(await askIdJag(h, client, refresh, { scope: 'mcp:tools' }));
    assert.equal(body.issued_token_type, ID_JAG_TOKEN_TYPE);
    assert.equal(body.token_type, 'N_A');
    assert.equal(body.expires_in, 300);
    assert.equal(body.scope, 'mcp:tools');
    const jwks = createLocalJWKSet(await h.server.keys.publicJwks());
    const { payload, protectedHeader } = await jwtVerify(String(body.access_token), jwks, { currentDate: new Date(h.clock.now * 1000) });
    assert.equal(protectedHeader.typ, 'oauth-id-jag+jwt');
    const user = await h.store.getUser({ username: 'alice' });
    assert.deepEqual(
      { ...payload, jti: typeof payload.jti },
      {
        iss: ISSUER,
        sub: user!.id,
        aud: RAS,
        client_id: client.client_id,
        jti: 'string',
        iat: h.clock.now,
        exp: h.clock.now + 300,
        resource: RAS_RESOURCE,
        scope: 'mcp:tools',
      },
    );
    // The refresh token is not spent: the client keeps it.
    const refreshed = await postAs(h, '/token', client, { grant_type: 'refresh_token', refresh_token: refresh });
    assert.equal(refreshed.status, 200);
    const event = h.log.find((entry) => entry.event === 'token_issued' && entry.profile === 'id-jag');
    assert.equal(event?.audience, RAS);
  });

  it('asserts every scope the person consented to when none is asked, never offline_access, and no more when one is (invalid_scope)', async () => {
    const h = idJagHarness();
    const { client, refresh } = await aliceClient(h, 'mcp:tools');
    assert.equal(jwtClaims((await ok(await askIdJag(h, client, refresh))).access_token).scope, 'mcp:tools');
    await refused(
      await askIdJag(h, client, refresh, { scope: 'mcp:tools mcp:admin' }),
      'invalid_scope',
      /beyond what the person consented to for this client: mcp:admin/,
    );
  });

  it('refuses an audience the operator did not name, or none (invalid_target, invalid_request)', async () => {
    const h = idJagHarness();
    const { client, refresh } = await aliceClient(h);
    await refused(await askIdJag(h, client, refresh, { audience: 'https://other-ras.example' }), 'invalid_target', /does not issue ID-JAGs for that audience/);
    await refused(await askIdJag(h, client, refresh, { audience: undefined }), 'invalid_request', /audience is required/);
  });

  it('issues only to the clients an audience names, under their client id there (unauthorized_client)', async () => {
    const h = createHarness({ tokenExchange: { idJagAudiences: [] } });
    const named = await registerClient(h, { token_endpoint_auth_method: 'client_secret_basic' });
    const mapped = idJagHarnessWith(h, { [named.client_id]: 'assistant-at-ras' });
    const tokens = await obtainTokensAs(mapped, REVISIONS[1], named);
    assert.equal(jwtClaims((await ok(await askIdJag(mapped, named, tokens.refresh_token!))).access_token).client_id, 'assistant-at-ras');
    const other = await registerClient(mapped, { token_endpoint_auth_method: 'client_secret_basic' });
    const otherTokens = await obtainTokensAs(mapped, REVISIONS[1], other);
    await refused(await askIdJag(mapped, other, otherTokens.refresh_token!), 'unauthorized_client', /may not ask for ID-JAGs for https:\/\/ras\.example/);
  });

  it('refuses another client’s refresh token, a revoked or expired one, and an access token as subject (invalid_grant, invalid_request)', async () => {
    const h = idJagHarness();
    const alice = await aliceClient(h);
    const thief = await registerClient(h, { token_endpoint_auth_method: 'client_secret_basic' });
    await refused(await askIdJag(h, thief, alice.refresh), 'invalid_grant', /not a refresh token this server issued to this client/);
    await refused(
      await askIdJag(h, alice.client, alice.access, { subject_token_type: ACCESS_TOKEN_TYPE }),
      'invalid_request',
      /issued for an ID token or a refresh token of this server/,
    );
    h.clock.now += 15 * 24 * 3600;
    await refused(await askIdJag(h, alice.client, alice.refresh), 'invalid_grant', /the subject token has expired/);
    h.clock.now -= 15 * 24 * 3600;
    assert.equal((await postAs(h, '/revoke', alice.client, { token: alice.refresh })).status, 200);
    await refused(await askIdJag(h, alice.client, alice.refresh), 'invalid_grant', /the subject token has been revoked/);
  });

  it('refuses a public client (unauthorized_client)', async () => {
    const h = idJagHarness();
    const client = await registerClient(h);
    const tokens = await obtainTokensAs(h, REVISIONS[1], client);
    await refused(await askIdJag(h, client, tokens.refresh_token!), 'unauthorized_client', /confidential clients only/);
  });

  it('carries the person’s email only to an audience configured to receive it', async () => {
    const h = idJagHarness([{ issuer: RAS, email: true }, { issuer: 'https://quiet.example' }]);
    await h.store.createUserWithIdentity(
      { id: 'user-alice', username: 'alice', passwordHash: await hashPassword('correct horse battery'), createdAt: h.clock.now },
      {
        issuer: 'https://corp.example',
        subject: 'a-1',
        provider: 'corp',
        userId: 'user-alice',
        email: 'alice@example.com',
        name: 'Alice',
        createdAt: h.clock.now,
      },
    );
    const { client, refresh } = await aliceClient(h);
    assert.equal(jwtClaims((await ok(await askIdJag(h, client, refresh))).access_token).email, 'alice@example.com');
    assert.equal(jwtClaims((await ok(await askIdJag(h, client, refresh, { audience: 'https://quiet.example' }))).access_token).email, undefined);
  });
});

/** A second server on `h`'s store and clock whose one audience maps `clients`. */
function idJagHarnessWith(h: Harness, clients: Record<string, string>): Harness {
  return createHarness({ store: h.store, tokenExchange: { idJagAudiences: [{ issuer: RAS, clients }] } });
}
