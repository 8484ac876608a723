/**
 * The introspection verifier (RFC 7662): the endpoint found through the AS metadata, the
 * resource server's own client credentials, inactive → 401, answers cached no longer than
 * cacheSeconds nor past exp, and an endpoint it cannot reach → 503 (not 401, not 500).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dpopProofSigner, generateDpopKeyPair } from '../../src/core/dpop.js';
import { introspectionVerifier, type IntrospectionVerifierOptions } from '../../src/resource-server/introspection.js';
import { obtainTokens, postForm } from '../helpers/harness.js';
import { accepted, refused } from '../helpers/token-verification.js';
import {
  accessToken,
  addIntrospectionClient,
  ask,
  bearer,
  count,
  createHarness,
  expectDenied,
  ISSUER,
  OTHER_ISSUER,
  protect,
  RESOURCE,
  REVISIONS,
  routeFetch,
  type Harness,
} from './setup.js';

const METADATA = '/.well-known/oauth-authorization-server';

async function verifierFor(h: Harness, calls: string[], options: Partial<IntrospectionVerifierOptions> = {}) {
  const { clientId, clientSecret } = await addIntrospectionClient(h);
  const verifier = introspectionVerifier({
    authorizationServer: ISSUER,
    clientId,
    clientSecret,
    now: () => h.clock.now,
    fetch: routeFetch([h.server], calls),
    ...options,
  });
  return { verifier, clientId, clientSecret };
}

/** A verifier whose introspection endpoint answers `answer` (the AS metadata is not asked). */
function answering(h: Harness, answer: () => Response | Promise<Response>) {
  return introspectionVerifier({
    authorizationServer: ISSUER,
    endpoint: `${ISSUER}/introspect`,
    clientId: 'rs',
    clientSecret: 'secret',
    now: () => h.clock.now,
    fetch: async () => answer(),
  });
}

for (const revision of REVISIONS) {
  describe(`introspection verifier — ${revision.name}`, () => {
    it('finds the endpoint in the AS metadata (once) and hands over what the AS said', async () => {
      const h = createHarness();
      const calls: string[] = [];
      const { verifier } = await verifierFor(h, calls);
      const { client, tokens } = await obtainTokens(h, revision);
      const verified = await accepted(verifier.verify(String(tokens.access_token)));
      assert.equal(verified.subject, 'user-alice');
      assert.equal(verified.clientId, client.client_id);
      assert.deepEqual(verified.scopes, ['mcp:tools']);
      assert.deepEqual(verified.audience, [RESOURCE]);
      assert.equal(verified.issuer, ISSUER);
      assert.equal(verified.claims.active, true);
      assert.equal(typeof verified.expiresAt, 'number');
      await accepted(verifier.verify(await accessToken(h, revision)));
      assert.deepEqual(calls, [`GET ${METADATA}`, 'POST /introspect', 'POST /introspect']);
    });

    it('authenticates to the endpoint with its own client credentials (client_secret_basic)', async () => {
      const h = createHarness();
      const seen: (string | null)[] = [];
      const reach = routeFetch([h.server]);
      const { clientId, clientSecret } = await addIntrospectionClient(h);
      const verifier = introspectionVerifier({
        authorizationServer: ISSUER,
        clientId,
        clientSecret,
        now: () => h.clock.now,
        fetch: (input, init) => {
          const request = new Request(input, init);
          if (request.method === 'POST') seen.push(request.headers.get('authorization'));
          return reach(request);
        },
      });
      await accepted(verifier.verify(await accessToken(h, revision)));
      assert.deepEqual(seen, [`Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`]);
    });

    it('wrong client credentials are the server’s problem: 503, not 401', async () => {
      const h = createHarness();
      const { verifier } = await verifierFor(h, [], { clientSecret: 'not-the-secret' });
      await expectDenied(await ask(protect(h, verifier), bearer(await accessToken(h, revision))), 503, 'temporarily_unavailable');
    });

    it('an inactive answer (unknown, revoked, garbage token) → 401 invalid_token', async () => {
      const h = createHarness();
      const { verifier } = await verifierFor(h, []);
      const protection = protect(h, verifier);
      await expectDenied(await ask(protection, bearer('not-a-token-we-issued')), 401, 'invalid_token');
      const { client, tokens } = await obtainTokens(h, revision);
      await postForm(h, '/revoke', { token: String(tokens.access_token), client_id: client.client_id });
      await expectDenied(await ask(protection, bearer(String(tokens.access_token))), 401, 'invalid_token');
      // A refresh token is never described as an active access token.
      await expectDenied(await ask(protection, bearer(String(tokens.refresh_token))), 401, 'invalid_token');
    });

    it('caches an active answer for cacheSeconds (no call per request), then asks again', async () => {
      const h = createHarness();
      const calls: string[] = [];
      const { verifier } = await verifierFor(h, calls, { cacheSeconds: 30 });
      const token = await accessToken(h, revision);
      const first = await accepted(verifier.verify(token));
      h.clock.now += 29;
      assert.equal(await accepted(verifier.verify(token)), first);
      assert.equal(count(calls, '/introspect'), 1);
      h.clock.now += 1;
      await accepted(verifier.verify(token));
      assert.equal(count(calls, '/introspect'), 2);
    });

    it('never caches past the token’s exp, however long cacheSeconds is', async () => {
      const h = createHarness();
      const calls: string[] = [];
      const { verifier } = await verifierFor(h, calls, { cacheSeconds: 3600 });
      const protection = protect(h, verifier);
      const token = await accessToken(h, revision);
      assert.equal((await ask(protection, bearer(token))).status, 200);
      h.clock.now += 599;
      assert.equal((await ask(protection, bearer(token))).status, 200);
      assert.equal(count(calls, '/introspect'), 1);
      h.clock.now += 1; // exp
      await expectDenied(await ask(protection, bearer(token)), 401, 'invalid_token');
      assert.equal(count(calls, '/introspect'), 2);
    });
  });
}

describe('introspection verifier: the endpoint cannot be reached or answers nonsense → 503', () => {
  it('an endpoint nothing listens on (real fetch) → 503 temporarily_unavailable with Retry-After', async () => {
    const h = createHarness();
    const verifier = introspectionVerifier({ authorizationServer: ISSUER, endpoint: 'http://127.0.0.1:1/introspect', clientId: 'rs', clientSecret: 's' });
    const response = await ask(protect(h, verifier), 'Bearer some-token');
    assert.equal(response.headers.get('retry-after'), '5');
    await expectDenied(response, 503, 'temporarily_unavailable');
  });

  it('the AS metadata unreachable → 503; discovery is retried on the next request', async () => {
    const h = createHarness();
    const calls: string[] = [];
    const reach = routeFetch([h.server], calls);
    let down = true;
    const { clientId, clientSecret } = await addIntrospectionClient(h);
    const verifier = introspectionVerifier({
      authorizationServer: ISSUER,
      clientId,
      clientSecret,
      now: () => h.clock.now,
      fetch: (input, init) => (down ? Promise.reject(new TypeError('fetch failed')) : reach(input, init)),
    });
    const protection = protect(h, verifier);
    const token = await accessToken(h, REVISIONS[1]);
    await expectDenied(await ask(protection, bearer(token)), 503, 'temporarily_unavailable');
    down = false;
    assert.equal((await ask(protection, bearer(token))).status, 200);
  });

  for (const [name, answer] of [
    ['500', () => new Response('oops', { status: 500 })],
    ['not JSON', () => new Response('<html>', { status: 200 })],
    ['JSON without active', () => Response.json({ scope: 'mcp:tools' })],
    ['a network error', () => Promise.reject(new Error('socket hang up'))],
  ] as const) {
    it(`an answer that is ${name} → 503`, async () => {
      const h = createHarness();
      const verifier = answering(h, answer);
      await refused(verifier.verify('t'), 'unavailable');
      await expectDenied(await ask(protect(h, verifier), 'Bearer t'), 503, 'temporarily_unavailable');
    });
  }

  it('metadata without an introspection endpoint → 503', async () => {
    const verifier = introspectionVerifier({
      authorizationServer: ISSUER,
      clientId: 'rs',
      clientSecret: 's',
      fetch: async () => Response.json({ issuer: ISSUER, token_endpoint: `${ISSUER}/token` }),
    });
    await refused(verifier.verify('t'), 'unavailable');
  });
});

describe('introspection verifier: what an active answer must say', () => {
  it('an answer from another issuer → 401', async () => {
    const h = createHarness();
    const verifier = answering(h, () => Response.json({ active: true, iss: OTHER_ISSUER, sub: 'x', client_id: 'c', aud: RESOURCE, exp: h.clock.now + 60 }));
    await refused(verifier.verify('t'), 'invalid_token', /not issued by the trusted authorization server/);
  });

  it('an active answer whose exp has passed → 401', async () => {
    const h = createHarness();
    const verifier = answering(h, () => Response.json({ active: true, iss: ISSUER, sub: 'x', client_id: 'c', aud: RESOURCE, exp: h.clock.now }));
    await refused(verifier.verify('t'), 'invalid_token', /expired/);
  });

  it('an answer without aud cannot pass the guard’s audience check', async () => {
    const h = createHarness();
    const verifier = answering(h, () => Response.json({ active: true, iss: ISSUER, sub: 'x', client_id: 'c', scope: 'mcp:tools', exp: h.clock.now + 60 }));
    await expectDenied(await ask(protect(h, verifier), 'Bearer t'), 401, 'invalid_token');
  });

  it('an answer with aud as a list naming us passes', async () => {
    const h = createHarness();
    const verifier = answering(h, () =>
      Response.json({
        active: true,
        iss: ISSUER,
        sub: 'x',
        client_id: 'c',
        scope: 'mcp:tools',
        aud: ['https://elsewhere.example', RESOURCE],
        exp: h.clock.now + 60,
      }),
    );
    const auth = (await (await ask(protect(h, verifier), 'Bearer t')).json()) as { audience: string[]; subject: string };
    assert.deepEqual(auth.audience, ['https://elsewhere.example', RESOURCE]);
    assert.equal(auth.subject, 'x');
  });

  it('an answer with act gives the app the actors; a malformed act is refused', async () => {
    const h = createHarness();
    const delegated = answering(h, () =>
      Response.json({
        active: true,
        iss: ISSUER,
        sub: 'x',
        client_id: 'notes-server',
        scope: 'mcp:tools',
        aud: RESOURCE,
        exp: h.clock.now + 60,
        act: { sub: 'notes-server' },
      }),
    );
    assert.deepEqual((await accepted(delegated.verify('t'))).actors, ['notes-server']);
    const malformed = answering(h, () =>
      Response.json({ active: true, iss: ISSUER, sub: 'x', client_id: 'c', aud: RESOURCE, exp: h.clock.now + 60, act: { client_id: 'c' } }),
    );
    await refused(malformed.verify('t'), 'invalid_token', /act claim is malformed/);
  });

  it('a DPoP-bound answer (cnf.jkt) needs a proof by that key on every request, the cached answer too', async () => {
    const h = createHarness();
    const signer = dpopProofSigner(generateDpopKeyPair());
    let answers = 0;
    const verifier = answering(h, () => {
      answers++;
      return Response.json({
        active: true,
        iss: ISSUER,
        sub: 'x',
        client_id: 'c',
        scope: 'mcp:tools',
        aud: RESOURCE,
        exp: h.clock.now + 60,
        cnf: { jkt: signer.jkt },
      });
    });
    const protection = protect(h, verifier, { now: () => h.clock.now });
    const send = (authorization: string, proof?: string) =>
      protection.authenticate(new Request(RESOURCE, { method: 'POST', headers: { authorization, ...(proof === undefined ? {} : { dpop: proof }) } }));
    const proof = () => signer.sign({ method: 'POST', url: RESOURCE, accessToken: 't', now: h.clock.now });
    const first = await send('DPoP t', proof());
    assert.equal(first.ok && first.auth.jkt, signer.jkt);
    assert.equal((await send('DPoP t', proof())).ok, true);
    assert.equal(answers, 1);
    for (const [authorization, dpop] of [
      ['DPoP t', undefined],
      ['Bearer t', undefined],
      ['DPoP t', dpopProofSigner(generateDpopKeyPair()).sign({ method: 'POST', url: RESOURCE, accessToken: 't', now: h.clock.now })],
    ] as const) {
      const refused = await send(authorization, dpop);
      assert.equal(refused.ok, false);
      if (!refused.ok) assert.equal(refused.response.status, 401);
    }
    assert.equal(answers, 1);
  });
});
