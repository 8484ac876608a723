/**
 * The bearer guard (spec, "Bearer token use" and "Token validation by the context server"): the
 * token only from `Authorization: Bearer`, 401 with the RFC 9728 challenge, invalid_token for
 * bad, expired, foreign or mis-addressed tokens, 403 insufficient_scope, 400 for a broken header.
 * Run for both revisions and both verifiers.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Hono } from 'hono';
import { honoBearerAuth, type AuthVariables } from '../../src/resource-server/adapters/hono.js';
import type { TokenVerifier } from '../../src/resource-server/types.js';
import { jwtVerifier } from '../../src/resource-server/verify-jwt.js';
import { form, obtainTokens, postForm } from '../helpers/harness.js';
import {
  accessToken,
  ask,
  bearer,
  createHarness,
  createOtherAuthorizationServer,
  expectDenied,
  ISSUER,
  mintToken,
  OTHER_RESOURCE,
  protect,
  RESOURCE,
  REVISIONS,
  routeFetch,
  serviceToken,
  VERIFIERS,
} from './setup.js';

/** The same token with another payload and the old signature. */
function tamper(token: string, change: (claims: Record<string, unknown>) => void): string {
  const [header, payload, signature] = token.split('.') as [string, string, string];
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  change(claims);
  return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
}

for (const revision of REVISIONS) {
  for (const kind of VERIFIERS) {
    describe(`bearer guard — ${revision.name}, ${kind.name} verifier`, () => {
      it('accepts a valid token and hands over subject, client, scopes, audience and issuer', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const protection = protect(h, verifier);
        const { client, tokens } = await obtainTokens(h, revision);
        const response = await ask(protection, bearer(String(tokens.access_token)));
        assert.equal(response.status, 200);
        const auth = (await response.json()) as Record<string, unknown>;
        assert.equal(auth.subject, 'user-alice');
        assert.equal(auth.clientId, client.client_id);
        assert.deepEqual(auth.scopes, ['mcp:tools']);
        assert.deepEqual(auth.audience, [RESOURCE]);
        assert.equal(auth.issuer, ISSUER);
        assert.equal(auth.token, tokens.access_token);
        assert.equal((auth.claims as Record<string, unknown>).client_id, client.client_id);
      });

      it('accepts a client_credentials token, whose subject is the client', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const token = await serviceToken(h, revision);
        const auth = (await (await ask(protect(h, verifier), bearer(token))).json()) as Record<string, unknown>;
        assert.equal(auth.subject, auth.clientId);
      });

      it('takes the scheme case-insensitively: bearer, BEARER, BeArEr', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const protection = protect(h, verifier);
        const token = await accessToken(h, revision);
        for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
          assert.equal((await ask(protection, `${scheme} ${token}`)).status, 200, scheme);
        }
      });

      it('without a token: 401 with resource_metadata and scope, and no error code', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const challenge = await expectDenied(await ask(protect(h, verifier)), 401, 'unauthorized');
        assert.equal(challenge.scope, 'mcp:tools');
      });

      it('another scheme (Basic; DPoP where DPoP is turned off) counts as no token: 401 as if none', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const protection = protect(h, verifier);
        const token = await accessToken(h, revision);
        await expectDenied(await ask(protection, 'Basic dXNlcjpwYXNz'), 401, 'unauthorized');
        await expectDenied(await ask(protect(h, verifier, { dpop: false }), `DPoP ${token}`), 401, 'unauthorized');
        await expectDenied(await ask(protection, `Bearertoken${token}`), 401, 'unauthorized');
      });

      it('never takes a valid token from the query string or a form body (401 as if none)', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const protection = protect(h, verifier);
        const token = await accessToken(h, revision);
        const app = new Hono<{ Variables: AuthVariables }>();
        app.use('/mcp', honoBearerAuth(protection));
        app.all('/mcp', (c) => c.json({ subject: c.get('auth').subject }));

        await expectDenied(await app.fetch(new Request(`${RESOURCE}?access_token=${token}`)), 401, 'unauthorized');
        const body = form({ access_token: token });
        await expectDenied(
          await app.fetch(new Request(RESOURCE, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } })),
          401,
          'unauthorized',
        );
        // The header alone is what counts: the same token there is accepted.
        assert.equal((await app.fetch(new Request(RESOURCE, { headers: { authorization: bearer(token) } }))).status, 200);
      });

      it('a forged signature (payload changed after signing) → 401 invalid_token', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const protection = protect(h, verifier);
        const token = await accessToken(h, revision);
        const forged = tamper(token, (claims) => (claims.scope = 'mcp:admin mcp:tools'));
        await expectDenied(await ask(protection, bearer(forged)), 401, 'invalid_token');
        const truncated = token.slice(0, -4);
        await expectDenied(await ask(protection, bearer(truncated)), 401, 'invalid_token');
      });

      it('a token signed with a foreign key under our issuer and kid → 401 invalid_token', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const other = createOtherAuthorizationServer(h.clock);
        const ourKid = (await h.server.keys.current()).kid;
        const forged = await mintToken(other.server, h.clock.now, { iss: ISSUER }, { kid: ourKid });
        await expectDenied(await ask(protect(h, verifier), bearer(forged)), 401, 'invalid_token');
      });

      it('not a JWT at all → 401 invalid_token', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        await expectDenied(await ask(protect(h, verifier), 'Bearer abc.def'), 401, 'invalid_token');
        await expectDenied(await ask(protect(h, verifier), 'Bearer opaque-token-value'), 401, 'invalid_token');
      });

      it('an expired token → 401 invalid_token', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const protection = protect(h, verifier);
        const token = await accessToken(h, revision);
        h.clock.now += 600 + 11; // past exp and the 10 s clock tolerance
        const challenge = await expectDenied(await ask(protection, bearer(token)), 401, 'invalid_token');
        assert.ok(challenge.error_description);
      });

      it('a token from another authorization server (own keys, own issuer) → 401 invalid_token', async () => {
        const h = createHarness();
        const other = createOtherAuthorizationServer(h.clock);
        // The other server is reachable, so the refusal is about trust, not the network.
        const { verifier } = await kind.create(h, { alsoReachable: [other.server] });
        const token = await serviceToken(other, revision);
        await expectDenied(await ask(protect(h, verifier), bearer(token)), 401, 'invalid_token');
      });

      it('a token whose audience names another server → 401 invalid_token', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const token = await accessToken(h, revision); // aud = RESOURCE (Revision A: the AS default)
        const elsewhere = protect(h, verifier, { resource: OTHER_RESOURCE });
        await expectDenied(await ask(elsewhere, bearer(token)), 401, 'invalid_token', 'http://127.0.0.1:9999/.well-known/oauth-protected-resource/other');
      });

      it('a token without the required scope → 403 insufficient_scope naming the scopes', async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const protection = protect(h, verifier, { requiredScopes: ['mcp:tools', 'mcp:admin'] });
        const token = await accessToken(h, revision);
        const challenge = await expectDenied(await ask(protection, bearer(token)), 403, 'insufficient_scope');
        assert.equal(challenge.scope, 'mcp:admin mcp:tools');
        // Per request, too: the route's own scopes replace the default ones.
        const perRequest = await expectDenied(await ask(protect(h, verifier), bearer(token), ['mcp:admin']), 403, 'insufficient_scope');
        assert.equal(perRequest.scope, 'mcp:admin');
        // With the scope granted the same route lets it in.
        const wide = await accessToken(h, revision, { scope: 'mcp:tools mcp:admin' });
        assert.equal((await ask(protection, bearer(wide))).status, 200);
      });
    });
  }

  describe(`revoked tokens — ${revision.name}`, () => {
    async function revoke(h: ReturnType<typeof createHarness>, token: string, clientId: string): Promise<void> {
      const response = await postForm(h, '/revoke', { token, client_id: clientId });
      assert.equal(response.status, 200);
    }

    it('introspection verifier: a revoked token is refused (401) once its cache time is over', async () => {
      const h = createHarness();
      const introspection = VERIFIERS.find((v) => v.name === 'introspection')!;
      const { verifier } = await introspection.create(h, { cacheSeconds: 30 });
      const protection = protect(h, verifier);
      const { client, tokens } = await obtainTokens(h, revision);
      const token = String(tokens.access_token);
      assert.equal((await ask(protection, bearer(token))).status, 200);
      await revoke(h, token, client.client_id);
      // Within cacheSeconds the earlier answer stands (no call per request)…
      h.clock.now += 29;
      assert.equal((await ask(protection, bearer(token))).status, 200);
      // …and after it the AS is asked again and says inactive.
      h.clock.now += 1;
      await expectDenied(await ask(protection, bearer(token)), 401, 'invalid_token');
    });

    it('introspection verifier with cacheSeconds 0: a revoked token is refused at once', async () => {
      const h = createHarness();
      const introspection = VERIFIERS.find((v) => v.name === 'introspection')!;
      const { verifier } = await introspection.create(h, { cacheSeconds: 0 });
      const protection = protect(h, verifier);
      const { client, tokens } = await obtainTokens(h, revision);
      const token = String(tokens.access_token);
      assert.equal((await ask(protection, bearer(token))).status, 200);
      await revoke(h, token, client.client_id);
      await expectDenied(await ask(protection, bearer(token)), 401, 'invalid_token');
    });

    it('JWT verifier (known trade-off of local verification): a revoked token is still accepted until its exp', async () => {
      const h = createHarness();
      const jwt = VERIFIERS.find((v) => v.name === 'JWT')!;
      const { verifier } = await jwt.create(h);
      const protection = protect(h, verifier);
      const { client, tokens } = await obtainTokens(h, revision);
      const token = String(tokens.access_token);
      await revoke(h, token, client.client_id);
      assert.equal((await ask(protection, bearer(token))).status, 200, 'no network call, so the revocation is not seen');
      h.clock.now += 599;
      assert.equal((await ask(protection, bearer(token))).status, 200);
      h.clock.now += 12;
      await expectDenied(await ask(protection, bearer(token)), 401, 'invalid_token');
    });
  });
}

for (const revision of REVISIONS.filter((r) => r.resource !== undefined)) {
  describe(`audience binding — ${revision.name}`, () => {
    for (const kind of VERIFIERS) {
      it(`${kind.name} verifier: a token requested for another resource (resource=${OTHER_RESOURCE}) → 401`, async () => {
        const h = createHarness();
        const { verifier } = await kind.create(h);
        const token = await accessToken(h, revision, { resource: OTHER_RESOURCE });
        await expectDenied(await ask(protect(h, verifier), bearer(token)), 401, 'invalid_token');
      });
    }
  });
}

describe("a token answered from the verifier's cache still passes every check of the guard", () => {
  it('revocation, audience and scope are checked on every request, not only the first', async () => {
    const h = createHarness();
    const jwt = jwtVerifier({ authorizationServers: [ISSUER], now: () => h.clock.now, fetch: routeFetch([h.server]) });
    const revoked = new Set<string>();
    const protection = protect(h, jwt, { revocations: { isRevoked: (auth) => revoked.has(auth.token) } });
    const elsewhere = protect(h, jwt, { resource: OTHER_RESOURCE });
    const token = await mintToken(h.server, h.clock.now);
    assert.equal((await protection.check(bearer(token))).ok, true);
    assert.ok(jwt.cached!(token), 'now cached');
    await expectDenied(await ask(protection, bearer(token), ['mcp:admin']), 403, 'insufficient_scope');
    const mis = await elsewhere.check(bearer(token));
    assert.equal(mis.ok ? 200 : `${mis.status} ${mis.body.error}`, '401 invalid_token', 'another audience');
    revoked.add(token);
    await expectDenied(await ask(protection, bearer(token)), 401, 'invalid_token');
  });

  it('checkKnown answers at once only for a token the verifier holds, and as check() would', async () => {
    const h = createHarness();
    const jwt = jwtVerifier({ authorizationServers: [ISSUER], now: () => h.clock.now, fetch: routeFetch([h.server]) });
    const protection = protect(h, jwt);
    const token = await mintToken(h.server, h.clock.now);
    for (const header of [undefined, null, '', bearer(token), `bearer ${token}`, 'Bearer not-a-jwt']) {
      assert.equal(protection.checkKnown!(header), undefined, `before any check: ${String(header).slice(0, 10)}`);
    }
    assert.equal((await protection.check(bearer(token))).ok, true);
    assert.deepEqual(protection.checkKnown!(bearer(token)), await protection.check(bearer(token)));
    const denied = protection.checkKnown!(bearer(token), ['mcp:admin']);
    assert.equal(denied && !denied.ok ? denied.status : 200, 403);
    assert.equal(protection.checkKnown!(`bearer ${token}`), undefined, 'other spellings go through check()');
  });

  it('the cached token with anything around it is judged as the header it is', async () => {
    const h = createHarness();
    const jwt = jwtVerifier({ authorizationServers: [ISSUER], now: () => h.clock.now, fetch: routeFetch([h.server]) });
    const protection = protect(h, jwt);
    const token = await mintToken(h.server, h.clock.now);
    assert.equal((await protection.check(bearer(token))).ok, true);
    assert.equal((await protection.check(`Bearer ${token} `)).ok, true, 'trailing space, as before');
    for (const header of [`Bearer ${token}!`, `Bearer ${token}, Bearer ${token}`, `Bearer ${token}\u0000`]) {
      const result = await protection.check(header);
      assert.equal(result.ok ? 200 : result.status, 400, JSON.stringify(header.slice(-12)));
    }
    for (const header of [`Bearer ${token}.x`, `Bearer x${token}`]) {
      const result = await protection.check(header);
      assert.equal(result.ok ? 200 : result.status, 401, JSON.stringify(header.slice(0, 12)));
    }
  });
});

describe('malformed Authorization headers → 400 invalid_request (the verifier is not asked)', () => {
  const untouchable: TokenVerifier = {
    verify: () => Promise.reject(new Error('the verifier must not be called for a malformed header')),
  };
  const h = createHarness();
  const protection = protect(h, untouchable);
  for (const header of ['Bearer', 'Bearer ', 'Bearer a b', 'Bearer a,Bearer b', 'Bearer a, Bearer b', 'Bearer "abc"', 'Bearer a\tb', 'bearer ab==cd']) {
    it(JSON.stringify(header), async () => {
      const challenge = await expectDenied(await ask(protection, header), 400, 'invalid_request');
      assert.ok(challenge.error_description);
    });
  }

  it('the same through a Hono route', async () => {
    const app = new Hono<{ Variables: AuthVariables }>();
    app.use('*', honoBearerAuth(protection));
    app.get('/mcp', (c) => c.text('unreachable'));
    await expectDenied(await app.fetch(new Request(RESOURCE, { headers: { authorization: 'Bearer a b' } })), 400, 'invalid_request');
  });
});

describe('a verifier that fails unexpectedly', () => {
  it('is not turned into a 401: the error reaches the framework', async () => {
    const h = createHarness();
    const broken: TokenVerifier = { verify: () => Promise.reject(new RangeError('bug in the verifier')) };
    await assert.rejects(ask(protect(h, broken), 'Bearer abc'), RangeError);
  });
});

describe('the guard reads nothing but the Authorization header', () => {
  it('check() takes the header value itself', async () => {
    const h = createHarness();
    const { verifier } = await VERIFIERS[0]!.create(h);
    const protection = protect(h, verifier);
    const token = await mintToken(h.server, h.clock.now);
    const result = await protection.check(bearer(token));
    assert.equal(result.ok, true);
    const none = await protection.check(undefined);
    assert.equal(none.ok, false);
    if (!none.ok) assert.equal(none.status, 401);
  });
});

describe('a trusted issuer’s token with an odd scope claim', () => {
  it('is judged on its scopes (403), never a 500', async () => {
    const h = createHarness();
    const protection = protect(h, (await VERIFIERS[0]!.create(h)).verifier, { requiredScopes: ['mcp:tools'] });
    const token = await mintToken(h.server, h.clock.now, { scope: 'mcp:"tools" \u00e9' });
    const response = await ask(protection, bearer(token));
    assert.equal(response.status, 403);
  });
});
