/**
 * DPoP at the resource server (RFC 9449 §7, §9, §11), through both adapters on real servers:
 * Hono served by @hono/node-server, and Express behind nodeBearerAuth (mounted under a router, so
 * req.url is not the path the client sent). A token bound to a key (`cnf.jkt`) passes only as
 * `Authorization: DPoP` with a fresh proof by that key for this method and URL; every defect is a
 * 401 whose DPoP challenge names it, after a Bearer challenge that today's clients read first.
 */
import assert from 'node:assert/strict';
import { createPrivateKey, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { describe, it } from 'node:test';
import { createAdaptorServer } from '@hono/node-server';
import express, { type Request as ExpressRequest, type Response as ExpressResponse } from 'express';
import { Hono } from 'hono';
import { SignJWT } from 'jose';
import { DPOP_SIGNING_ALGORITHMS, accessTokenHash, dpopProofSigner, generateDpopKeyPair, jwkThumbprint, type DpopKeyPair } from '../../src/core/dpop.js';
import { parseWwwAuthenticate } from '../../src/core/www-authenticate.js';
import { honoBearerAuth, type AuthVariables } from '../../src/resource-server/adapters/hono.js';
import { nodeBearerAuth, type AuthenticatedRequest } from '../../src/resource-server/adapters/node.js';
import type { ProtectedResource, ProtectedResourceOptions } from '../../src/resource-server/guard.js';
import { close, createHarness, listen, METADATA_URL, mintToken, protect, RESOURCE, VERIFIERS, type Harness } from './setup.js';

/** RESOURCE is http://127.0.0.1:9999/mcp: the URL clients reach, whatever port the test server listens on. */
const ME = `${RESOURCE}/me`;
const ADMIN = `${RESOURCE}/admin`;

interface Adapter {
  name: string;
  /** A server with the guard on /mcp/* (and a second one for mcp:admin on /mcp/admin) in front of a handler echoing the subject. */
  server(protection: ProtectedResource): Server;
}

const ADAPTERS: Adapter[] = [
  {
    name: 'Hono on @hono/node-server',
    server(protection) {
      const app = new Hono<{ Variables: AuthVariables }>();
      app.use('/mcp/*', honoBearerAuth(protection));
      app.use('/mcp/admin', honoBearerAuth(protection, { requiredScopes: ['mcp:admin'] }));
      app.all('/mcp/*', (c) => c.json({ subject: c.get('auth').subject, jkt: c.get('auth').jkt ?? null }));
      return createAdaptorServer({ fetch: app.fetch }) as Server;
    },
  },
  {
    name: 'Express with nodeBearerAuth',
    server(protection) {
      const router = express.Router();
      const answer = (req: ExpressRequest, res: ExpressResponse) => {
        const { verifiedToken } = req as AuthenticatedRequest;
        res.json({ subject: verifiedToken?.subject, jkt: verifiedToken?.jkt ?? null });
      };
      router.all('/admin', nodeBearerAuth(protection), nodeBearerAuth(protection, { requiredScopes: ['mcp:admin'] }), answer);
      router.all('/me', nodeBearerAuth(protection), answer);
      const app = express();
      app.use('/mcp', router);
      return createServer(app);
    },
  },
];

/** A running server for `adapter` in front of a guard on the harness clock, and a way to call it. */
async function start(adapter: Adapter, h: Harness, overrides: Partial<ProtectedResourceOptions> = {}) {
  const { verifier } = await VERIFIERS[0]!.create(h);
  const protection = protect(h, verifier, { requiredScopes: [], now: () => h.clock.now, ...overrides });
  const server = adapter.server(protection);
  await listen(server);
  const port = (server.address() as { port: number }).port;
  return {
    server,
    /** Sends `init` to the path of `url` (a URL under RESOURCE) at the test server. */
    call(url: string, init: { method?: string; authorization?: string; dpop?: string } = {}) {
      const headers: Record<string, string> = {};
      if (init.authorization !== undefined) headers.authorization = init.authorization;
      if (init.dpop !== undefined) headers.dpop = init.dpop;
      return fetch(`http://127.0.0.1:${port}${new URL(url).pathname}`, { method: init.method ?? 'GET', headers });
    },
  };
}

/** A key pair, its proof signer, and an access token bound to it (mcp:tools; `claims` override). */
async function boundToken(h: Harness, claims: Record<string, unknown> = {}, pair: DpopKeyPair = generateDpopKeyPair()) {
  const signer = dpopProofSigner(pair);
  const token = await mintToken(h.server, h.clock.now, { cnf: { jkt: signer.jkt }, ...claims });
  return { pair, signer, token };
}

/**
 * Asserts a 401 whose body and DPoP challenge carry `error`, with `algs` and the metadata URL,
 * after a Bearer challenge with the metadata URL and no error. Returns the DPoP challenge.
 */
async function expectDpopDenied(response: Response, error: string, description?: RegExp): Promise<Record<string, string>> {
  const text = await response.text();
  assert.equal(response.status, 401, text);
  const body = JSON.parse(text) as { error: string; error_description: string };
  assert.equal(body.error, error, text);
  if (description) assert.match(body.error_description, description);
  const challenges = parseWwwAuthenticate(response.headers.get('www-authenticate') ?? '');
  assert.deepEqual(
    challenges.map((challenge) => challenge.scheme),
    ['bearer', 'dpop'],
  );
  assert.deepEqual(challenges[0]!.params, { resource_metadata: METADATA_URL });
  const dpop = challenges[1]!.params;
  assert.equal(dpop.error, error);
  assert.equal(dpop.error_description, body.error_description);
  assert.equal(dpop.algs, DPOP_SIGNING_ALGORITHMS.join(' '));
  assert.equal(dpop.resource_metadata, METADATA_URL);
  return dpop;
}

/** A proof made by hand: `header` and `claims` as given, signed with `pair`'s private key. */
function handMadeProof(pair: DpopKeyPair, header: Record<string, unknown>, claims: Record<string, unknown>): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: pair.alg, typ: 'dpop+jwt', ...header } as { alg: string })
    .sign(createPrivateKey({ key: pair.privateJwk, format: 'jwk' }));
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

for (const adapter of ADAPTERS) {
  describe(`DPoP at the resource server — ${adapter.name}`, () => {
    it('takes a bound token with a good proof, for each method, and hands over its key thumbprint', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const { signer, token } = await boundToken(h);
        for (const method of ['GET', 'POST', 'DELETE']) {
          const response = await call(ME, {
            method,
            authorization: `DPoP ${token}`,
            dpop: signer.sign({ method, url: ME, accessToken: token, now: h.clock.now }),
          });
          assert.equal(response.status, 200, await response.clone().text());
          assert.deepEqual(await response.json(), { subject: 'user-alice', jkt: signer.jkt });
        }
        // The token is cached as verified from now on: its proof is checked all the same.
        await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}` }), 'invalid_dpop_proof', /no DPoP proof/);
      } finally {
        await close(server);
      }
    });

    it('refuses a request with no proof', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const { token } = await boundToken(h);
        await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}` }), 'invalid_dpop_proof', /no DPoP proof/);
      } finally {
        await close(server);
      }
    });

    it('refuses a proof for another URL: another path, another origin, the address the server listens at', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const { signer, token } = await boundToken(h);
        const port = (server.address() as { port: number }).port;
        for (const url of [`${RESOURCE}/other`, 'https://elsewhere.example/mcp/me', `http://127.0.0.1:${port}/mcp/me`]) {
          const proof = signer.sign({ method: 'GET', url, accessToken: token, now: h.clock.now });
          await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}`, dpop: proof }), 'invalid_dpop_proof', /htu/);
        }
      } finally {
        await close(server);
      }
    });

    it('refuses a proof for another method', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const { signer, token } = await boundToken(h);
        const proof = signer.sign({ method: 'POST', url: ME, accessToken: token, now: h.clock.now });
        await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}`, dpop: proof }), 'invalid_dpop_proof', /htm/);
      } finally {
        await close(server);
      }
    });

    it('refuses a proof made too long ago, or too far ahead', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const { signer, token } = await boundToken(h);
        const old = signer.sign({ method: 'GET', url: ME, accessToken: token, now: h.clock.now - 301 });
        await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}`, dpop: old }), 'invalid_dpop_proof', /too old/);
        const ahead = signer.sign({ method: 'GET', url: ME, accessToken: token, now: h.clock.now + 61 });
        await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}`, dpop: ahead }), 'invalid_dpop_proof', /future/);
      } finally {
        await close(server);
      }
    });

    it('refuses a proof sent a second time, minutes later too', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const { signer, token } = await boundToken(h);
        const proof = signer.sign({ method: 'GET', url: ME, accessToken: token, now: h.clock.now });
        assert.equal((await call(ME, { authorization: `DPoP ${token}`, dpop: proof })).status, 200);
        await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}`, dpop: proof }), 'invalid_dpop_proof', /used before/);
        h.clock.now += 290;
        await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}`, dpop: proof }), 'invalid_dpop_proof', /used before/);
      } finally {
        await close(server);
      }
    });

    it('takes one proof through two guards on one request (a step-up for more scopes), and not twice', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const { signer, token } = await boundToken(h, { scope: 'mcp:tools mcp:admin' });
        const proof = signer.sign({ method: 'GET', url: ADMIN, accessToken: token, now: h.clock.now });
        assert.equal((await call(ADMIN, { authorization: `DPoP ${token}`, dpop: proof })).status, 200);
        await expectDpopDenied(await call(ADMIN, { authorization: `DPoP ${token}`, dpop: proof }), 'invalid_dpop_proof', /used before/);
      } finally {
        await close(server);
      }
    });

    it('a bound token without the scope a route needs: 403 insufficient_scope on the DPoP challenge, naming the scope', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const { signer, token } = await boundToken(h);
        const response = await call(ADMIN, {
          authorization: `DPoP ${token}`,
          dpop: signer.sign({ method: 'GET', url: ADMIN, accessToken: token, now: h.clock.now }),
        });
        assert.equal(response.status, 403);
        const challenges = parseWwwAuthenticate(response.headers.get('www-authenticate') ?? '');
        assert.deepEqual(challenges[0]!.params, { resource_metadata: METADATA_URL });
        assert.equal(challenges[1]!.params.error, 'insufficient_scope');
        assert.equal(challenges[1]!.params.scope, 'mcp:admin');
      } finally {
        await close(server);
      }
    });

    it('refuses a proof signed by another key than the one the token is bound to (invalid_token)', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const { token } = await boundToken(h);
        const other = dpopProofSigner(generateDpopKeyPair());
        const proof = other.sign({ method: 'GET', url: ME, accessToken: token, now: h.clock.now });
        await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}`, dpop: proof }), 'invalid_token', /not signed by the key/);
      } finally {
        await close(server);
      }
    });

    it('refuses a proof whose jwk header carries the private key', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const { pair, token, signer } = await boundToken(h);
        const good = JSON.parse(
          Buffer.from(signer.sign({ method: 'GET', url: ME, accessToken: token, now: h.clock.now }).split('.')[1]!, 'base64url').toString(),
        ) as Record<string, unknown>;
        const proof = await handMadeProof(pair, { jwk: pair.privateJwk }, { ...good, jti: 'private-key-proof' });
        await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}`, dpop: proof }), 'invalid_dpop_proof', /private key/);
      } finally {
        await close(server);
      }
    });

    it('refuses a proof whose RSA key has an exponent other than 65537 or more than 4096 bits, before checking its signature', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const random = (bytes: number, top: number) => {
          const value = randomBytes(bytes);
          value[0] = top;
          value[bytes - 1]! |= 1;
          return value.toString('base64url');
        };
        // A 3072-bit key with a 3071-bit exponent, whose signature check alone would cost milliseconds; and an 8192-bit key.
        for (const [jwk, expected] of [
          [{ kty: 'RSA', n: random(384, 0x80), e: random(384, 0x40) }, /RSA key whose exponent is not 65537/],
          [{ kty: 'RSA', n: random(1024, 0x80), e: 'AQAB' }, /8192-bit RSA key: 2048 to 4096 bits are taken/],
        ] as const) {
          const token = await mintToken(h.server, h.clock.now, { cnf: { jkt: jwkThumbprint(jwk) } });
          const claims = { jti: randomBytes(8).toString('hex'), htm: 'GET', htu: ME, iat: h.clock.now, ath: accessTokenHash(token) };
          const proof = `${base64url({ typ: 'dpop+jwt', alg: 'PS256', jwk })}.${base64url(claims)}.${randomBytes(384).toString('base64url')}`;
          await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}`, dpop: proof }), 'invalid_dpop_proof', expected);
        }
      } finally {
        await close(server);
      }
    });

    it('refuses an unsigned proof (alg none)', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const { pair, token, signer } = await boundToken(h);
        const [, payload] = signer.sign({ method: 'GET', url: ME, accessToken: token, now: h.clock.now }).split('.');
        const unsigned = `${base64url({ typ: 'dpop+jwt', alg: 'none', jwk: pair.publicJwk })}.${payload}`;
        await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}`, dpop: `${unsigned}.` }), 'invalid_dpop_proof', /not a JWT/);
        // With something in the signature's place, the alg itself is refused.
        await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}`, dpop: `${unsigned}.AAAA` }), 'invalid_dpop_proof', /alg is not/);
      } finally {
        await close(server);
      }
    });

    it('refuses a proof without ath, or with the hash of another token', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const { signer, token } = await boundToken(h);
        const none = signer.sign({ method: 'GET', url: ME, now: h.clock.now });
        await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}`, dpop: none }), 'invalid_dpop_proof', /no ath/);
        const other = await mintToken(h.server, h.clock.now, { cnf: { jkt: signer.jkt } });
        const wrong = signer.sign({ method: 'GET', url: ME, accessToken: other, now: h.clock.now });
        await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}`, dpop: wrong }), 'invalid_dpop_proof', /ath/);
      } finally {
        await close(server);
      }
    });

    it('refuses a bound token sent as a Bearer token, proof or not (the error on the Bearer challenge)', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const { signer, token } = await boundToken(h);
        for (let i = 0; i < 2; i++) {
          // Twice: the second time the token is cached as verified (the fast path).
          const response = await call(ME, {
            authorization: `Bearer ${token}`,
            dpop: signer.sign({ method: 'GET', url: ME, accessToken: token, now: h.clock.now }),
          });
          const text = await response.text();
          assert.equal(response.status, 401, text);
          assert.equal((JSON.parse(text) as { error: string }).error, 'invalid_token');
          const challenges = parseWwwAuthenticate(response.headers.get('www-authenticate') ?? '');
          assert.deepEqual(
            challenges.map((challenge) => challenge.scheme),
            ['bearer', 'dpop'],
          );
          assert.equal(challenges[0]!.params.error, 'invalid_token');
          assert.match(challenges[0]!.params.error_description!, /DPoP-bound/);
          assert.equal(challenges[1]!.params.error, undefined);
        }
        // Also when DPoP is turned off at this server: a bound token is never a bearer token.
        const { server: off, call: callOff } = await start(adapter, h, { dpop: false });
        try {
          const response = await callOff(ME, { authorization: `Bearer ${token}` });
          assert.equal(response.status, 401);
          assert.equal(response.headers.get('www-authenticate')?.startsWith('Bearer '), true);
          assert.equal(parseWwwAuthenticate(response.headers.get('www-authenticate')!).length, 1);
        } finally {
          await close(off);
        }
      } finally {
        await close(server);
      }
    });

    it('refuses an unbound token sent with the DPoP scheme, even with a good proof', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const signer = dpopProofSigner(generateDpopKeyPair());
        const token = await mintToken(h.server, h.clock.now);
        const proof = signer.sign({ method: 'GET', url: ME, accessToken: token, now: h.clock.now });
        await expectDpopDenied(await call(ME, { authorization: `DPoP ${token}`, dpop: proof }), 'invalid_token', /not DPoP-bound/);
        // And a token bound some other way (cnf without jkt) is refused under both schemes.
        const mtls = await mintToken(h.server, h.clock.now, { cnf: { 'x5t#S256': 'abc' } });
        await expectDpopDenied(
          await call(ME, { authorization: `DPoP ${mtls}`, dpop: signer.sign({ method: 'GET', url: ME, accessToken: mtls, now: h.clock.now }) }),
          'invalid_token',
          /confirmation method/,
        );
        const asBearer = await call(ME, { authorization: `Bearer ${mtls}` });
        assert.equal(asBearer.status, 401);
        assert.match(((await asBearer.json()) as { error_description: string }).error_description, /confirmation method/);
        // An unbound token still passes as a Bearer token.
        assert.equal((await call(ME, { authorization: `Bearer ${token}` })).status, 200);
      } finally {
        await close(server);
      }
    });

    it('challenges with Bearer first and DPoP second when the request has no token', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h);
      try {
        const response = await call(ME);
        assert.equal(response.status, 401);
        assert.equal(
          response.headers.get('www-authenticate'),
          `Bearer resource_metadata="${METADATA_URL}", DPoP algs="${DPOP_SIGNING_ALGORITHMS.join(' ')}", resource_metadata="${METADATA_URL}"`,
        );
        assert.equal(response.headers.get('dpop-nonce'), null);
      } finally {
        await close(server);
      }
    });

    it('with nonces required: use_dpop_nonce and a DPoP-Nonce first, then the nonce is taken; a nonce two slots old is not', async () => {
      const h = createHarness();
      const { server, call } = await start(adapter, h, { dpop: { nonces: { key: 'a key of sixteen bytes or more', slotSeconds: 60 } } });
      try {
        const { signer, token } = await boundToken(h, { exp: h.clock.now + 3600 });
        const send = (nonce?: string) =>
          call(ME, {
            authorization: `DPoP ${token}`,
            dpop: signer.sign({ method: 'GET', url: ME, accessToken: token, now: h.clock.now, ...(nonce === undefined ? {} : { nonce }) }),
          });
        const first = await send();
        const nonce = first.headers.get('dpop-nonce');
        assert.ok(nonce);
        await expectDpopDenied(first, 'use_dpop_nonce');
        const ok = await send(nonce);
        assert.equal(ok.status, 200, await ok.clone().text());
        assert.equal(ok.headers.get('dpop-nonce'), null); // still the current one: nothing new to give
        await expectDpopDenied(await send('made-up-nonce'), 'use_dpop_nonce');
        // A slot later the nonce is still taken, and the answer hands over the next one.
        h.clock.now += 60;
        const later = await send(nonce);
        assert.equal(later.status, 200);
        const next = later.headers.get('dpop-nonce');
        assert.ok(next && next !== nonce);
        // Two slots later it is refused, with a fresh one to use.
        h.clock.now += 60;
        const stale = await send(nonce);
        const fresh = stale.headers.get('dpop-nonce');
        assert.ok(fresh && fresh !== nonce);
        await expectDpopDenied(stale, 'use_dpop_nonce');
        assert.equal((await send(fresh)).status, 200);
      } finally {
        await close(server);
      }
    });
  });
}
