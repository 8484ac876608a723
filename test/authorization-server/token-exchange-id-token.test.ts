/**
 * An ID-JAG for a person's ID token of ours (subject_token_type id_token): the token must be ours,
 * unexpired, issued to the client that presents it, of a grant still standing; the ID-JAG then
 * says what it says for a refresh token, and asserts no more than the person consented to.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { generateKeyPair, SignJWT } from 'jose';
import { ID_JAG_TOKEN_TYPE, ID_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT_TYPE } from '../../src/core/id-jag.js';
import { ID_TOKEN_LIFETIME_SECONDS } from '../../src/authorization-server/id-tokens.js';
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

function idJagHarness(): Harness {
  return createHarness({ tokenExchange: { idJagAudiences: [{ issuer: RAS }] } });
}

/** A confidential client of alice's, with her tokens granted `scope`. */
async function aliceClient(h: Harness, scope = 'openid mcp:tools'): Promise<{ client: TestClient; tokens: Record<string, string> }> {
  const client = await registerClient(h, { token_endpoint_auth_method: 'client_secret_basic' });
  return { client, tokens: await obtainTokensAs(h, REVISIONS[1], client, { scope }) };
}

function askIdJag(h: Harness, client: TestClient, idToken: string, extra: Record<string, string> = {}): Promise<Response> {
  return postAs(h, '/token', client, {
    grant_type: TOKEN_EXCHANGE_GRANT_TYPE,
    requested_token_type: ID_JAG_TOKEN_TYPE,
    subject_token: idToken,
    subject_token_type: ID_TOKEN_TYPE,
    audience: RAS,
    ...extra,
  });
}

async function refused(response: Response, description: RegExp, error = 'invalid_grant'): Promise<void> {
  const body = await expectOAuthError(response, 400, error);
  assert.match(body.error_description ?? '', description);
}

describe('token exchange: an ID-JAG for an ID token', () => {
  it('is issued for an ID token of ours presented by its client: the person as sub, the consented scopes', async () => {
    const h = idJagHarness();
    const { client, tokens } = await aliceClient(h);
    const response = await askIdJag(h, client, tokens.id_token!);
    const text = await response.text();
    assert.equal(response.status, 200, text);
    const body = JSON.parse(text) as Record<string, string>;
    assert.equal(body.issued_token_type, ID_JAG_TOKEN_TYPE);
    // The OpenID scopes let this client learn who the person is here; they grant nothing there.
    assert.equal(body.scope, 'mcp:tools');
    const { payload, protectedHeader } = await jwtVerify(body.access_token!, createLocalJWKSet(await h.server.keys.publicJwks()), {
      issuer: ISSUER,
      audience: RAS,
      currentDate: new Date(h.clock.now * 1000),
    });
    assert.equal(protectedHeader.typ, 'oauth-id-jag+jwt');
    assert.equal(payload.sub, jwtClaims(tokens.id_token).sub);
    assert.equal(payload.client_id, client.client_id);
    await refused(
      await askIdJag(h, client, tokens.id_token!, { scope: 'mcp:admin' }),
      /beyond what the person consented to for this client: mcp:admin/,
      'invalid_scope',
    );
    await refused(await askIdJag(h, client, tokens.id_token!, { scope: 'openid mcp:tools' }), /an ID-JAG asserts no OpenID scope \(openid\)/, 'invalid_scope');
  });

  it('is refused for an expired ID token', async () => {
    const h = idJagHarness();
    const { client, tokens } = await aliceClient(h);
    h.clock.now += ID_TOKEN_LIFETIME_SECONDS;
    await refused(await askIdJag(h, client, tokens.id_token!), /the subject token has expired/);
  });

  it("is refused for another client's ID token", async () => {
    const h = idJagHarness();
    const { tokens } = await aliceClient(h);
    const other = await registerClient(h, { token_endpoint_auth_method: 'client_secret_basic' });
    await refused(await askIdJag(h, other, tokens.id_token!), /an ID token issued to another client/);
  });

  it('is refused for an ID token signed with a key not ours, whatever it claims', async () => {
    const h = idJagHarness();
    const { client, tokens } = await aliceClient(h);
    const ours = jwtClaims(tokens.id_token);
    const header = JSON.parse(Buffer.from(tokens.id_token!.split('.')[0]!, 'base64url').toString()) as { alg: string; kid: string; typ: string };
    const { privateKey } = await generateKeyPair(header.alg);
    const forged = await new SignJWT(ours).setProtectedHeader(header).sign(privateKey);
    await refused(await askIdJag(h, client, forged), /not an ID token this server issued/);
    // An access token of ours is no ID token either (typ at+jwt).
    await refused(await askIdJag(h, client, tokens.access_token!), /not an ID token this server issued/);
  });

  it('is refused once the grant the ID token was issued with is revoked', async () => {
    const h = idJagHarness();
    const { client, tokens } = await aliceClient(h);
    await h.store.revokeGrant(String(jwtClaims(tokens.id_token).grant_id), h.clock.now);
    await refused(await askIdJag(h, client, tokens.id_token!), /the subject token has been revoked/);
  });
});
