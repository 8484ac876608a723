/**
 * Compact JWTs with node:crypto key objects (src/core/jwt.ts): tokens we sign verify with jose,
 * tokens jose signs verify with ours, for every algorithm we support; and each strict check —
 * compact form, header, algorithm bound to the key, time claims — refuses what it must.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign as cryptoSign, type KeyObject } from 'node:crypto';
import { describe, it } from 'node:test';
import { compactVerify, jwtVerify, SignJWT } from 'jose';
import {
  jwkFits,
  jwtHeaderProblem,
  jwtSigner,
  jwtTimeProblem,
  parseCompactJwt,
  privateKeyFromJwk,
  verificationKey,
  verificationKeyFromJwk,
  verifyJwtSignature,
} from '../../src/core/jwt.js';

const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

function pair(alg: string): { privateKey: KeyObject; publicKey: KeyObject } {
  if (alg.startsWith('ES')) return generateKeyPairSync('ec', { namedCurve: { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' }[alg]! });
  if (alg.startsWith('RS') || alg.startsWith('PS')) return generateKeyPairSync('rsa', { modulusLength: 2048 });
  return generateKeyPairSync('ed25519');
}

const now = 1_800_000_000;
const claims = {
  client_id: 'c1',
  scope: 'mcp:tools',
  iss: 'https://as.example',
  sub: 'alice',
  aud: 'https://rs.example/mcp',
  jti: 'j1',
  iat: now,
  exp: now + 600,
};
const ALGS = ['ES256', 'ES384', 'ES512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'EdDSA'];

/** A token over `header` and `payload`, signed by `sign` over the exact signing input. */
function assemble(header: unknown, payload: unknown, sign: (input: Buffer) => Buffer): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${sign(Buffer.from(input)).toString('base64url')}`;
}

describe('JWT: interoperability with jose', () => {
  for (const alg of ALGS) {
    it(`${alg}: ours verify with jose's jwtVerify, jose's verify with ours`, async () => {
      const { privateKey, publicKey } = pair(alg);
      const ours = jwtSigner({ alg, kid: 'k1', typ: 'at+jwt' }, privateKey)(claims);
      const { payload, protectedHeader } = await jwtVerify(ours, publicKey, {
        algorithms: [alg],
        typ: 'at+jwt',
        issuer: claims.iss,
        audience: claims.aud,
        currentDate: new Date(now * 1000),
      });
      assert.deepEqual(payload, claims);
      assert.deepEqual(protectedHeader, { alg, kid: 'k1', typ: 'at+jwt' });

      const theirs = await new SignJWT(claims).setProtectedHeader({ alg, kid: 'k1', typ: 'at+jwt' }).sign(privateKey);
      const parsed = parseCompactJwt(theirs)!;
      assert.ok(verifyJwtSignature(parsed, verificationKey(publicKey, alg)));
      assert.deepEqual(parsed.claims, claims);
      // And through the JWK a JWKS publishes.
      const key = verificationKeyFromJwk({ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg, use: 'sig' }, alg);
      assert.ok(verifyJwtSignature(parsed, key));
    });
  }

  it('a signer from a private JWK (as the store keeps it) makes what jose verifies, header encoded once per key', async () => {
    const { privateKey, publicKey } = pair('ES256');
    const sign = jwtSigner({ alg: 'ES256', kid: 'k9', typ: 'at+jwt' }, privateKeyFromJwk(privateKey.export({ format: 'jwk' }), 'ES256'));
    const [one, two] = [sign(claims), sign({ ...claims, jti: 'j2' })];
    assert.equal(one.split('.')[0], two.split('.')[0]);
    assert.equal((await compactVerify(two, publicKey)).protectedHeader.kid, 'k9');
  });

  it('a key that does not fit the algorithm is refused when the signer or verifier is made', () => {
    assert.throws(() => jwtSigner({ alg: 'ES384', kid: 'k', typ: 'at+jwt' }, pair('ES256').privateKey));
    assert.throws(() => jwtSigner({ alg: 'RS256', kid: 'k', typ: 'at+jwt' }, pair('ES256').privateKey));
    assert.throws(() => jwtSigner({ alg: 'HS256', kid: 'k', typ: 'at+jwt' }, pair('ES256').privateKey));
    assert.throws(() => verificationKey(pair('ES256').publicKey, 'ES384'));
    assert.throws(() => verificationKey(pair('EdDSA').publicKey, 'ES256'));
    assert.throws(() => verificationKey(generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey, 'RS256'), 'RSA under 2048 bits');
    // A private key (or a JWK with its private part) is never a verification key.
    const { privateKey } = pair('ES256');
    assert.throws(() => verificationKey(privateKey, 'ES256'));
    assert.throws(() => verificationKeyFromJwk(privateKey.export({ format: 'jwk' }), 'ES256'));
  });
});

describe('JWT: compact serialization, strictly', () => {
  const { privateKey } = pair('ES256');
  const token = jwtSigner({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' }, privateKey)(claims);
  const [h, p, s] = token.split('.') as [string, string, string];

  it('parses a well-formed token', () => {
    const parsed = parseCompactJwt(token)!;
    assert.deepEqual(parsed.header, { alg: 'ES256', kid: 'k1', typ: 'at+jwt' });
    assert.equal(parsed.signingInput, `${h}.${p}`);
    assert.equal(parsed.signature.length, 64);
  });

  it('refuses anything but three base64url segments: padding, whitespace, +/ , empty or extra parts', () => {
    for (const bad of [
      `${h}.${p}`,
      `${h}.${p}.${s}.${s}`,
      `${h}.${p}.`,
      `.${p}.${s}`,
      `${h}..${s}`,
      `${h}=.${p}.${s}`,
      `${h}.${p}=.${s}`,
      `${h}.${p}.${s}=`,
      `${h} .${p}.${s}`,
      `${h}.${p}.${s}\n`,
      ` ${token}`,
      `${h}.${p.slice(0, -1)}+.${s}`,
      `${h}.${p}.${s.slice(0, -1)}/`,
      `${h}.${p}.${s}AAA`, // 4n + 1 characters: no encoding is that long
    ]) {
      assert.equal(parseCompactJwt(bad), undefined, JSON.stringify(bad));
    }
  });

  it('refuses a segment of 4n + 1 characters, which Buffer would read by dropping the last one', () => {
    // A header whose JSON is a multiple of 3 bytes encodes without a partial group: one more character is stray.
    let json = JSON.stringify({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' });
    while (json.length % 3 !== 0) json += ' ';
    const header = b64(json);
    assert.equal(header.length % 4, 0);
    assert.ok(parseCompactJwt(`${header}.${p}.${s}`));
    assert.equal(parseCompactJwt(`${header}A.${p}.${s}`), undefined);
  });

  it('refuses a signature spelled non-canonically (the same bytes, another string)', () => {
    // 64 bytes are 86 characters, the last carrying 2 unused bits: set one of them.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(s.at(-1)!);
    const respelled = `${s.slice(0, -1)}${alphabet[last | 1]}`;
    assert.notEqual(respelled, s);
    assert.deepEqual(Buffer.from(respelled, 'base64url'), Buffer.from(s, 'base64url'));
    assert.equal(parseCompactJwt(`${h}.${p}.${respelled}`), undefined);
  });

  it("refuses any segment length's stray bits in the signature: 4n + 3 characters leave 2 unused", () => {
    // 65 bytes are 87 characters; the check is on the spelling, so the length need not fit an algorithm.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const signature = Buffer.alloc(65, 0x5a).toString('base64url');
    assert.equal(signature.length % 4, 3);
    assert.ok(parseCompactJwt(`${h}.${p}.${signature}`));
    for (const bit of [1, 2]) {
      const respelled = `${signature.slice(0, -1)}${alphabet[alphabet.indexOf(signature.at(-1)!) | bit]}`;
      assert.equal(parseCompactJwt(`${h}.${p}.${respelled}`), undefined, respelled.slice(-2));
    }
    // Every last character of a 4n + 2 spelling with any of its 4 unused bits set.
    const short = Buffer.alloc(64, 0x5a).toString('base64url');
    for (const bit of [1, 2, 4, 8]) {
      const respelled = `${short.slice(0, -1)}${alphabet[alphabet.indexOf(short.at(-1)!) | bit]}`;
      assert.equal(parseCompactJwt(`${h}.${p}.${respelled}`), undefined, respelled.slice(-2));
    }
  });

  it('reuses a known header only for the exact same header segment', () => {
    const known = new Map([[h, { alg: 'ES256', kid: 'from-the-map', typ: 'at+jwt' }]]);
    assert.equal(parseCompactJwt(`${h}.${p}.${s}`, known)!.header.kid, 'from-the-map');
    const other = b64(JSON.stringify({ alg: 'ES256', kid: 'k2', typ: 'at+jwt' }));
    assert.equal(parseCompactJwt(`${other}.${p}.${s}`, known)!.header.kid, 'k2');
  });

  it('refuses a header or claims that are not a JSON object in UTF-8', () => {
    for (const [header, payload] of [
      [b64('[1]'), p],
      [b64('"ES256"'), p],
      [b64('null'), p],
      [b64('{"alg":'), p],
      [h, b64('[]')],
      [h, b64('42')],
      [h, Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]).toString('base64url')], // {"\xff":1}
    ]) {
      assert.equal(parseCompactJwt(`${header}.${payload}.${s}`), undefined, `${header}.${payload}`);
    }
  });
});

describe('JWT: header', () => {
  it('accepts the algorithms we verify, at+jwt in any case and with application/', () => {
    for (const typ of ['at+jwt', 'AT+JWT', 'application/at+jwt']) assert.equal(jwtHeaderProblem({ alg: 'ES256', kid: 'k', typ }, { typ: 'at+jwt' }), undefined);
  });

  it('refuses none, HMAC, unknown or prototype names as alg', () => {
    for (const alg of ['none', 'None', 'HS256', 'HS384', 'HS512', 'ES256K', '__proto__', 'constructor', '', undefined, 256]) {
      assert.ok(jwtHeaderProblem({ alg, kid: 'k', typ: 'at+jwt' }), String(alg));
    }
  });

  it('refuses another typ, or none, when one is expected', () => {
    for (const typ of ['JWT', 'jwt', 'application/jwt', 'id_token+jwt', 'at+jwt ', 1, undefined]) {
      assert.ok(jwtHeaderProblem({ alg: 'ES256', kid: 'k', typ }, { typ: 'at+jwt' }), String(typ));
    }
  });

  it('refuses crit (we understand no extension) and a kid that is not a string', () => {
    assert.ok(jwtHeaderProblem({ alg: 'ES256', kid: 'k', typ: 'at+jwt', crit: ['exp'], exp: 1 }));
    assert.ok(jwtHeaderProblem({ alg: 'ES256', kid: 'k', typ: 'at+jwt', crit: ['b64'], b64: true }));
    assert.ok(jwtHeaderProblem({ alg: 'ES256', kid: 'k', typ: 'at+jwt', crit: [] }));
    assert.ok(jwtHeaderProblem({ alg: 'ES256', kid: 7, typ: 'at+jwt' }));
  });
});

describe("JWT: the algorithm is the key's, not the token's", () => {
  const { privateKey, publicKey } = pair('ES256');
  const key = verificationKey(publicKey, 'ES256');

  it('refuses a token whose header names another algorithm than the key, though its signature is valid for the key', () => {
    // A genuine ES256 signature by the right key, under a header claiming ES384 or RS256.
    for (const alg of ['ES384', 'RS256', 'EdDSA']) {
      const token = assemble({ alg, kid: 'k1', typ: 'at+jwt' }, claims, (input) => cryptoSign('sha256', input, { key: privateKey, dsaEncoding: 'ieee-p1363' }));
      assert.equal(verifyJwtSignature(parseCompactJwt(token)!, key), false, alg);
    }
    const control = assemble({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' }, claims, (input) =>
      cryptoSign('sha256', input, { key: privateKey, dsaEncoding: 'ieee-p1363' }),
    );
    assert.equal(verifyJwtSignature(parseCompactJwt(control)!, key), true);
  });

  it('refuses an ES256 signature that is not 64 bytes (DER-encoded, padded)', () => {
    const der = assemble({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' }, claims, (input) => cryptoSign('sha256', input, privateKey));
    assert.equal(verifyJwtSignature(parseCompactJwt(der)!, key), false);
    const padded = assemble({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' }, claims, (input) =>
      Buffer.concat([cryptoSign('sha256', input, { key: privateKey, dsaEncoding: 'ieee-p1363' }), Buffer.alloc(1)]),
    );
    assert.equal(verifyJwtSignature(parseCompactJwt(padded)!, key), false);
  });

  it('refuses a signature over other claims', () => {
    const token = jwtSigner({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' }, privateKey)(claims);
    const [h, , s] = token.split('.');
    assert.equal(verifyJwtSignature(parseCompactJwt(`${h}.${b64({ ...claims, sub: 'admin' })}.${s}`)!, key), false);
  });

  it('matches a published JWK to a header only by kty, crv, alg, use, key_ops and kid', () => {
    const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'k1' } as Record<string, unknown>;
    assert.equal(jwkFits(jwk, 'ES256', 'k1'), true);
    assert.equal(jwkFits(jwk, 'ES256', undefined), true);
    assert.equal(jwkFits(jwk, 'ES256', 'k2'), false, 'another kid');
    assert.equal(jwkFits(jwk, 'ES384', 'k1'), false, 'P-256 key for ES384');
    assert.equal(jwkFits(jwk, 'RS256', 'k1'), false, 'EC key for RS256');
    assert.equal(jwkFits(jwk, 'HS256', 'k1'), false, 'HMAC');
    assert.equal(jwkFits(jwk, 'none', 'k1'), false, 'none');
    assert.equal(jwkFits({ ...jwk, alg: 'ES384' }, 'ES256', 'k1'), false, 'the JWK names another alg');
    assert.equal(jwkFits({ ...jwk, use: 'enc' }, 'ES256', 'k1'), false, 'an encryption key');
    assert.equal(jwkFits({ ...jwk, key_ops: ['encrypt'] }, 'ES256', 'k1'), false, 'key_ops without verify');
    assert.equal(jwkFits({ ...jwk, key_ops: ['verify'] }, 'ES256', 'k1'), true);
  });
});

describe('JWT: time claims', () => {
  it('requires exp, and exp, nbf and iat to be numbers', () => {
    assert.equal(jwtTimeProblem({ exp: now + 1 }, now, 0), undefined);
    for (const bad of [{}, { exp: String(now + 60) }, { exp: now + 60, nbf: '0' }, { exp: now + 60, iat: 'now' }, { exp: null }]) {
      assert.equal(jwtTimeProblem(bad, now, 10), 'malformed', JSON.stringify(bad));
    }
  });

  it('expired at exp, with the tolerance', () => {
    assert.equal(jwtTimeProblem({ exp: now }, now, 0), 'expired');
    assert.equal(jwtTimeProblem({ exp: now - 9 }, now, 10), undefined);
    assert.equal(jwtTimeProblem({ exp: now - 10 }, now, 10), 'expired');
  });

  it('not yet valid before nbf, with the tolerance', () => {
    assert.equal(jwtTimeProblem({ exp: now + 600, nbf: now + 10 }, now, 10), undefined);
    assert.equal(jwtTimeProblem({ exp: now + 600, nbf: now + 11 }, now, 10), 'not yet valid');
    assert.equal(jwtTimeProblem({ exp: now + 600, nbf: now + 1 }, now, 0), 'not yet valid');
  });
});
