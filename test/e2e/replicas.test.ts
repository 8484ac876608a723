/**
 * Atomicity across replicas: two `context-auth serve` processes on one PostgreSQL database, with
 * the same issuer, as behind a load balancer. The same code is redeemed at both at the same
 * moment, many times: exactly one wins each race, and the loser's request (a replay) revokes the
 * family. The same refresh token at both at once: one rotates it, the other is taken for a retry
 * of that rotation (the rule lives in the database, so either replica may meet it) and answered
 * with the same token, the family's one live token; each replica's next refresh of it, in either
 * order, is answered, the later as a retry; the shared token, once its successor is used, revokes
 * the family at either replica. A key rotated by the
 * CLI reaches both replicas, tokens signed before it stay valid, and a running verifier accepts
 * the new key's tokens. A client assertion (private_key_jwt) used at one replica is refused at the
 * other, and sent to both at once, is accepted by exactly one.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import pg from 'pg';
import { jwtSigner } from '../../src/core/jwt.js';
import { hashSecret } from '../../src/core/secrets.js';
import { jwtVerifier } from '../../src/resource-server/verify-jwt.js';
import { Browser, pkcePair, signInAndConsent } from '../helpers/harness.js';
import { startPostgres, type TestDatabase } from '../helpers/postgres.js';
import { cli, freePort, startServe, type RunningServer } from './serve-process.js';
import { accepted } from '../helpers/token-verification.js';

const USER = { username: 'alice', password: 'correct horse battery staple' };
const CALLBACK = 'http://127.0.0.1:45678/callback';
/** Races per kind; CONTEXT_AUTH_TEST_RACE_ROUNDS runs more, to hunt for rare interleavings. */
const ROUNDS = Number(process.env['CONTEXT_AUTH_TEST_RACE_ROUNDS'] ?? 25);

interface TokenBody {
  access_token: string;
  refresh_token: string;
  error?: string;
}

/**
 * Every request comes from 127.0.0.1: the default token limit (300 at once, 600 a minute per
 * address) holds the default rounds; a long race hunt (CONTEXT_AUTH_TEST_RACE_ROUNDS) raises it.
 */
const RACE_LIMITS = ROUNDS > 25 ? ['--rate-limit', 'token=100000/minute,burst=100000'] : [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('two serve replicas on one PostgreSQL database', () => {
  let database: TestDatabase | undefined;
  const replicas: RunningServer[] = [];
  let issuer: string;
  /** Where each replica listens; both say they are `issuer` (A's address). */
  let baseA: string;
  let baseB: string;
  let clientId: string;
  const browser = new Browser((path, init) => fetch(new URL(path, baseA), init));

  const post = (base: string, path: string, values: Record<string, string>) =>
    fetch(new URL(path, base), { method: 'POST', body: new URLSearchParams(values), headers: { 'content-type': 'application/x-www-form-urlencoded' } });

  const redeem = (base: string, code: string, verifier: string) =>
    post(base, '/token', {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: CALLBACK,
      client_id: clientId,
      resource: `${issuer}/mcp`,
    });

  const refresh = (base: string, token: string) => post(base, '/token', { grant_type: 'refresh_token', refresh_token: token, client_id: clientId });

  /** One authorization at replica A (after the first, session and consent make it immediate). */
  async function authorizeOnce(state: string): Promise<{ code: string; verifier: string }> {
    const { verifier, challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: CALLBACK,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state,
      resource: `${issuer}/mcp`,
    });
    const callback = await signInAndConsent(browser, await browser.fetch(`/authorize?${query}`), USER, 'approve', issuer);
    assert.equal(callback.searchParams.get('state'), state);
    assert.equal(callback.searchParams.get('iss'), issuer);
    return { code: callback.searchParams.get('code')!, verifier };
  }

  async function tokensFrom(base: string): Promise<TokenBody> {
    const { code, verifier } = await authorizeOnce(`tokens-${Math.random()}`);
    const response = await redeem(base, code, verifier);
    assert.equal(response.status, 200);
    return (await response.json()) as TokenBody;
  }

  async function jwks(base: string): Promise<JSONWebKeySet> {
    const response = await fetch(new URL('/jwks', base));
    assert.equal(response.status, 200);
    return (await response.json()) as JSONWebKeySet;
  }

  /** Both answers of a race, as [winner, loser]; fails unless exactly one got 200 and the other 400 invalid_grant. */
  async function oneWinner(round: number, kind: string, responses: Response[]): Promise<{ winner: TokenBody; winnerIndex: number }> {
    const bodies = await Promise.all(responses.map(async (r) => ({ status: r.status, body: (await r.json()) as TokenBody })));
    const statuses = bodies.map((b) => b.status);
    const winners = bodies.filter((b) => b.status === 200);
    assert.equal(
      winners.length,
      1,
      `${kind} round ${round}: exactly one replica wins, got ${statuses.join(' and ')}: ${JSON.stringify(bodies.map((b) => b.body.error))}`,
    );
    const loser = bodies.find((b) => b.status !== 200)!;
    assert.equal(loser.status, 400, `${kind} round ${round}: the loser gets 400, got ${loser.status}`);
    assert.equal(loser.body.error, 'invalid_grant');
    return { winner: winners[0]!.body, winnerIndex: bodies.indexOf(winners[0]!) };
  }

  before(async () => {
    database = await startPostgres();
    const store = database.connectionString;
    const added = await cli(['users', 'add', USER.username, '--store', store], `${USER.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    const [portA, portB] = [await freePort(), await freePort()];
    issuer = `http://127.0.0.1:${portA}`;
    baseA = issuer;
    baseB = `http://127.0.0.1:${portB}`;
    // Started together: both open (and migrate) the same database at once.
    const started = await Promise.allSettled(
      [portA, portB].map((port) => startServe(['--port', String(port), '--issuer', issuer, '--store', store, '--quiet', ...RACE_LIMITS])),
    );
    for (const result of started) if (result.status === 'fulfilled') replicas.push(result.value);
    for (const result of started) if (result.status === 'rejected') throw result.reason;
    for (const replica of replicas) assert.equal(replica.issuer, issuer);

    const registration = await fetch(`${baseA}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Replicas',
        redirect_uris: [CALLBACK],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
      }),
    });
    assert.equal(registration.status, 201);
    clientId = ((await registration.json()) as { client_id: string }).client_id;
  });

  after(async () => {
    await Promise.all(replicas.map((replica) => replica.stop()));
    await database?.stop();
  });

  /** One request to a replica's demo MCP server with the token: 200 when accepted. */
  async function mcpStatus(base: string, accessToken: string): Promise<number> {
    const response = await fetch(new URL('/mcp', base), {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    await response.body?.cancel();
    return response.status;
  }

  /** Waits until replica `base` refuses the token; fails after `withinMs`. Returns how long it took. */
  async function refusedWithin(base: string, accessToken: string, withinMs: number): Promise<number> {
    const started = Date.now();
    while ((await mcpStatus(base, accessToken)) === 200) {
      assert.ok(Date.now() - started < withinMs, `still accepted at ${base} ${withinMs} ms after the revocation`);
      await sleep(20);
    }
    return Date.now() - started;
  }

  it('a grant revoked at one replica is refused at the other within a second (NOTIFY; the fallback poll is 30 s)', async () => {
    const { code, verifier } = await authorizeOnce('notify');
    const tokens = (await (await redeem(baseA, code, verifier)).json()) as TokenBody;
    assert.equal(await mcpStatus(baseB, tokens.access_token), 200, 'accepted (and cached) at B first');
    assert.equal((await redeem(baseA, code, verifier)).status, 400, 'the replay at A revokes the grant');
    assert.equal(await mcpStatus(baseA, tokens.access_token), 401, 'A refuses on the next request');
    await refusedWithin(baseB, tokens.access_token, 1000);
  });

  it('consents revoke from the CLI on the database reaches both replicas within a second', async () => {
    const tokens = await tokensFrom(baseA);
    assert.equal(await mcpStatus(baseA, tokens.access_token), 200);
    assert.equal(await mcpStatus(baseB, tokens.access_token), 200);
    const revoked = await cli(['consents', 'revoke', '--user', USER.username, '--client', clientId, '--store', database!.connectionString]);
    assert.equal(revoked.code, 0, revoked.stderr);
    await Promise.all([refusedWithin(baseA, tokens.access_token, 1000), refusedWithin(baseB, tokens.access_token, 1000)]);
  });

  it('a client assertion used at one replica is refused at the other; sent to both at once, exactly one accepts it', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwksFile = join(mkdtempSync(join(tmpdir(), 'ca-replicas-')), 'keys.json');
    writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1' }] }));
    const added = await cli([
      'clients',
      'add',
      '--name',
      'robot',
      '--grant-type',
      'client_credentials',
      '--jwks',
      jwksFile,
      '--store',
      database!.connectionString,
      '--json',
    ]);
    assert.equal(added.code, 0, added.stderr);
    const robot = (JSON.parse(added.stdout) as { client_id: string }).client_id;
    const sign = jwtSigner({ alg: 'ES256', kid: 'k1', typ: 'JWT' }, privateKey);
    const assertion = () => {
      const now = Math.floor(Date.now() / 1000);
      return sign({ iss: robot, sub: robot, aud: issuer, jti: randomUUID(), iat: now, exp: now + 60 });
    };
    const viaAssertion = (base: string, token: string) =>
      post(base, '/token', {
        grant_type: 'client_credentials',
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: token,
      });

    const used = assertion();
    assert.equal((await viaAssertion(baseA, used)).status, 200);
    const replay = await viaAssertion(baseB, used);
    assert.equal(replay.status, 401);
    const body = (await replay.json()) as { error: string; error_description: string };
    assert.equal(body.error, 'invalid_client');
    assert.match(body.error_description, /used before/);

    for (let round = 0; round < 5; round++) {
      const raced = assertion();
      const statuses = (await Promise.all([viaAssertion(baseA, raced), viaAssertion(baseB, raced)])).map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, 401], `round ${round}: exactly one replica accepts the assertion`);
    }
  });

  it('both replicas serve the same issuer and the same keys', async () => {
    for (const base of [baseA, baseB]) {
      const metadata = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as { issuer: string; token_endpoint: string };
      assert.equal(metadata.issuer, issuer);
      assert.equal(metadata.token_endpoint, `${issuer}/token`);
    }
    assert.deepEqual(await jwks(baseB), await jwks(baseA), 'one signing key, created once for both');
  });

  it(`the same code redeemed at both replicas at once: exactly one wins, ${ROUNDS} times, and the replay revokes the grant`, async (t) => {
    const wins = [0, 0];
    for (let round = 0; round < ROUNDS; round++) {
      const { code, verifier } = await authorizeOnce(`code-race-${round}`);
      // Alternate which replica is asked first, so neither is favoured by the order.
      const order = round % 2 === 0 ? [baseA, baseB] : [baseB, baseA];
      const responses = await Promise.all(order.map((base) => redeem(base, code, verifier)));
      const { winner, winnerIndex } = await oneWinner(round, 'code', responses);
      wins[order[winnerIndex] === baseA ? 0 : 1]!++;
      // The loser's request was a replay of a used code: the grant, and so the winner's refresh token, is dead.
      const dead = await refresh(round % 2 === 0 ? baseA : baseB, winner.refresh_token);
      assert.equal(dead.status, 400, `code round ${round}: the winner's refresh token is revoked`);
      assert.equal(((await dead.json()) as TokenBody).error, 'invalid_grant');
    }
    t.diagnostic(`code races won: A ${wins[0]}, B ${wins[1]}`);
  });

  it(`the same refresh token at both replicas at once, ${ROUNDS} times: both answered with the family's one live token, then each replica's refresh of it, in either order, answered too`, async () => {
    const db = new pg.Client({ connectionString: database!.connectionString });
    await db.connect();
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const tokens = await tokensFrom(round % 2 === 0 ? baseA : baseB);
        const order = round % 2 === 0 ? [baseA, baseB] : [baseB, baseA];
        const responses = await Promise.all(order.map((base) => refresh(base, tokens.refresh_token)));
        const bodies = await Promise.all(responses.map(async (r) => ({ status: r.status, body: (await r.json()) as TokenBody })));
        assert.deepEqual(
          bodies.map((b) => b.status),
          [200, 200],
          `refresh round ${round}: ${JSON.stringify(bodies.map((b) => b.body.error))}`,
        );
        const shared = bodies[0]!.body.refresh_token;
        assert.equal(bodies[1]!.body.refresh_token, shared, `refresh round ${round}: one token for both answers`);
        const { rows } = await db.query<{ live: string }>(
          'SELECT (SELECT count(*) FROM refresh_tokens f WHERE f.grant_id = r.grant_id) AS live FROM refresh_tokens r WHERE token_hash = $1',
          [hashSecret(shared)],
        );
        assert.equal(rows.length, 1, `refresh round ${round}: the shared token is live`);
        assert.equal(Number(rows[0]!.live), 1, `refresh round ${round}: the family's only live token`);

        // Each replica's session refreshes the token it got; the later one is a retry of the earlier.
        const next = [];
        for (const base of round % 4 < 2 ? order : [...order].reverse()) next.push(await refresh(base, shared));
        const nextBodies = await Promise.all(next.map(async (r) => ({ status: r.status, body: (await r.json()) as TokenBody })));
        assert.deepEqual(
          nextBodies.map((b) => b.status),
          [200, 200],
          `refresh round ${round}, next: ${JSON.stringify(nextBodies.map((b) => b.body.error))}`,
        );
        assert.equal(nextBodies[1]!.body.refresh_token, nextBodies[0]!.body.refresh_token, `refresh round ${round}: the later refresh is a retry`);

        // Once its successor is used, the shared token is a reuse, at whichever replica: the family goes.
        const newest = await refresh(order[0]!, nextBodies[0]!.body.refresh_token);
        assert.equal(newest.status, 200);
        const newestToken = ((await newest.json()) as TokenBody).refresh_token;
        const revoking = await refresh(order[1]!, shared);
        assert.equal(revoking.status, 400, `refresh round ${round}: the spent shared token is refused`);
        for (const base of [baseA, baseB]) {
          const dead = await refresh(base, newestToken);
          assert.equal(dead.status, 400, `refresh round ${round}: the newest token went with the family (at ${base === baseA ? 'A' : 'B'})`);
          assert.equal(((await dead.json()) as TokenBody).error, 'invalid_grant');
        }
      }
    } finally {
      await db.end();
    }
  });

  it('a key rotated by the CLI reaches both replicas; old tokens stay valid, new ones verify without a restart', async (t) => {
    const before = await tokensFrom(baseA);
    const oldKid = decodeProtectedHeader(before.access_token).kid!;
    // A resource server running all along, reaching replica B (the metadata names A's address, the issuer).
    const verifier = jwtVerifier({
      authorizationServers: [issuer],
      fetch: (input, init) => fetch(String(input instanceof Request ? input.url : input).replace(issuer, baseB), init),
    });
    assert.equal((await accepted(verifier.verify(before.access_token))).clientId, clientId);

    const rotated = await cli(['keys', 'rotate', '--json', '--store', database!.connectionString]);
    assert.equal(rotated.code, 0, rotated.stderr);
    const rotatedAt = Date.now();
    const { kid: newKid } = JSON.parse(rotated.stdout) as { kid: string };
    assert.notEqual(newKid, oldKid);

    // Published by both within seconds (each caches the keys for 5 s).
    const published = new Map<string, JSONWebKeySet>();
    while (published.size < 2 && Date.now() - rotatedAt < 20_000) {
      for (const base of [baseA, baseB]) {
        const set = await jwks(base);
        if (set.keys.some((key) => key.kid === newKid)) published.set(base, set);
      }
      if (published.size < 2) await sleep(250);
    }
    assert.equal(published.size, 2, 'both replicas publish the new key within 20 s');
    t.diagnostic(`new key published by both after ${Date.now() - rotatedAt} ms`);
    const setB = published.get(baseB)!;
    assert.ok(
      setB.keys.some((key) => key.kid === oldKid),
      'the previous key stays published',
    );

    // A token signed by A before the rotation verifies against B's keys.
    const { payload } = await jwtVerify(before.access_token, createLocalJWKSet(setB), { issuer, audience: `${issuer}/mcp` });
    assert.equal(payload.client_id, clientId);

    // Once the activation delay has passed, B signs with the new key (poll until it does).
    let live = before.refresh_token;
    let fresh: TokenBody | undefined;
    while (Date.now() - rotatedAt < 25_000) {
      const response = await refresh(baseB, live);
      assert.equal(response.status, 200);
      const body = (await response.json()) as TokenBody;
      live = body.refresh_token;
      const kid = decodeProtectedHeader(body.access_token).kid;
      if (kid === newKid) {
        fresh = body;
        break;
      }
      assert.equal(kid, oldKid);
      // Before the activation delay the old key still signs, so every verifier knows the key of any token it gets.
      // (10 s after the rotation, plus up to 5 s of the replica's key cache, plus a margin.)
      assert.ok(Date.now() - rotatedAt < 18_000, 'the new key signs within ~15 s');
      await sleep(500);
    }
    assert.ok(fresh, 'replica B signs with the new key after the activation delay');
    t.diagnostic(`B signs with the new key after ${Date.now() - rotatedAt} ms`);

    // The running verifier has never seen the new key: it refetches B's JWKS and accepts the token.
    const verified = await accepted(verifier.verify(fresh.access_token));
    assert.equal(verified.clientId, clientId);
    assert.deepEqual(verified.audience, [`${issuer}/mcp`]);
    // So do both replicas' own context servers (their verifiers were running too): 405 is past the bearer check.
    for (const base of [baseA, baseB]) {
      const mcp: Response = await fetch(`${base}/mcp`, { headers: { authorization: `Bearer ${fresh.access_token}` } });
      assert.equal(mcp.status, 405, `${base}/mcp accepts the new key's token`);
    }
    // And the token from before the rotation is still accepted by the same verifier.
    assert.equal((await accepted(verifier.verify(before.access_token))).clientId, clientId);
  });
});
