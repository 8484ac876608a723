/**
 * The peers in bench/refresh-peers.ts are set up as bench/README.md says: each starts in its own
 * process with a grant ready to refresh, answers the refresh_token grant with a rotated refresh
 * token (the presented one refused afterwards), issues the kind of access token the README names,
 * and reports its own CPU time over IPC. A peer quietly not rotating, or answering errors, would
 * make every ratio in the table meaningless.
 *
 * Started for the flows bench (BENCH_FLOWS=1), each completes one authorization code flow of a
 * reconnecting client — a code straight from /authorize with the person's cookies, no page, and
 * tokens for it — and, for the servers that need a person, the same request without the cookies
 * does not get a code (the session, not a shortcut, is what lets it through). Ours also completes
 * a first sign-in with the password.
 *
 * Started for the machine-grants bench (BENCH_MACHINE_JWK), each issues client_credentials
 * tokens to its secret client and to its private_key_jwt client (the load generator's assertion),
 * refuses a wrong secret and an assertion whose jti it has seen: a server not checking what the
 * row's name says would make its figures meaningless.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import {
  clientCredentialsWithAssertion,
  clientCredentialsWithSecret,
  jwtBearerWithIdJag,
  jwtBearerWithWorkloadToken,
  machineGrant,
  machineKey,
  startAssertionIssuer,
  type RequestBuilder,
} from '../../bench/peers/machine.js';
import { firstSignIn, flow, refresh, startPeer, stopPeer, type Peer, type Running } from '../../bench/peers/process.js';
import { startServePeer } from '../../bench/peers/serve.js';

process.env.BENCH_CHAINS = '2';

const peers: { peer: Peer; accessToken: RegExp }[] = [
  { peer: { name: 'ours', script: 'ours.ts', args: ['sqlite'], env: { BENCH_GRANTS: '1000' } }, accessToken: /"alg":"ES256"/ },
  { peer: { name: 'sdk', script: 'sdk.ts' }, accessToken: /^opaque$/ },
  { peer: { name: 'oidc-provider', script: 'oidc.ts' }, accessToken: /"alg":"RS256"/ },
  { peer: { name: 'Better Auth', script: 'better-auth.ts' }, accessToken: /"alg":"EdDSA"/ },
];

/** The JWT header as JSON, or "opaque" when the token is not a JWT. */
function tokenKind(token: string): string {
  const parts = token.split('.');
  return parts.length === 3 ? Buffer.from(parts[0]!, 'base64url').toString() : 'opaque';
}

describe('bench peers', () => {
  const running: Running[] = [];
  after(async () => void (await Promise.all(running.map(stopPeer))));

  it('the floor (node:http alone) answers the refresh request as ours does, fixed, and reports its CPU', async () => {
    const server = await startPeer({ name: 'floor', script: 'floor.ts' }, false);
    running.push(server);
    const before = await server.usage();
    const response = await fetch(`http://127.0.0.1:${server.port}/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: server.refreshTokens[0]!, client_id: server.clientId }),
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    const body = (await response.json()) as { access_token: string; refresh_token: string; token_type: string };
    // The size of an ES256 access token of ours, so the floor writes as many bytes.
    assert.ok(body.access_token.length >= 500 && body.access_token.length <= 560, `access token of ${body.access_token.length} characters`);
    assert.equal(await refresh(server, body.refresh_token), body.refresh_token);
    const wrong = await fetch(`http://127.0.0.1:${server.port}/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'password' }) });
    assert.equal(wrong.status, 400);
    assert.ok((await server.usage()).cpu > before.cpu);
  });

  for (const { peer, accessToken } of peers) {
    it(`${peer.name}: rotates the refresh token at every use and reports its CPU`, async () => {
      const server = await startPeer(peer, false);
      running.push(server);
      assert.equal(server.refreshTokens.length, 2);
      const before = await server.usage();

      const response = await fetch(`http://127.0.0.1:${server.port}${server.tokenPath ?? '/token'}`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: server.refreshTokens[0]!, client_id: server.clientId }),
      });
      assert.equal(response.status, 200);
      const body = (await response.json()) as { access_token: string; refresh_token: string };
      assert.match(tokenKind(body.access_token), accessToken);
      assert.notEqual(body.refresh_token, server.refreshTokens[0]);

      const third = await refresh(server, body.refresh_token);
      assert.notEqual(third, body.refresh_token);
      // Once its successor has been used, a rotated token is refused (before that, ours would
      // take it as the retry of a refresh whose answer was lost). Better Auth's MCP plugin instead
      // answers a rotated token's reuse within 30 s with the answer it gave the first time.
      await refresh(server, third);
      if (peer.name === 'Better Auth') assert.equal(await refresh(server, body.refresh_token), third);
      else await assert.rejects(refresh(server, body.refresh_token), /answered 400/);
      // The other chain is untouched by the first one's rotations.
      await refresh(server, server.refreshTokens[1]!);

      const usage = await server.usage();
      assert.ok(usage.cpu > before.cpu, 'CPU time grows with the work done');
      assert.ok(usage.rss > 0);
    });
  }

  it('context-auth serve as shipped: rotates at every use, its audit lines in its log file, its CPU and RSS read from /proc', async () => {
    const server = await startServePeer('serve', [], 2, false);
    try {
      assert.equal(server.refreshTokens.length, 2);
      const before = await server.usage();
      const second = await refresh(server, server.refreshTokens[0]!);
      await refresh(server, second);
      await assert.rejects(refresh(server, server.refreshTokens[0]!), /answered 400/);
      const usage = await server.usage();
      // /proc counts in clock ticks (10 ms): three refreshes may not add one.
      assert.ok(before.cpu > 0, 'its CPU time so far, start and seeding included');
      assert.ok(usage.cpu >= before.cpu);
      assert.ok(usage.rss > 0);
      const log = readFileSync(server.logFile, 'utf8');
      assert.match(log, /Listening on/);
      assert.equal(log.match(/"event":"token_refreshed"/g)?.length, 2, 'one audit line per refresh, on stderr');
    } finally {
      await server.stop();
    }
  });

  it('Better Auth: SQLite as it leaves it (rollback journal, synchronous FULL), JWTs for the MCP resource, no rate limit', async () => {
    const server = await startPeer({ name: 'Better Auth', script: 'better-auth.ts' }, false);
    running.push(server);
    assert.deepEqual(server.sqlite, { journalMode: 'delete', synchronous: 2 });
    assert.equal(server.tokenPath, '/api/auth/oauth2/token');
    // Its token endpoint's own limit is 20 a minute per client address; the bench turns it off.
    let token = server.refreshTokens[0]!;
    for (let i = 0; i < 25; i++) token = await refresh(server, token);
    const response = await fetch(`http://127.0.0.1:${server.port}${server.tokenPath}`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token, client_id: server.clientId }),
    });
    const body = (await response.json()) as { access_token: string; refresh_token: string; scope: string };
    const claims = JSON.parse(Buffer.from(body.access_token.split('.')[1]!, 'base64url').toString()) as { aud: string; scope: string };
    assert.equal(claims.aud, 'http://127.0.0.1/mcp');
    assert.equal(body.scope, 'mcp:tools offline_access');
    assert.equal(tokenKind(body.refresh_token), 'opaque');
  });

  const flowPeers: { peer: Peer; accessToken: RegExp; needsPerson: boolean }[] = [
    { peer: { name: 'ours', script: 'ours.ts', args: ['sqlite'], env: { BENCH_FLOWS: '1' } }, accessToken: /"alg":"ES256"/, needsPerson: true },
    { peer: { name: 'sdk', script: 'sdk.ts', env: { BENCH_FLOWS: '1' } }, accessToken: /^opaque$/, needsPerson: false },
    { peer: { name: 'oidc-provider', script: 'oidc.ts', env: { BENCH_FLOWS: '1' } }, accessToken: /"alg":"RS256"/, needsPerson: true },
    { peer: { name: 'Better Auth', script: 'better-auth.ts', env: { BENCH_FLOWS: '1' } }, accessToken: /"alg":"EdDSA"/, needsPerson: true },
  ];
  for (const { peer, accessToken, needsPerson } of flowPeers) {
    it(`${peer.name}: completes a reconnecting client's flow with the person's cookies, without a page`, async () => {
      const server = await startPeer(peer, false);
      running.push(server);
      assert.ok(server.flow, 'flow setup announced');
      assert.equal(server.flow.cookies.length, needsPerson ? 2 : 0);

      const tokens = await flow(server, 0);
      assert.match(tokenKind(tokens.access_token), accessToken);
      // The refresh token it issued works like any other.
      await refresh(server, tokens.refresh_token);
      // Twice more on both browsers: the cookies stay good from flow to flow.
      for (const chain of [0, 1, 1]) await flow(server, chain);

      if (needsPerson) {
        const cookies = server.flow.cookies;
        server.flow.cookies = [];
        await assert.rejects(flow(server, 0), /authorize answered/);
        server.flow.cookies = cookies;
      }
      if (server.flow.user) assert.match(tokenKind((await firstSignIn(server)).access_token), accessToken);
    });
  }

  const key = machineKey();
  const machinePeers: { peer: Peer; accessToken: RegExp }[] = [
    { peer: { name: 'ours', script: 'ours.ts', args: ['sqlite'], env: key.env }, accessToken: /"alg":"ES256"/ },
    { peer: { name: 'oidc-provider', script: 'oidc.ts', env: key.env }, accessToken: /"alg":"RS256"/ },
  ];
  for (const { peer, accessToken } of machinePeers) {
    it(`${peer.name}: issues client_credentials tokens for a secret and for a client assertion, each checked`, async () => {
      const server = await startPeer(peer, false);
      running.push(server);
      assert.ok(server.machine, 'machine clients announced');
      const withAssertion = clientCredentialsWithAssertion(key);
      for (const build of [clientCredentialsWithSecret, withAssertion, withAssertion]) {
        const body = await machineGrant(server, build);
        assert.match(tokenKind(body.access_token as string), accessToken);
        assert.equal(JSON.parse(Buffer.from((body.access_token as string).split('.')[1]!, 'base64url').toString()).aud, server.machine.resource);
        assert.equal(body.refresh_token, undefined);
      }

      const wrongSecret: RequestBuilder = (s) => {
        const request = clientCredentialsWithSecret(s);
        return { ...request, headers: { authorization: `${request.headers.authorization}x` } };
      };
      await assert.rejects(machineGrant(server, wrongSecret), /answered 40[01]/);
      const replayed = clientCredentialsWithAssertion(key, () => 'the same jti');
      await machineGrant(server, replayed);
      await assert.rejects(machineGrant(server, replayed), /answered 40[01]/, 'a jti is accepted once');
    });
  }

  it('the floor answers the machine grant requests with a fixed body', async () => {
    const server = await startPeer({ name: 'floor', script: 'floor.ts', env: key.env }, false);
    running.push(server);
    for (const build of [clientCredentialsWithSecret, clientCredentialsWithAssertion(key)]) {
      const body = await machineGrant(server, build);
      assert.ok((body.access_token as string).length >= 500);
      assert.equal(body.refresh_token, undefined);
    }
  });

  it('ours, trusting the load generator as an issuer: the jwt-bearer grant with a workload token and with an ID-JAG, no refresh token', async () => {
    const issuer = await startAssertionIssuer(key);
    try {
      const server = await startPeer({ name: 'ours', script: 'ours.ts', args: ['sqlite'], env: { ...key.env, BENCH_ASSERTION_ISSUER: issuer.issuer } }, false);
      running.push(server);
      assert.equal(server.machine?.workloadClientId, 'bench-workload');
      for (const build of [jwtBearerWithWorkloadToken(key, issuer.issuer), jwtBearerWithIdJag(key, issuer.issuer)]) {
        const body = await machineGrant(server, build);
        assert.equal(JSON.parse(Buffer.from((body.access_token as string).split('.')[1]!, 'base64url').toString()).aud, server.machine!.resource);
        assert.equal(body.refresh_token, undefined);
      }
    } finally {
      await issuer.close();
    }
  });
});
