/**
 * DPoP proofs (src/core/dpop.ts), nonces and the replay record: proofs we make verify with jose
 * and pass our own check; proofs jose makes pass it; and every defect RFC 9449 §4.3 lists is
 * refused with its name.
 */
import assert from 'node:assert/strict';
import { createPrivateKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { describe, it } from 'node:test';
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, jwtVerify } from 'jose';
import { DpopNonces } from '../../src/core/dpop-nonce.js';
import {
  DpopProofVerifier,
  accessTokenHash,
  dpopProofSigner,
  dpopTargetUri,
  generateDpopKeyPair,
  jwkThumbprint,
  type DpopCheck,
  type DpopKeyPair,
} from '../../src/core/dpop.js';
import { ReplayCache } from '../../src/core/replay-cache.js';

const now = 1_800_000_000;
const url = 'https://as.example.com/token';

function description(check: DpopCheck): string {
  assert.equal(check.ok, false, 'the proof was refused');
  return (check as { description: string }).description;
}

/** A proof made with jose, whatever header and claims a test wants. */
async function joseProof(header: Record<string, unknown>, claims: Record<string, unknown>, alg = 'ES256') {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = await exportJWK(publicKey);
  const full = { jti: 'j-1', htm: 'POST', htu: url, iat: now, ...claims };
  return new SignJWT(full).setProtectedHeader({ alg, typ: 'dpop+jwt', jwk, ...header } as never).sign(privateKey);
}

/** The encoded protected header dpopProofSigner puts on `pair`'s proofs. */
function header(pair: DpopKeyPair): string {
  return dpopProofSigner(pair).sign({ method: 'POST', url, now }).split('.')[0]!;
}

/** A proof signed with `pair`'s key, with any claims (`undefined` leaves one out) and, unless given, `pair`'s own header. */
function signedProof(pair: DpopKeyPair, claims: Record<string, unknown>, encodedHeader = header(pair)): string {
  const full = JSON.stringify({ jti: randomBytes(8).toString('hex'), htm: 'POST', htu: url, iat: now, ...claims });
  const input = `${encodedHeader}.${Buffer.from(full).toString('base64url')}`;
  const key = createPrivateKey({ key: pair.privateJwk, format: 'jwk' });
  return `${input}.${sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

describe('DPoP', () => {
  it('computes the RFC 7638 thumbprint of its example key', () => {
    const jwk = {
      kty: 'RSA',
      e: 'AQAB',
      alg: 'RS256',
      kid: '2011-04-29',
      n: '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw',
    };
    assert.equal(jwkThumbprint(jwk), 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs');
  });

  it('normalises the target URI: case, default port, no query or fragment', () => {
    assert.equal(dpopTargetUri('HTTPS://AS.Example.com:443/token?x=1#f'), 'https://as.example.com/token');
    assert.equal(dpopTargetUri('http://127.0.0.1:8080/a/../mcp'), 'http://127.0.0.1:8080/mcp');
    assert.equal(dpopTargetUri('not a url'), undefined);
  });

  for (const alg of ['ES256', 'EdDSA', 'PS256']) {
    it(`makes ${alg} proofs that jose verifies and our check takes`, async () => {
      const pair = generateDpopKeyPair(alg);
      const signer = dpopProofSigner(pair);
      const proof = signer.sign({ method: 'get', url: 'https://rs.example.com/mcp?q=1', accessToken: 'token-1', nonce: 'n-1', now });
      const { protectedHeader, payload } = await jwtVerify(proof, await importJWK(pair.publicJwk as never, alg), { currentDate: new Date(now * 1000) });
      assert.equal(protectedHeader.typ, 'dpop+jwt');
      assert.equal(payload.htm, 'GET');
      assert.equal(payload.htu, 'https://rs.example.com/mcp');
      assert.equal(payload.ath, accessTokenHash('token-1'));
      assert.equal(payload.nonce, 'n-1');
      assert.equal(signer.jkt, await calculateJwkThumbprint(protectedHeader.jwk!));
      const check = new DpopProofVerifier().check({ proof, method: 'GET', url: 'https://rs.example.com/mcp', now, accessToken: 'token-1' });
      assert.ok(check.ok, JSON.stringify(check));
      assert.equal(check.proof.jkt, signer.jkt);
    });
  }

  it('takes a proof jose made, and gives each jti of each key its own replay key', async () => {
    const verifier = new DpopProofVerifier();
    const first = verifier.check({ proof: await joseProof({}, {}), method: 'POST', url, now });
    const second = verifier.check({ proof: await joseProof({}, {}), method: 'POST', url, now });
    assert.ok(first.ok && second.ok);
    assert.notEqual(first.proof.replayKey, second.proof.replayKey, 'the same jti under two keys');
    assert.ok(first.proof.replayUntil > now);
  });

  describe('refuses each defect, naming it', () => {
    const verifier = new DpopProofVerifier();
    const cases: [string, () => Promise<string>, RegExp, Partial<{ method: string; url: string; accessToken: string }>?][] = [
      ['not a JWT', async () => 'not-a-jwt', /not a JWT/],
      ['two proofs', async () => `${await joseProof({}, {})}, ${await joseProof({}, {})}`, /more than one/],
      ['typ JWT', () => joseProof({ typ: 'JWT' }, {}), /typ/],
      ['no jwk', () => joseProof({ jwk: undefined }, {}), /no jwk/],
      [
        'a private key in jwk',
        async () => {
          const { privateKey } = await generateKeyPair('ES256', { extractable: true });
          const jwk = await exportJWK(privateKey);
          return new SignJWT({ jti: 'j', htm: 'POST', htu: url, iat: now })
            .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk } as never)
            .sign(privateKey);
        },
        /private key/,
      ],
      [
        'a jwk of another key',
        async () => {
          const other = await exportJWK((await generateKeyPair('ES256')).publicKey);
          return joseProof({ jwk: other }, {});
        },
        /signature/,
      ],
      [
        'a jwk unfit for alg',
        async () => {
          const rsa = await exportJWK((await generateKeyPair('RS256')).publicKey);
          return joseProof({ jwk: rsa }, {});
        },
        /does not fit/,
      ],
      ['no jti', () => joseProof({}, { jti: undefined }), /no jti/],
      ['wrong htm', () => joseProof({}, { htm: 'GET' }), /htm is not POST/],
      ['wrong htu', () => joseProof({}, { htu: 'https://as.example.com/other' }), /htu is not/],
      ['htu with a query', () => joseProof({}, { htu: `${url}?a=1` }), /query or fragment/],
      ['stale iat', () => joseProof({}, { iat: now - 301 }), /too old/],
      ['future iat', () => joseProof({}, { iat: now + 61 }), /future/],
      ['no ath at a resource server', () => joseProof({}, {}), /no ath/, { accessToken: 'token-1' }],
      ['a wrong ath', () => joseProof({}, { ath: accessTokenHash('another') }), /ath is not/, { accessToken: 'token-1' }],
    ];
    for (const [name, make, expected, request] of cases) {
      it(name, async () => {
        const check = verifier.check({ proof: await make(), method: 'POST', url, now, ...request });
        assert.match(description(check), expected);
      });
    }

    it('alg none and HS256', () => {
      const body = Buffer.from(JSON.stringify({ jti: 'j', htm: 'POST', htu: url, iat: now })).toString('base64url');
      for (const alg of ['none', 'HS256']) {
        const header = Buffer.from(JSON.stringify({ alg, typ: 'dpop+jwt', jwk: { kty: 'oct', k: 'c2VjcmV0' } })).toString('base64url');
        assert.match(description(verifier.check({ proof: `${header}.${body}.c2ln`, method: 'POST', url, now })), /alg/);
      }
    });
  });

  describe('RSA proof keys: exponent 65537, 2048 to 4096 bits, refused before the signature is checked', () => {
    /** A PS256 proof whose header carries an RSA key of `bits` with exponent `e` (base64url); the signature is junk. */
    function rsaProof(bits: number, e: string): string {
      const n = randomBytes(bits / 8);
      n[0]! |= 0x80;
      n[n.length - 1]! |= 1;
      const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
      const header = encode({ alg: 'PS256', typ: 'dpop+jwt', jwk: { kty: 'RSA', n: n.toString('base64url'), e } });
      return `${header}.${encode({ jti: 'j', htm: 'POST', htu: url, iat: now })}.${randomBytes(bits / 8).toString('base64url')}`;
    }
    const hugeExponent = (bits: number): string => {
      const e = randomBytes(bits / 8);
      e[0] = 0x40;
      e[e.length - 1]! |= 1;
      return e.toString('base64url');
    };

    it('a 3072-bit key with a 3071-bit exponent (a check that would cost milliseconds)', () => {
      assert.match(
        description(new DpopProofVerifier().check({ proof: rsaProof(3072, hugeExponent(3072)), method: 'POST', url, now })),
        /RSA key whose exponent is not 65537/,
      );
    });

    it('an exponent of 3', () => {
      assert.match(description(new DpopProofVerifier().check({ proof: rsaProof(2048, 'Aw'), method: 'POST', url, now })), /exponent is not 65537/);
    });

    it('an 8192-bit modulus, and a 1024-bit one', () => {
      const verifier = new DpopProofVerifier();
      assert.match(description(verifier.check({ proof: rsaProof(8192, 'AQAB'), method: 'POST', url, now })), /8192-bit RSA key: 2048 to 4096 bits are taken/);
      assert.match(description(verifier.check({ proof: rsaProof(1024, 'AQAB'), method: 'POST', url, now })), /1024-bit RSA key/);
    });

    it('takes a 4096-bit key with exponent 65537', () => {
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 4096 });
      const pair = { alg: 'PS256', privateJwk: privateKey.export({ format: 'jwk' }), publicJwk: publicKey.export({ format: 'jwk' }) };
      const check = new DpopProofVerifier().check({ proof: dpopProofSigner(pair).sign({ method: 'POST', url, now }), method: 'POST', url, now });
      assert.ok(check.ok, JSON.stringify(check));
    });
  });

  it('a target URI normalises to itself (an htu spelled as ours is taken without parsing it)', () => {
    for (const url of [
      'HTTPS://AS.Example.com:443/token?x=1#f',
      'http://user:pass@127.0.0.1:8080/a/../mcp/./x',
      'https://[::1]:8443/mcp',
      'https://bücher.example/%7euser/a%2fb c',
      'http://example.com',
      'https://example.com//double//slash',
    ]) {
      const target = dpopTargetUri(url)!;
      assert.equal(dpopTargetUri(target), target, url);
    }
  });

  it('takes an htu spelled otherwise (scheme and host case, default port), and refuses another path, port or scheme, URL after URL', () => {
    const pair = generateDpopKeyPair();
    const verifier = new DpopProofVerifier();
    const other = 'https://as.example.com/other';
    const check = (htu: string, at: string) => verifier.check({ proof: signedProof(pair, { htu }), method: 'POST', url: at, now }).ok;
    assert.equal(check(url, url), true);
    assert.equal(check('HTTPS://AS.EXAMPLE.COM:443/token', url), true);
    assert.equal(check(url, other), false, 'a proof for the token endpoint, at another URL');
    assert.equal(check(other, other), true);
    assert.equal(check(other, url), false);
    assert.equal(check('https://as.example.com/Token', url), false, 'the path in another case');
    assert.equal(check('https://as.example.com:8443/token', url), false, 'another port');
    assert.equal(check('http://as.example.com/token', url), false, 'another scheme');
    assert.equal(check('https://as.example.com/token/', url), false, 'a trailing slash');
    assert.equal(check('https://as.example.com/tok', url), false, 'a prefix of the path');
  });

  describe('the keys of proofs seen, kept by their header', () => {
    it('a known header does not let a proof signed by another key through', () => {
      const [kept, other] = [generateDpopKeyPair(), generateDpopKeyPair()];
      const verifier = new DpopProofVerifier();
      assert.ok(verifier.check({ proof: signedProof(kept, {}), method: 'POST', url, now }).ok);
      // The kept key's header, byte for byte, over claims signed by another key.
      const forged = signedProof(other, {}, header(kept));
      assert.match(description(verifier.check({ proof: forged, method: 'POST', url, now })), /signature does not verify/);
    });

    it("a known key's later proofs are checked as fully as its first", () => {
      const pair = generateDpopKeyPair();
      const verifier = new DpopProofVerifier();
      assert.ok(verifier.check({ proof: signedProof(pair, {}), method: 'POST', url, now }).ok);
      const refusals: [Record<string, unknown>, RegExp][] = [
        [{ htu: 'https://as.example.com/other' }, /htu is not/],
        [{ htm: 'GET' }, /htm is not POST/],
        [{ iat: now - 301 }, /too old/],
        [{ jti: undefined }, /no jti/],
      ];
      for (const [claims, expected] of refusals) {
        assert.match(description(verifier.check({ proof: signedProof(pair, claims), method: 'POST', url, now })), expected);
      }
      assert.match(description(verifier.check({ proof: signedProof(pair, { ath: 'x' }), method: 'POST', url, now, accessToken: 't' })), /ath is not/);
    });

    it('keeps at most maxKeys, and a key its proofs keep using stays while others come and go', () => {
      const verifier = new DpopProofVerifier({ maxKeys: 2 });
      const [atWork, second, third, fourth] = Array.from({ length: 4 }, () => generateDpopKeyPair());
      const show = (pair: DpopKeyPair) => assert.ok(verifier.check({ proof: signedProof(pair, {}), method: 'POST', url, now }).ok);
      const jkt = (pair: DpopKeyPair) => dpopProofSigner(pair).jkt;
      show(atWork!);
      show(second!);
      show(atWork!);
      show(third!);
      assert.deepEqual(verifier.keptKeys().sort(), [jkt(atWork!), jkt(third!)].sort(), 'the key in use stays; the one not used since leaves');
      show(fourth!);
      assert.deepEqual(verifier.keptKeys().sort(), [jkt(third!), jkt(fourth!)].sort(), 'unused since it was passed over, it leaves in turn');
      for (let i = 0; i < 20; i++) show(generateDpopKeyPair());
      assert.equal(verifier.keptKeys().length, 2);
      assert.deepEqual(new DpopProofVerifier({ maxKeys: 0 }).check({ proof: signedProof(atWork!, {}), method: 'POST', url, now }).ok, true);
    });
  });

  it('reads a proof ahead (unverifiedClaims) without letting the check that follows skip anything', () => {
    const pair = generateDpopKeyPair();
    const verifier = new DpopProofVerifier();
    const good = signedProof(pair, { nonce: 'n-1' });
    const [header_, claims] = good.split('.');
    const badSignature = `${header_}.${claims}.${Buffer.alloc(64, 1).toString('base64url')}`;
    assert.equal(verifier.unverifiedClaims(badSignature)?.nonce, 'n-1');
    assert.match(description(verifier.check({ proof: badSignature, method: 'POST', url, now })), /signature does not verify/);
    assert.equal(verifier.unverifiedClaims(` ${good} `)?.nonce, 'n-1');
    const other = signedProof(pair, { htu: 'https://as.example.com/other' });
    assert.match(description(verifier.check({ proof: other, method: 'POST', url, now })), /htu is not/, 'another proof than the one read ahead');
    assert.equal(verifier.unverifiedClaims('not-a-jwt'), undefined);
    assert.ok(verifier.check({ proof: good, method: 'POST', url, now }).ok);
  });

  it('asks for a nonce (use_dpop_nonce) when the proof has none or a stale one, and takes a fresh one', async () => {
    const nonces = new DpopNonces(Buffer.alloc(32, 7), { slotSeconds: 60 });
    const verifier = new DpopProofVerifier();
    const nonce = (value: string | undefined, at: number) => nonces.check(value, at);
    const missing = verifier.check({ proof: await joseProof({}, {}), method: 'POST', url, now, nonce });
    assert.deepEqual(missing.ok ? undefined : missing.error, 'use_dpop_nonce');
    const given = nonces.issue(now);
    assert.ok(verifier.check({ proof: await joseProof({}, { nonce: given }), method: 'POST', url, now, nonce }).ok);
    assert.ok(nonces.check(given, now + 60), 'taken in the next slot');
    assert.equal(nonces.check(given, now + 180), false, 'not two slots on');
    assert.equal(new DpopNonces(Buffer.alloc(32, 8)).check(given, now), false, 'another key');
  });

  it('gives one nonce per slot, the same as another process with the key gives, slot after slot', () => {
    const key = Buffer.alloc(32, 9);
    const nonces = new DpopNonces(key, { slotSeconds: 60 });
    for (let slot = 0; slot < 12; slot++) {
      const at = now + slot * 60;
      const given = nonces.issue(at);
      assert.equal(nonces.issue(at + 59), given, 'the whole slot');
      assert.equal(new DpopNonces(key, { slotSeconds: 60 }).issue(at), given, 'another process');
      assert.ok(nonces.check(given, at) && nonces.check(given, at + 60), 'in its slot and the next');
      assert.equal(nonces.check(given, at + 120), false, 'not two slots on');
      assert.equal(nonces.check(given, at - 60), false, 'not in the slot before it');
      assert.equal(nonces.check(`${given.slice(0, -1)}${given.endsWith('A') ? 'B' : 'A'}`, at), false, 'one character changed');
    }
  });

  it('keeps a bounded replay record: replays refused, and what it let go is refused as stale', () => {
    const cache = new ReplayCache(2);
    assert.equal(cache.use('a', now, now + 300, now), 'ok');
    assert.equal(cache.use('a', now, now + 300, now), 'replayed');
    assert.equal(cache.use('b', now + 1, now + 301, now + 1), 'ok');
    assert.equal(cache.use('c', now + 2, now + 302, now + 2), 'ok', 'a is let go');
    assert.equal(cache.size, 2);
    assert.equal(cache.use('a', now, now + 300, now + 2), 'stale', 'a replay of what was let go');
    assert.equal(cache.use('d', now + 3, now + 303, now + 400), 'ok', 'expired entries leave');
    assert.equal(cache.size, 1);
  });

  it('lets go the proofs of the earliest second when full, whatever order they came in', () => {
    const cache = new ReplayCache(2);
    assert.equal(cache.use('now', now, now + 360, now), 'ok');
    assert.equal(cache.use('earlier', now - 100, now + 260, now), 'ok', 'a client whose clock is behind');
    assert.equal(cache.use('next', now, now + 360, now), 'ok', 'full: the earliest second is let go');
    assert.equal(cache.use('now', now, now + 360, now), 'replayed', 'the proof that came first is still kept');
    assert.equal(cache.use('earlier', now - 100, now + 260, now), 'stale');
  });

  it('a flood of proofs dated ahead neither pushes an honest one out nor raises the watermark past the present', () => {
    const cache = new ReplayCache(100);
    assert.equal(cache.use('honest', now, now + 360, now), 'ok');
    const outcomes = new Map<string, number>();
    for (let i = 0; i < 1000; i++) {
      const outcome = cache.use(`ahead-${i}`, now + 60, now + 420, now);
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
    assert.deepEqual(Object.fromEntries(outcomes), { ok: 10, ahead: 990 }, 'a tenth of the record at most');
    assert.equal(cache.use('honest', now, now + 360, now), 'replayed', 'the honest proof is still kept');
    // Honest proofs, one a second, fill the record and go on being taken: the earliest are let go, never the watermark past the present.
    for (let i = 1; i <= 200; i++) assert.equal(cache.use(`fresh-${i}`, now + i, now + 360 + i, now + i), 'ok', `honest proof ${i}`);
    assert.equal(cache.size, 100);
    assert.equal(cache.use('fresh-200', now + 200, now + 560, now + 200), 'replayed');
  });
});
