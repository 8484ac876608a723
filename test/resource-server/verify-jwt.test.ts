/**
 * Local JWT verification (RFC 9068): keys from the JWKS the AS metadata names, fetched once and
 * refetched on an unknown kid (rate-limited), `iss` among the trusted servers, `aud` naming this
 * server (guard), exp/nbf with a small tolerance, and a verified-token cache bounded by exp.
 */
import assert from 'node:assert/strict';
import { createPrivateKey, generateKeyPairSync, randomBytes, sign as cryptoSign, type JsonWebKey, type KeyObject } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { serve, type ServerType } from '@hono/node-server';
import { SignJWT, UnsecuredJWT } from 'jose';
import { createAuthorizationServer, type AuthorizationServer } from '../../src/authorization-server/index.js';
import { rotateSigningKeys } from '../../src/authorization-server/keys.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { jwtVerifier, type JwtVerifierOptions } from '../../src/resource-server/verify-jwt.js';
import { accepted, refused } from '../helpers/token-verification.js';
import {
  accessToken,
  ask,
  bearer,
  count,
  createHarness,
  createOtherAuthorizationServer,
  expectDenied,
  ISSUER,
  mintToken,
  OTHER_ISSUER,
  protect,
  RESOURCE,
  REVISIONS,
  routeFetch,
  type Harness,
} from './setup.js';

const METADATA = '/.well-known/oauth-authorization-server';

function verifierFor(h: Harness, calls: string[], options: Partial<JwtVerifierOptions> = {}) {
  return jwtVerifier({ authorizationServers: [ISSUER], now: () => h.clock.now, fetch: routeFetch([h.server], calls), ...options });
}

/** A token with an unknown kid: signed with a throwaway key, otherwise well-formed and from our issuer. */
async function unknownKidToken(now: number): Promise<string> {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return new SignJWT({ client_id: 'c', scope: 'mcp:tools' })
    .setProtectedHeader({ alg: 'ES256', kid: randomBytes(9).toString('base64url'), typ: 'at+jwt' })
    .setIssuer(ISSUER)
    .setSubject('mallory')
    .setAudience(RESOURCE)
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .sign(privateKey);
}

for (const revision of REVISIONS) {
  describe(`JWT verifier: keys — ${revision.name}`, () => {
    it('finds the JWKS through the AS metadata and fetches each once for many verifications', async () => {
      const h = createHarness();
      const calls: string[] = [];
      const verifier = verifierFor(h, calls);
      const first = await accessToken(h, revision);
      const second = await accessToken(h, revision, { scope: 'mcp:tools mcp:admin' });
      const minted = await Promise.all(Array.from({ length: 20 }, () => mintToken(h.server, h.clock.now)));
      // Concurrent first requests share one discovery…
      await Promise.all([first, second, ...minted].map((token) => accepted(verifier.verify(token))));
      // …and later ones, new tokens included, use the cached keys.
      for (let i = 0; i < 10; i++) await accepted(verifier.verify(await mintToken(h.server, h.clock.now)));
      await accepted(verifier.verify(first));
      assert.deepEqual(calls, [`GET ${METADATA}`, 'GET /jwks']);
    });

    it('picks up a rotated signing key on its unknown kid, without a restart', async (t) => {
      t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
      const h = createHarness();
      const calls: string[] = [];
      const protection = protect(h, verifierFor(h, calls));
      const before = await accessToken(h, revision);
      assert.equal((await ask(protection, bearer(before))).status, 200);

      await rotateSigningKeys(h.store, h.clock.now);
      h.clock.now += 10; // the new key signs once its activation delay has passed
      h.server.keys.invalidate();
      const afterRotation = await accessToken(h, revision);
      const kid = (token: string) => (JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as { kid: string }).kid;
      assert.notEqual(kid(afterRotation), kid(before), 'the new token is signed with the new key');

      t.mock.timers.tick(6_000); // past the refetch cooldown (5 s by default)
      assert.equal((await ask(protection, bearer(afterRotation))).status, 200);
      assert.equal(count(calls, '/jwks'), 2, 'the unknown kid made it refetch the JWKS once');
      assert.equal(count(calls, METADATA), 1, 'the metadata is not fetched again');
      // The previous key stays published, so tokens signed before the rotation still pass.
      assert.equal((await ask(protection, bearer(await mintToken(h.server, h.clock.now)))).status, 200);
      const stillValid = await accepted(verifierFor(h, []).verify(before));
      assert.equal(stillValid.subject, 'user-alice');
    });
  });
}

describe('JWT verifier: refetch rate limit', () => {
  it('a flood of tokens with random unknown kids causes at most a couple of JWKS fetches', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    const h = createHarness();
    const calls: string[] = [];
    const protection = protect(h, verifierFor(h, calls));
    const flood = await Promise.all(Array.from({ length: 50 }, () => unknownKidToken(h.clock.now)));
    for (const token of flood) await expectDenied(await ask(protection, bearer(token)), 401, 'invalid_token');
    await Promise.all(flood.map(async (token) => expectDenied(await ask(protection, bearer(token)), 401, 'invalid_token')));
    assert.ok(count(calls, '/jwks') <= 2, `JWKS fetched ${count(calls, '/jwks')} times`);
    // After the cooldown one more unknown kid may refetch, once, and the flood goes on being refused.
    t.mock.timers.tick(6_000);
    await Promise.all(flood.map(async (token) => expectDenied(await ask(protection, bearer(token)), 401, 'invalid_token')));
    assert.ok(count(calls, '/jwks') <= 3, `JWKS fetched ${count(calls, '/jwks')} times`);
    assert.equal(count(calls, METADATA), 1);
    // Genuine tokens keep working meanwhile.
    assert.equal((await ask(protection, bearer(await mintToken(h.server, h.clock.now)))).status, 200);
  });
});

describe('JWT verifier: issuer', () => {
  it('refuses a token whose iss is not a configured server, without contacting that server', async () => {
    const h = createHarness();
    const other = createOtherAuthorizationServer(h.clock);
    const calls: string[] = [];
    const verifier = jwtVerifier({ authorizationServers: [ISSUER], now: () => h.clock.now, fetch: routeFetch([h.server, other.server], calls) });
    const foreign = await mintToken(other.server, h.clock.now);
    await refused(verifier.verify(foreign), 'invalid_token');
    assert.deepEqual(calls, []);
    await refused(verifier.verify(await mintToken(h.server, h.clock.now, { iss: undefined })), 'invalid_token');
    await refused(verifier.verify(await mintToken(h.server, h.clock.now, { iss: `${ISSUER}/` })), 'invalid_token');
  });

  it('trusts several authorization servers, each with its own keys from its own metadata', async () => {
    const h = createHarness();
    const other = createOtherAuthorizationServer(h.clock);
    const calls: string[] = [];
    const verifier = jwtVerifier({ authorizationServers: [ISSUER, OTHER_ISSUER], now: () => h.clock.now, fetch: routeFetch([h.server, other.server], calls) });
    assert.equal((await accepted(verifier.verify(await mintToken(h.server, h.clock.now)))).issuer, ISSUER);
    assert.equal((await accepted(verifier.verify(await mintToken(other.server, h.clock.now)))).issuer, OTHER_ISSUER);
    assert.equal(count(calls, METADATA), 2);
    assert.equal(count(calls, '/jwks'), 2);
    // One server's key does not vouch for the other's issuer.
    const ourKid = (await h.server.keys.current()).kid;
    await refused(verifier.verify(await mintToken(other.server, h.clock.now, { iss: ISSUER }, { kid: ourKid })), 'invalid_token');
  });
});

describe('JWT verifier: audience (checked by the guard)', () => {
  it('accepts an aud list that contains the canonical URI, and aud written non-canonically', async () => {
    const h = createHarness();
    const protection = protect(h, verifierFor(h, []));
    for (const aud of [[RESOURCE], ['http://127.0.0.1:9999/other', RESOURCE], `${RESOURCE}/`, 'HTTP://127.0.0.1:9999/mcp']) {
      const response = await ask(protection, bearer(await mintToken(h.server, h.clock.now, { aud })));
      assert.equal(response.status, 200, JSON.stringify(aud));
    }
  });

  it('accepts an uppercase-host variant of the canonical URI in aud', async () => {
    const h = createHarness();
    const protection = protect(h, verifierFor(h, []), {
      resource: 'http://localhost:9999/mcp',
      metadataUrl: 'http://localhost:9999/.well-known/oauth-protected-resource/mcp',
    });
    const token = await mintToken(h.server, h.clock.now, { aud: 'http://LOCALHOST:9999/mcp' });
    assert.equal((await ask(protection, bearer(token))).status, 200);
    const upperScheme = await mintToken(h.server, h.clock.now, { aud: 'HTTP://LocalHost:9999/mcp' });
    assert.equal((await ask(protection, bearer(upperScheme))).status, 200);
  });

  it('refuses aud that names another server, a prefix or an extension of it, or nothing', async () => {
    const h = createHarness();
    const protection = protect(h, verifierFor(h, []));
    for (const aud of [
      'http://127.0.0.1:9999/other',
      'http://127.0.0.1:9999',
      `${RESOURCE}/extra`,
      `${RESOURCE}#x`,
      'https://127.0.0.1:9999/mcp',
      'http://127.0.0.1:9998/mcp',
      [],
      undefined,
    ]) {
      const response = await ask(protection, bearer(await mintToken(h.server, h.clock.now, { aud })));
      await expectDenied(response, 401, 'invalid_token');
    }
  });
});

describe('JWT verifier: time claims', () => {
  it('exp with a small clock tolerance (10 s by default)', async () => {
    const h = createHarness();
    const now = h.clock.now;
    const verifier = verifierFor(h, []);
    await accepted(verifier.verify(await mintToken(h.server, now, { exp: now - 5 })));
    await refused(verifier.verify(await mintToken(h.server, now, { exp: now - 11 })), 'invalid_token', /expired/);
    const strict = verifierFor(h, [], { clockToleranceSeconds: 0 });
    await refused(strict.verify(await mintToken(h.server, now, { exp: now })), 'invalid_token');
  });

  it('nbf with the same tolerance', async () => {
    const h = createHarness();
    const now = h.clock.now;
    const verifier = verifierFor(h, []);
    await accepted(verifier.verify(await mintToken(h.server, now, { nbf: now + 5 })));
    await refused(verifier.verify(await mintToken(h.server, now, { nbf: now + 60 })), 'invalid_token');
  });

  it('a token refused for an nbf still ahead is accepted once nbf arrives (its refusal is not remembered)', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    const early = await mintToken(h.server, h.clock.now, { nbf: h.clock.now + 30 });
    await refused(verifier.verify(early), 'invalid_token');
    h.clock.now += 25; // within the tolerance of nbf now
    assert.equal((await accepted(verifier.verify(early))).subject, 'user-alice');
  });

  it('a refused token stays refused (remembered), and a valid one is unaffected', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    const expired = await mintToken(h.server, h.clock.now, { exp: h.clock.now - 60 });
    await refused(verifier.verify(expired), 'invalid_token', /expired/);
    await refused(verifier.verify(expired), 'invalid_token', /expired/);
    assert.equal((await accepted(verifier.verify(await mintToken(h.server, h.clock.now)))).subject, 'user-alice');
  });

  it('remembers a refusal: a refused token stays refused when a fresh check would now pass', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    // The first refusal files its digest when nothing was refused before, the second one with one
    // already filed: both ways must remember.
    const first = await mintToken(h.server, h.clock.now, { exp: h.clock.now - 60 });
    const second = await mintToken(h.server, h.clock.now, { exp: h.clock.now - 60 });
    await refused(verifier.verify(first), 'invalid_token', /expired/);
    await refused(verifier.verify(second), 'invalid_token', /expired/);
    h.clock.now -= 120; // both tokens are inside their lifetime again
    const control = verifierFor(h, []);
    assert.equal((await accepted(control.verify(first))).subject, 'user-alice', 'a verifier that never refused them accepts them now');
    await refused(verifier.verify(first), 'invalid_token', /expired/, 'refused from memory');
    await refused(verifier.verify(second), 'invalid_token', /expired/, 'refused from memory');
  });

  it('refuses through the promise, never by throwing, whatever the token', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    for (const token of ['not-a-jwt', 'a.b.c', await mintToken(h.server, h.clock.now, { exp: h.clock.now - 60 })]) {
      let outcome: ReturnType<typeof verifier.verify> | undefined;
      assert.doesNotThrow(() => (outcome = verifier.verify(token)));
      await refused(outcome!, 'invalid_token');
    }
  });

  it('refuses a token without exp or sub', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    for (const claim of ['exp', 'sub']) {
      await refused(verifier.verify(await mintToken(h.server, h.clock.now, { [claim]: undefined })), 'invalid_token', undefined, claim);
    }
  });

  it("takes a token without client_id (other authorization servers' tokens): its client is azp, else ''", async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    const withAzp = await verifier.verify(await mintToken(h.server, h.clock.now, { client_id: undefined, azp: 'their-client' }));
    assert.ok(withAzp.ok, JSON.stringify(withAzp));
    assert.equal(withAzp.value.clientId, 'their-client');
    const unnamed = await verifier.verify(await mintToken(h.server, h.clock.now, { client_id: undefined }));
    assert.ok(unnamed.ok, JSON.stringify(unnamed));
    assert.equal(unnamed.value.clientId, '');
    await refused(verifier.verify(await mintToken(h.server, h.clock.now, { client_id: 42 })), 'invalid_token');
  });
});

describe('JWT verifier: token type and algorithm', () => {
  it('refuses a JWT that is not an access token (typ other than at+jwt)', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    for (const typ of ['JWT', 'application/jwt', undefined]) {
      await refused(verifier.verify(await mintToken(h.server, h.clock.now, {}, { typ })), 'invalid_token', undefined, String(typ));
    }
  });

  it('refuses alg none and HMAC tokens', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    const claims = { iss: ISSUER, sub: 'mallory', aud: RESOURCE, client_id: 'c', scope: 'mcp:admin', exp: h.clock.now + 600 };
    const unsecured = new UnsecuredJWT(claims).encode();
    await refused(verifier.verify(unsecured), 'invalid_token');
    const kid = (await h.server.keys.current()).kid;
    const hmac = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid, typ: 'at+jwt' }).sign(new TextEncoder().encode('x'.repeat(32)));
    await refused(verifier.verify(hmac), 'invalid_token');
  });
});

/** A token signed by `key` (default: `signer`'s current key) over exactly this header and these claims (for what jose will not make). */
async function handSigned(
  signer: AuthorizationServer,
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  hash = 'sha256',
  key?: KeyObject,
): Promise<string> {
  const signingKey = key ?? (await signer.keys.current()).key;
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${input}.${cryptoSign(hash, Buffer.from(input), { key: signingKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

describe('JWT verifier: header and key', () => {
  function claimsAt(now: number): Record<string, unknown> {
    return {
      iss: ISSUER,
      sub: 'user-alice',
      aud: RESOURCE,
      client_id: 'client-1',
      scope: 'mcp:tools',
      jti: randomBytes(8).toString('hex'),
      iat: now,
      exp: now + 600,
    };
  }

  it('accepts a hand-made token of the right shape (the control for the refusals below)', async () => {
    const h = createHarness();
    const { kid } = await h.server.keys.current();
    const token = await handSigned(h.server, { alg: 'ES256', kid, typ: 'at+jwt' }, claimsAt(h.clock.now));
    assert.equal((await accepted(verifierFor(h, []).verify(token))).subject, 'user-alice');
  });

  it('refuses a header with crit, even naming a parameter it carries', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    const { kid } = await h.server.keys.current();
    for (const extra of [
      { crit: ['exp'], exp: 1 },
      { crit: ['b64'], b64: true },
      { crit: ['urn:example:policy'], 'urn:example:policy': 'x' },
    ]) {
      const token = await handSigned(h.server, { alg: 'ES256', kid, typ: 'at+jwt', ...extra }, claimsAt(h.clock.now));
      await refused(verifier.verify(token), 'invalid_token', undefined, JSON.stringify(extra));
    }
  });

  it('refuses our key under another algorithm: ES384 or ES512 over the same P-256 key', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    const { kid } = await h.server.keys.current();
    for (const [alg, hash] of [
      ['ES384', 'sha384'],
      ['ES512', 'sha512'],
      ['ES384', 'sha256'],
    ] as const) {
      const token = await handSigned(h.server, { alg, kid, typ: 'at+jwt' }, claimsAt(h.clock.now), hash);
      await refused(verifier.verify(token), 'invalid_token', undefined, `${alg} with ${hash}`);
    }
  });

  it('without a kid, uses the one published key that fits; refuses when a rotation published two', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    const h = createHarness();
    const calls: string[] = [];
    const verifier = verifierFor(h, calls);
    assert.equal((await accepted(verifier.verify(await handSigned(h.server, { alg: 'ES256', typ: 'at+jwt' }, claimsAt(h.clock.now))))).subject, 'user-alice');
    await rotateSigningKeys(h.store, h.clock.now);
    h.server.keys.invalidate();
    t.mock.timers.tick(601_000); // the JWKS is fetched again after 10 minutes
    const published = (await h.store.listSigningKeys()).filter((key) => key.status === 'current' || key.status === 'previous');
    assert.equal(published.length, 2);
    for (const record of published) {
      const key = createPrivateKey({ key: JSON.parse(record.privateJwk) as JsonWebKey, format: 'jwk' });
      await refused(verifier.verify(await handSigned(h.server, { alg: 'ES256', typ: 'at+jwt' }, claimsAt(h.clock.now), 'sha256', key)), 'invalid_token');
      // With its kid, the same key's token passes.
      await accepted(verifier.verify(await handSigned(h.server, { alg: 'ES256', kid: record.kid, typ: 'at+jwt' }, claimsAt(h.clock.now), 'sha256', key)));
    }
    assert.equal(count(calls, '/jwks'), 2);
  });

  it("a JWKS that publishes a private key, redirects, or lacks keys is the server's fault: 503", async () => {
    const h = createHarness();
    const token = await mintToken(h.server, h.clock.now);
    const reach = routeFetch([h.server]);
    const { kid } = await h.server.keys.current();
    const privateJwk = { ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }), kid, alg: 'ES256' };
    for (const jwks of [
      () => Response.json({ keys: [privateJwk] }),
      () => new Response(null, { status: 302, headers: { location: `${ISSUER}/jwks` } }),
      () => Response.json({ keys: 'none' }),
      () => Response.json([]),
    ]) {
      const verifier = jwtVerifier({
        authorizationServers: [ISSUER],
        now: () => h.clock.now,
        fetch: async (input, init) => (new URL(new Request(input).url).pathname === '/jwks' ? jwks() : reach(input, init)),
      });
      await expectDenied(await ask(protect(h, verifier), bearer(token)), 503, 'temporarily_unavailable');
    }
  });
});

describe('JWT verifier: verified-token cache', () => {
  it('answers a repeated token from the cache, and refuses it once past exp', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    const token = await mintToken(h.server, h.clock.now);
    const first = await accepted(verifier.verify(token));
    h.clock.now += 500;
    assert.equal(await accepted(verifier.verify(token)), first, 'the same cached object');
    h.clock.now += 100 + 10; // exp + the tolerance
    await refused(verifier.verify(token), 'invalid_token', /expired/);
  });

  it('is bounded in size: the oldest entry goes first', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, [], { cacheSize: 2 });
    const [a, b, c] = await Promise.all([1, 2, 3].map(() => mintToken(h.server, h.clock.now)));
    const firstA = await accepted(verifier.verify(a!));
    const firstC = await accepted(verifier.verify(b!)).then(() => accepted(verifier.verify(c!)));
    assert.equal(await accepted(verifier.verify(c!)), firstC, 'still cached');
    assert.notEqual(await accepted(verifier.verify(a!)), firstA, 'evicted, so verified anew');
  });

  it('keeps a token still in use when full: the oldest unused one goes first', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, [], { cacheSize: 2 });
    const [a, b, c] = await Promise.all([1, 2, 3].map(() => mintToken(h.server, h.clock.now)));
    const firstA = await accepted(verifier.verify(a!));
    const firstB = await accepted(verifier.verify(b!));
    assert.equal(await accepted(verifier.verify(a!)), firstA, 'a hit marks a as in use');
    await accepted(verifier.verify(c!));
    assert.equal(await accepted(verifier.verify(a!)), firstA, 'a, oldest but used since, stays');
    assert.notEqual(await accepted(verifier.verify(b!)), firstB, 'b, never used again, was evicted');
  });
});

/** The same token with other claims and its own (now wrong) signature: it ends exactly like the original. */
function sameEnding(token: string, claims: Record<string, unknown>): string {
  const [header, payload, signature] = token.split('.') as [string, string, string];
  const changed = { ...(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>), ...claims };
  return `${header}.${Buffer.from(JSON.stringify(changed)).toString('base64url')}.${signature}`;
}

describe('JWT verifier: caches filed under the end of the token', () => {
  it('a token ending like a cached one is verified on its own (a forgery reusing a signature is refused)', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    const token = await mintToken(h.server, h.clock.now);
    assert.equal((await accepted(verifier.verify(token))).subject, 'user-alice');
    const forged = sameEnding(token, { sub: 'admin', scope: 'mcp:tools mcp:admin' });
    assert.equal(forged.slice(-32), token.slice(-32));
    await refused(verifier.verify(forged), 'invalid_token');
    assert.equal((await ask(protect(h, verifier), bearer(forged))).status, 401);
    assert.equal((await accepted(verifier.verify(token))).subject, 'user-alice', 'the valid token is still accepted');
  });

  it('a refused token does not make a valid one ending alike refused', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    const token = await mintToken(h.server, h.clock.now);
    const forged = sameEnding(token, { sub: 'admin' });
    await refused(verifier.verify(forged), 'invalid_token', /invalid/);
    await refused(verifier.verify(forged), 'invalid_token', /invalid/, 'remembered');
    assert.equal((await accepted(verifier.verify(token))).subject, 'user-alice');
  });

  it('cached() answers only a token verify() accepted, and only that exact string', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    const token = await mintToken(h.server, h.clock.now);
    assert.equal(verifier.cached!(token), undefined, 'not verified yet');
    const verified = await accepted(verifier.verify(token));
    assert.equal(verifier.cached!(token), verified);
    assert.equal(verifier.cached!(` ${token}`), undefined);
    assert.equal(verifier.cached!(sameEnding(token, { sub: 'admin' })), undefined);
    const expired = await mintToken(h.server, h.clock.now, { exp: h.clock.now - 60 });
    await refused(verifier.verify(expired), 'invalid_token', /expired/);
    assert.equal(verifier.cached!(expired), undefined, 'a refused token is not answered');
    h.clock.now += 600 + 10; // past exp and the tolerance
    assert.equal(verifier.cached!(token), undefined, 'an expired one neither');
  });
});

describe('JWT verifier: headers decoded once', () => {
  it('after a token with a header is verified, a header differing in one character is still checked', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    const { kid } = await h.server.keys.current();
    const claims = { iss: ISSUER, sub: 'user-alice', aud: RESOURCE, client_id: 'client-1', scope: 'mcp:tools', iat: h.clock.now, exp: h.clock.now + 600 };
    assert.equal(
      (await accepted(verifier.verify(await handSigned(h.server, { alg: 'ES256', kid, typ: 'at+jwt' }, { ...claims, jti: 'a' })))).subject,
      'user-alice',
    );
    // Same length, same key, same signer: only typ differs, so only a check of this header refuses it.
    const other = await handSigned(h.server, { alg: 'ES256', kid, typ: 'at+jwu' }, { ...claims, jti: 'b' });
    await refused(verifier.verify(other), 'invalid_token');
    const crit = await handSigned(h.server, { alg: 'ES256', kid, typ: 'at+jwt', crit: ['exp'], exp: 1 }, { ...claims, jti: 'c' });
    await refused(verifier.verify(crit), 'invalid_token');
    // And a token with the known header is verified as before (its signature checked).
    const again = await handSigned(h.server, { alg: 'ES256', kid, typ: 'at+jwt' }, { ...claims, jti: 'd' });
    assert.equal((await accepted(verifier.verify(again))).claims.jti, 'd');
    await refused(verifier.verify(sameEnding(again, { jti: 'e' })), 'invalid_token');
  });
});

describe('JWT verifier: the authorization server cannot be reached', () => {
  it('metadata unreachable → 503 temporarily_unavailable, and a later request retries discovery', async () => {
    const h = createHarness();
    const calls: string[] = [];
    let down = true;
    const reach = routeFetch([h.server], calls);
    const verifier = jwtVerifier({
      authorizationServers: [ISSUER],
      now: () => h.clock.now,
      fetch: (input, init) => (down ? Promise.reject(new TypeError('fetch failed')) : reach(input, init)),
    });
    const protection = protect(h, verifier);
    const token = await mintToken(h.server, h.clock.now);
    await expectDenied(await ask(protection, bearer(token)), 503, 'temporarily_unavailable');
    down = false;
    assert.equal((await ask(protection, bearer(token))).status, 200);
  });

  it('metadata answering 404 on both well-known URLs, or naming another issuer → 503', async () => {
    const h = createHarness();
    const notFound = jwtVerifier({ authorizationServers: [ISSUER], now: () => h.clock.now, fetch: async () => new Response('no', { status: 404 }) });
    await refused(notFound.verify(await mintToken(h.server, h.clock.now)), 'unavailable');
    const impostor = jwtVerifier({
      authorizationServers: [ISSUER],
      now: () => h.clock.now,
      fetch: async () => Response.json({ issuer: OTHER_ISSUER, jwks_uri: `${OTHER_ISSUER}/jwks` }),
    });
    await refused(impostor.verify(await mintToken(h.server, h.clock.now)), 'unavailable');
  });

  it('metadata whose jwks_uri is missing or not a URL → 503, saying which to whoever calls verify()', async () => {
    const h = createHarness();
    for (const [jwksUri, why] of [
      [undefined, /publishes no jwks_uri/],
      ['not a url', /publishes a jwks_uri that is not a URL/],
    ] as const) {
      const verifier = jwtVerifier({
        authorizationServers: [ISSUER],
        now: () => h.clock.now,
        fetch: async () => Response.json({ issuer: ISSUER, jwks_uri: jwksUri }),
      });
      await refused(verifier.verify(await mintToken(h.server, h.clock.now)), 'unavailable', why);
      await expectDenied(await ask(protect(h, verifier), bearer(await mintToken(h.server, h.clock.now))), 503, 'temporarily_unavailable');
    }
  });

  it('JWKS unreachable or failing (metadata fine) → 503, not 401', async () => {
    const h = createHarness();
    const token = await mintToken(h.server, h.clock.now);
    const reach = routeFetch([h.server]);
    for (const jwks of [
      () => Promise.reject(new TypeError('fetch failed')),
      () => Promise.reject(new Error('socket hang up')),
      () => Promise.resolve(new Response('oops', { status: 500 })),
      () => Promise.resolve(new Response('<html>', { status: 200, headers: { 'content-type': 'text/html' } })),
    ]) {
      const verifier = jwtVerifier({
        authorizationServers: [ISSUER],
        now: () => h.clock.now,
        fetch: (input, init) => (new URL(new Request(input).url).pathname === '/jwks' ? jwks() : reach(input, init)),
      });
      await expectDenied(await ask(protect(h, verifier), bearer(token)), 503, 'temporarily_unavailable');
    }
  });

  it('a valid token refused with 503 while the JWKS failed is accepted as soon as it is back', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    const h = createHarness();
    const token = await mintToken(h.server, h.clock.now);
    const reach = routeFetch([h.server]);
    let jwksDown = true;
    const verifier = jwtVerifier({
      authorizationServers: [ISSUER],
      now: () => h.clock.now,
      fetch: (input, init) =>
        jwksDown && new URL(new Request(input).url).pathname === '/jwks' ? Promise.resolve(new Response('busy', { status: 503 })) : reach(input, init),
    });
    const protection = protect(h, verifier);
    await expectDenied(await ask(protection, bearer(token)), 503, 'temporarily_unavailable');
    jwksDown = false;
    assert.equal((await ask(protection, bearer(token))).status, 200);
  });
});

describe('JWT verifier against an authorization server on a real port', () => {
  let http: ServerType;
  let auth: AuthorizationServer | undefined;
  let issuer: string;
  const clock = { now: Math.floor(Date.now() / 1000) };

  before(async () => {
    http = serve({ fetch: (request: Request) => (auth ? auth.handle(request) : new Response('starting', { status: 503 })), port: 0, hostname: '127.0.0.1' });
    await new Promise<void>((resolve) => (http.listening ? resolve() : http.once('listening', () => resolve())));
    issuer = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
    auth = createAuthorizationServer({ issuer, store: createMemoryStore(), resources: [`${issuer}/mcp`], now: () => clock.now });
  });

  after(() => new Promise<void>((resolve) => http.close(() => resolve())));

  it('verifies over HTTP with the global fetch, and answers 503 once the server is gone', async () => {
    const verifier = jwtVerifier({ authorizationServers: [issuer] });
    const token = await mintToken(auth!, clock.now, { aud: `${issuer}/mcp` });
    const verified = await accepted(verifier.verify(token));
    assert.equal(verified.issuer, issuer);
    assert.deepEqual(verified.audience, [`${issuer}/mcp`]);

    await new Promise<void>((resolve) => {
      http.close(() => resolve());
      (http as unknown as { closeAllConnections(): void }).closeAllConnections();
    });
    const fresh = jwtVerifier({ authorizationServers: [issuer] });
    await refused(fresh.verify(token), 'unavailable');
    // The running verifier still has the keys and a cached answer.
    assert.equal((await accepted(verifier.verify(token))).subject, 'user-alice');
    assert.equal((await accepted(verifier.verify(await mintToken(auth!, clock.now, { aud: `${issuer}/mcp` })))).subject, 'user-alice');
  });
});

describe('JWT verifier: the JWKS is read where the metadata says, never through a redirect', () => {
  let http: ServerType;
  let auth: AuthorizationServer | undefined;
  let issuer: string;
  let redirectJwks = true;
  const clock = { now: Math.floor(Date.now() / 1000) };

  before(async () => {
    const handle = (request: Request): Response | Promise<Response> => {
      const path = new URL(request.url).pathname;
      if (path === '/jwks' && redirectJwks) return new Response(null, { status: 302, headers: { location: `${issuer}/elsewhere` } });
      if (path === '/elsewhere') return auth!.handle(new Request(`${issuer}/jwks`));
      return auth ? auth.handle(request) : new Response('starting', { status: 503 });
    };
    http = serve({ fetch: handle, port: 0, hostname: '127.0.0.1' });
    await new Promise<void>((resolve) => (http.listening ? resolve() : http.once('listening', () => resolve())));
    issuer = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
    auth = createAuthorizationServer({ issuer, store: createMemoryStore(), resources: [`${issuer}/mcp`], now: () => clock.now });
  });

  after(() => new Promise<void>((resolve) => http.close(() => resolve())));

  it('a JWKS answered with a redirect is not followed (503); served in place, it is used', async () => {
    const token = await mintToken(auth!, clock.now, { aud: `${issuer}/mcp` });
    await refused(jwtVerifier({ authorizationServers: [issuer] }).verify(token), 'unavailable');
    redirectJwks = false;
    assert.equal((await accepted(jwtVerifier({ authorizationServers: [issuer] }).verify(token))).issuer, issuer);
  });
});

describe('JWT verifier: delegated tokens (act)', () => {
  it('hands the app the actors of a delegated token, the one presenting it first, and none for a direct token', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    const delegated = await mintToken(h.server, h.clock.now, { act: { sub: 'notes-server', act: { sub: 'mail-server' } } });
    assert.deepEqual((await accepted(verifier.verify(delegated))).actors, ['notes-server', 'mail-server']);
    const direct = await accepted(verifier.verify(await mintToken(h.server, h.clock.now)));
    assert.equal('actors' in direct, false);
    const auth = (await (await ask(protect(h, verifier), bearer(delegated))).json()) as { actors?: string[] };
    assert.deepEqual(auth.actors, ['notes-server', 'mail-server']);
  });

  it('refuses a token whose act is malformed, rather than take it for a direct one', async () => {
    const h = createHarness();
    const verifier = verifierFor(h, []);
    for (const act of ['notes-server', { client_id: 'notes-server' }, { sub: 'notes-server', act: [] }]) {
      await refused(verifier.verify(await mintToken(h.server, h.clock.now, { act })), 'invalid_token', /act claim is malformed/);
    }
  });
});
