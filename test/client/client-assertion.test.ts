/**
 * private_key_jwt: the client assertion a token request carries (RFC 7523 §2.2), from each kind of
 * key a caller holds, and the key material never leaving in it or in an error.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { decodeProtectedHeader, exportPKCS8, generateKeyPair, jwtVerify, type JWK } from 'jose';
import type * as oauth from 'oauth4webapi';
import { checkServerAccepts, importSigningKey, privateKeyJwt } from '../../src/client/client-assertion.js';
import { ClientError } from '../../src/client/errors.js';
import { ContextClient } from '../../src/client/session.js';
import { MemoryTokenStore } from '../../src/client/token-store.js';

const ISSUER = 'https://as.example.com';
const AS: oauth.AuthorizationServer = { issuer: ISSUER, token_endpoint: `${ISSUER}/token` };
const CLIENT: oauth.Client = { client_id: 'robot-1', token_endpoint_auth_method: 'private_key_jwt' };

/** The body a token request would carry after authenticating with `auth`. */
async function authenticate(auth: oauth.ClientAuth): Promise<{ body: URLSearchParams; headers: Headers }> {
  const body = new URLSearchParams({ grant_type: 'client_credentials' });
  const headers = new Headers();
  await auth(AS, CLIENT, body, headers);
  return { body, headers };
}

describe('private_key_jwt client assertion', () => {
  it('from a PEM key: signed ES256, iss = sub = client id, aud = issuer, a jti, short-lived, the JWT bearer assertion type', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const pem = await exportPKCS8(privateKey);
    const signing = await importSigningKey(pem);
    assert.equal(signing.alg, 'ES256');
    const { body, headers } = await authenticate(privateKeyJwt(signing));

    assert.equal(body.get('client_assertion_type'), 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
    assert.equal(body.get('client_id'), CLIENT.client_id);
    const assertion = body.get('client_assertion') ?? '';
    const { payload, protectedHeader } = await jwtVerify(assertion, publicKey, { issuer: CLIENT.client_id, subject: CLIENT.client_id, audience: ISSUER });
    assert.equal(protectedHeader.alg, 'ES256');
    assert.equal(protectedHeader.kid, undefined, 'no kid unless one is given');
    assert.equal(typeof payload.jti, 'string');
    assert.ok((payload.jti as string).length >= 16, 'the jti is not guessable');
    assert.ok(typeof payload.iat === 'number' && typeof payload.exp === 'number');
    assert.ok(payload.exp > payload.iat && payload.exp - payload.iat <= 300, `expires within 5 minutes (${payload.exp - payload.iat}s)`);
    assert.ok(Math.abs(payload.iat - Date.now() / 1000) < 30, 'issued now');

    // Neither the key nor anything of it is sent: only the signed assertion, no secret header.
    const pemBody = pem.replace(/-----[^-]+-----|\s/g, '');
    assert.ok(!body.toString().includes(pemBody.slice(0, 40)), 'the key is not in the body');
    assert.equal(headers.get('authorization'), null);
    const jwk = (await crypto.subtle.exportKey('jwk', privateKey)) as JWK;
    assert.ok(!decodeURIComponent(body.toString()).includes(jwk.d!), 'the private scalar is not in the body');
  });

  it('a fresh assertion for every request: a new jti each time', async () => {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const auth = privateKeyJwt(await importSigningKey(privateKey));
    const jtis = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const { body } = await authenticate(auth);
      const [, payload] = (body.get('client_assertion') ?? '').split('.');
      jtis.add(JSON.parse(Buffer.from(payload!, 'base64url').toString()).jti);
    }
    assert.equal(jtis.size, 5);
  });

  it('names the key with kid when given one', async () => {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const { body } = await authenticate(privateKeyJwt(await importSigningKey(privateKey), 'key-2026'));
    assert.equal(decodeProtectedHeader(body.get('client_assertion') ?? '').kid, 'key-2026');
  });

  it('takes a KeyObject, a private JWK, and an algorithm the caller chooses; each signs with the algorithm it says', async () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const ed = generateKeyPairSync('ed25519');
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' });
    const cases: Array<[Parameters<typeof importSigningKey>, string, import('node:crypto').KeyObject]> = [
      [[rsa.privateKey], 'RS256', rsa.publicKey],
      [[rsa.privateKey, 'PS384'], 'PS384', rsa.publicKey],
      [[ed.privateKey.export({ format: 'jwk' }) as JWK], 'EdDSA', ed.publicKey],
      [[ed.privateKey, 'Ed25519'], 'Ed25519', ed.publicKey],
      [[p384.privateKey.export({ format: 'pem', type: 'sec1' }) as string], 'ES384', p384.publicKey],
    ];
    for (const [args, alg, publicKey] of cases) {
      const signing = await importSigningKey(...args);
      assert.equal(signing.alg, alg);
      const { body } = await authenticate(privateKeyJwt(signing));
      const { protectedHeader } = await jwtVerify(body.get('client_assertion') ?? '', publicKey, { audience: ISSUER });
      assert.equal(protectedHeader.alg, alg);
    }
  });

  it('refuses a public key, an algorithm the key cannot make, and an unreadable key, without echoing the key', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    await assert.rejects(importSigningKey(publicKey), (error: Error) => error instanceof ClientError && /private key/.test(error.message));
    await assert.rejects(importSigningKey(privateKey, 'RS256'), (error: Error) => error instanceof ClientError && /ES256, not RS256/.test(error.message));
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    await assert.rejects(importSigningKey(rsa, 'ES256'), (error: Error) => error instanceof ClientError && /cannot sign with ES256/.test(error.message));
    const broken = '-----BEGIN PRIVATE KEY-----\nTUlJQnNlY3JldG1hdGVyaWFsbm90YWtleQ==\n-----END PRIVATE KEY-----\n';
    await assert.rejects(importSigningKey(broken), (error: Error) => error instanceof ClientError && !error.message.includes('TUlJQnNlY3JldG1hdGVyaWFs'));
  });

  it('refuses an authorization server that lists neither private_key_jwt nor the key algorithm', () => {
    assert.doesNotThrow(() => checkServerAccepts(AS, 'ES256'), 'a server that lists nothing is not second-guessed');
    assert.doesNotThrow(() =>
      checkServerAccepts(
        { ...AS, token_endpoint_auth_methods_supported: ['private_key_jwt'], token_endpoint_auth_signing_alg_values_supported: ['ES256'] },
        'ES256',
      ),
    );
    assert.throws(
      () => checkServerAccepts({ ...AS, token_endpoint_auth_methods_supported: ['client_secret_basic'] }, 'ES256'),
      /does not accept private_key_jwt/,
    );
    assert.throws(() => checkServerAccepts({ ...AS, token_endpoint_auth_signing_alg_values_supported: ['RS256'] }, 'ES256'), /signed with ES256/);
  });

  it('ContextClient takes a private key only for the client credentials grant, with a client id, and not beside a secret', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const base = { serverUrl: 'https://mcp.example.com/mcp', store: new MemoryTokenStore(), privateKey };
    assert.throws(() => new ContextClient({ ...base, clientId: 'robot-1' }), /client_credentials/);
    assert.throws(() => new ContextClient({ ...base, grantType: 'client_credentials' }), /clientId/);
    assert.throws(() => new ContextClient({ ...base, grantType: 'client_credentials', clientId: 'robot-1', clientSecret: 's' }), /not both/);
    assert.doesNotThrow(() => new ContextClient({ ...base, grantType: 'client_credentials', clientId: 'robot-1' }));
  });
});
