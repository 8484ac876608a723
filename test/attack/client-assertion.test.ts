/**
 * Attacks on private_key_jwt client authentication (RFC 7523 §3, RFC 8725 §2.1/§3.1): a captured
 * client assertion replayed (at the same server and at a second server on the same store), and
 * an attacker who knows the client's public key forging one with `alg: none`, with HMAC keyed by
 * that public key, with a key of its own carried in the header, or under the client's `kid`.
 * Audience injection (draft-ietf-oauth-rfc7523bis): a malicious authorization server the client
 * also talks to gets assertions made for itself whose `aud` names us too (our token endpoint URL,
 * which its metadata claimed as its own, or a list naming both of us) and presents them here.
 * Each is refused with invalid_client, and the store proves that nothing was issued.
 */
import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { it } from 'node:test';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient as createClient } from '../../src/authorization-server/clients.js';
import { jwtSigner } from '../../src/core/jwt.js';
import { expectOAuthError, ISSUER, postForm, type Harness } from '../helpers/harness.js';
import { assertUnchanged, expectServed, ISSUED, onEveryStore, whoami, type AttackEnv } from './setup.js';

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

interface Robot {
  clientId: string;
  publicKey: KeyObject;
  publicJwk: Record<string, unknown>;
  sign(claims?: Record<string, unknown>, key?: KeyObject): string;
}

async function addRobot(h: Harness): Promise<Robot> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const publicJwk = { ...publicKey.export({ format: 'jwk' }), kid: 'robot-key' };
  const valid = validateClientMetadata(
    { client_name: 'robot', token_endpoint_auth_method: 'private_key_jwt', grant_types: ['client_credentials'], jwks: { keys: [publicJwk] } },
    h.server.metadata.scopes_supported,
  );
  const { client } = await createClient(h.store, valid, h.clock.now, { registeredBy: 'admin' });
  const claimsOf = (extra: Record<string, unknown>) => ({
    iss: client.clientId,
    sub: client.clientId,
    aud: ISSUER,
    jti: randomUUID(),
    iat: h.clock.now,
    exp: h.clock.now + 60,
    ...extra,
  });
  return {
    clientId: client.clientId,
    publicKey,
    publicJwk,
    sign: (claims = {}, key = privateKey) => jwtSigner({ alg: 'ES256', kid: 'robot-key', typ: 'JWT' }, key)(claimsOf(claims)),
  };
}

function tokenRequest(h: Harness, assertion: string): Promise<Response> {
  return postForm(h, '/token', { grant_type: 'client_credentials', client_assertion_type: ASSERTION_TYPE, client_assertion: assertion });
}

/** The HMAC "signature" an attacker makes with the client's public key as the secret. */
function hmacWith(secret: string | Buffer, header: Record<string, unknown>, claims: Record<string, unknown>): string {
  const input = `${b64(header)}.${b64(claims)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

/** An ES256 JWT with a header of the attacker's choosing, truly signed by `key`. */
function signedWithHeader(header: Record<string, unknown>, claims: Record<string, unknown>, key: KeyObject): string {
  const input = `${b64(header)}.${b64(claims)}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

onEveryStore('client assertion replay and algorithm confusion', (env) => {
  it('a valid assertion gets a token that /mcp serves (the control)', async () => {
    const h = await env.target();
    const robot = await addRobot(h);
    const response = await tokenRequest(h, robot.sign());
    assert.equal(response.status, 200, await response.clone().text());
    const { access_token: token } = (await response.json()) as { access_token: string };
    await expectServed(await whoami(h, `Bearer ${token}`));
  });

  it('a captured assertion replayed is refused, and issues nothing', async () => {
    const h = await env.target();
    const robot = await addRobot(h);
    const captured = robot.sign();
    assert.equal((await tokenRequest(h, captured)).status, 200);
    const before = await env.counts();
    const body = await expectOAuthError(await tokenRequest(h, captured), 401, 'invalid_client');
    assert.match(body.error_description ?? '', /used before/);
    assertUnchanged(before, await env.counts(), ISSUED, 'replayed client assertion');
  });

  it('a captured assertion replayed at a second server on the same store is refused', async () => {
    const first = await env.target();
    const robot = await addRobot(first);
    const second = await env.target();
    const captured = robot.sign();
    assert.equal((await tokenRequest(first, captured)).status, 200);
    const before = await env.counts();
    await expectOAuthError(await tokenRequest(second, captured), 401, 'invalid_client');
    assertUnchanged(before, await env.counts(), ISSUED, 'client assertion replayed at another server');
  });

  it('forgeries made with the public key alone are refused, and issue nothing', async () => {
    const h = await env.target();
    const robot = await addRobot(h);
    const claims = { iss: robot.clientId, sub: robot.clientId, aud: ISSUER, jti: randomUUID(), exp: h.clock.now + 60 };
    const attacker = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const forgeries: [string, string, RegExp][] = [
      ['alg none', `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`, /alg none is never accepted/],
      [
        'HS256 keyed with the PEM public key',
        hmacWith(robot.publicKey.export({ format: 'pem', type: 'spki' }), { alg: 'HS256', kid: 'robot-key' }, claims),
        /algorithm that is not accepted/,
      ],
      ['HS256 keyed with the JWK', hmacWith(JSON.stringify(robot.publicJwk), { alg: 'HS256', kid: 'robot-key' }, claims), /algorithm that is not accepted/],
      [
        'HS256 keyed with the DER public key',
        hmacWith(robot.publicKey.export({ format: 'der', type: 'spki' }), { alg: 'HS256', kid: 'robot-key' }, claims),
        /algorithm that is not accepted/,
      ],
      [
        "an attacker's key carried in the header (jwk)",
        signedWithHeader({ alg: 'ES256', kid: 'robot-key', jwk: attacker.publicKey.export({ format: 'jwk' }) }, claims, attacker.privateKey),
        /signature does not verify/,
      ],
      ["an attacker's key under the client's kid", robot.sign({}, attacker.privateKey), /signature does not verify/],
    ];
    const before = await env.counts();
    for (const [label, assertion, description] of forgeries) {
      const body = await expectOAuthError(await tokenRequest(h, assertion), 401, 'invalid_client');
      assert.match(body.error_description ?? '', description, label);
    }
    assertUnchanged(before, await env.counts(), ISSUED, 'forged client assertions');
  });
});

/** What the attacker, another authorization server the robot uses, holds after the robot authenticated to it. */
function injectedAssertions(robot: Robot): [string, string, RegExp, RegExp][] {
  const evil = 'https://evil-as.example';
  return [
    // Its metadata named our token endpoint as its own: a client that takes the token endpoint URL for
    // the audience signs ours, and sends it to whichever endpoint of the attacker it was calling.
    [
      'aud: our token endpoint URL',
      robot.sign({ aud: `${ISSUER}/token` }),
      /aud does not name this authorization server: it must be the issuer identifier/,
      /or the token endpoint URL/,
    ],
    // A client that lists every name it knows for the server it talks to, ours among them.
    [
      'aud: a list naming the attacker and us',
      robot.sign({ aud: [evil, ISSUER] }),
      /aud must be a single string, not a list/,
      /names another audience beside this authorization server/,
    ],
    [
      'aud: a list naming the attacker and our token endpoint',
      robot.sign({ aud: [evil, `${ISSUER}/token`] }),
      /aud does not name this authorization server/,
      /names another audience beside this authorization server/,
    ],
  ];
}

async function expectInjectionRefused(env: AttackEnv, compatible: boolean): Promise<void> {
  const h = await env.target(compatible ? { clientAssertionAudience: 'issuer-or-token-endpoint' } : {});
  const robot = await addRobot(h);
  const before = await env.counts();
  for (const [label, assertion, byDefault, whenCompatible] of injectedAssertions(robot)) {
    if (compatible && label === 'aud: our token endpoint URL') continue;
    const body = await expectOAuthError(await tokenRequest(h, assertion), 401, 'invalid_client');
    assert.match(body.error_description ?? '', compatible ? whenCompatible : byDefault, label);
  }
  // Refused before its jti was spent: nothing of the attempts is left in the store.
  assertUnchanged(before, await env.counts(), [...ISSUED, 'used_assertions'], 'injected client assertions');
  // The robot's own assertion, naming our issuer, still works.
  assert.equal((await tokenRequest(h, robot.sign())).status, 200);
}

onEveryStore('client assertion audience injection', (env) => {
  it('an assertion made for another server, naming our token endpoint or listing us beside it, is refused and issues nothing', async () => {
    await expectInjectionRefused(env, false);
  });

  it('with clientAssertionAudience issuer-or-token-endpoint, a list naming the other server beside us is still refused', async () => {
    await expectInjectionRefused(env, true);
  });
});
