/**
 * Attacks on the jwt-bearer grant with ID-JAGs (RFC 7523 §3, RFC 8725), on each real store:
 * - replay: an ID-JAG already exchanged is presented again, at the same server and at a second
 *   server on the same store (a replica): refused, and nothing is issued;
 * - algorithm confusion: an ID-JAG signed with HS256 keyed with the IdP's published public key
 *   (what a verifier that takes the key's bytes as an HMAC secret would accept): refused, while
 *   the same claims signed properly pass;
 * - audience injection: an ID-JAG the IdP issued for another authorization server as well as us
 *   (`aud` a list of both), or for our token endpoint URL, presented here by that other server's
 *   side: refused, and nothing is issued or spent.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, it } from 'node:test';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient as createClient } from '../../src/authorization-server/clients.js';
import { JWT_BEARER_GRANT_TYPE } from '../../src/core/protocol.js';
import type { CoHosted } from '../helpers/co-hosted.js';
import { startTestIssuer, type TestIssuer } from '../helpers/enterprise-idp.js';
import { basic, form, ISSUER, RESOURCE } from '../helpers/harness.js';
import { assertUnchanged, ISSUED, onEveryStore } from './setup.js';

let idp: TestIssuer;
before(async () => {
  idp = await startTestIssuer();
});
after(async () => {
  await idp.close();
});

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
let counter = 0;

async function jagClient(target: CoHosted): Promise<{ id: string; secret: string }> {
  const valid = validateClientMetadata(
    { token_endpoint_auth_method: 'client_secret_basic', grant_types: [JWT_BEARER_GRANT_TYPE] },
    target.server.metadata.scopes_supported,
  );
  const { client, clientSecret } = await createClient(target.store, valid, target.clock.now, { registeredBy: 'admin' });
  return { id: client.clientId, secret: clientSecret! };
}

function claims(target: CoHosted, clientId: string): Record<string, unknown> {
  return {
    iss: idp.issuer,
    sub: 'employee-9',
    aud: ISSUER,
    resource: RESOURCE,
    client_id: clientId,
    jti: `attack-${++counter}-${Math.random()}`,
    iat: target.clock.now,
    exp: target.clock.now + 300,
  };
}

function present(target: CoHosted, client: { id: string; secret: string }, assertion: string): Promise<Response> {
  return target.server.handle(
    new Request(`${ISSUER}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(client.id, client.secret) },
      body: form({ grant_type: JWT_BEARER_GRANT_TYPE, assertion }),
    }),
  );
}

async function expectInvalidGrant(response: Response, pattern: RegExp): Promise<void> {
  const body = (await response.json()) as { error: string; error_description: string };
  assert.equal(response.status, 400);
  assert.equal(body.error, 'invalid_grant');
  assert.match(body.error_description, pattern);
}

onEveryStore('ID-JAG replay', ({ target, counts }) => {
  it('refuses an ID-JAG presented again, at the same server and at a replica on the same store', async () => {
    const options = { trustedIdps: [idp.issuer], allowInsecureIssuers: true };
    const first = await target(options);
    const replica = await target(options);
    const client = await jagClient(first);
    const jag = await idp.sign(claims(first, client.id), { typ: 'oauth-id-jag+jwt' });
    assert.equal((await present(first, client, jag)).status, 200);
    const before = await counts();
    await expectInvalidGrant(await present(first, client, jag), /used before/);
    await expectInvalidGrant(await present(replica, client, jag), /used before/);
    assertUnchanged(before, await counts(), ISSUED, 'a replayed ID-JAG');
  });
});

onEveryStore('ID-JAG algorithm confusion', ({ target, counts }) => {
  it('refuses HS256 keyed with the IdP’s public key; the same claims signed with the IdP’s key pass', async () => {
    const server = await target({ trustedIdps: [idp.issuer], allowInsecureIssuers: true });
    const client = await jagClient(server);
    const forgedClaims = claims(server, client.id);
    const before = await counts();
    for (const secret of [JSON.stringify(idp.publicJwk), idp.publicJwk.n!, Buffer.from(idp.publicJwk.n!, 'base64url').toString('latin1')]) {
      const input = `${b64({ alg: 'HS256', typ: 'oauth-id-jag+jwt', kid: 'key-1' })}.${b64({ ...forgedClaims, jti: `${forgedClaims.jti as string}-${secret.length}` })}`;
      const forged = `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
      await expectInvalidGrant(await present(server, client, forged), /algorithm that is not accepted/);
    }
    assertUnchanged(before, await counts(), ISSUED, 'an HS256 ID-JAG');
    assert.equal((await present(server, client, await idp.sign(forgedClaims, { typ: 'oauth-id-jag+jwt' }))).status, 200);
  });
});

onEveryStore('ID-JAG audience injection', ({ target, counts }) => {
  it('refuses an ID-JAG whose aud names another authorization server beside us, or our token endpoint URL', async () => {
    const server = await target({ trustedIdps: [idp.issuer], allowInsecureIssuers: true });
    const client = await jagClient(server);
    const before = await counts();
    const shared = await idp.sign({ ...claims(server, client.id), aud: ['https://other-as.example', ISSUER] }, { typ: 'oauth-id-jag+jwt' });
    await expectInvalidGrant(await present(server, client, shared), /names another audience beside this authorization server/);
    const endpoint = await idp.sign({ ...claims(server, client.id), aud: `${ISSUER}/token` }, { typ: 'oauth-id-jag+jwt' });
    await expectInvalidGrant(await present(server, client, endpoint), /aud does not name this authorization server: it must be the issuer identifier/);
    assertUnchanged(before, await counts(), [...ISSUED, 'used_assertions'], 'an ID-JAG for another audience too');
    assert.equal((await present(server, client, await idp.sign(claims(server, client.id), { typ: 'oauth-id-jag+jwt' }))).status, 200);
  });
});
