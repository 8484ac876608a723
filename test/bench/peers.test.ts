/**
 * The peers in bench/refresh-peers.ts are set up as bench/README.md says: each starts in its own
 * process with a grant ready to refresh, answers the refresh_token grant with a rotated refresh
 * token (the presented one refused afterwards), issues the kind of access token the README names,
 * and reports its own CPU time over IPC. A peer quietly not rotating, or answering errors, would
 * make every ratio in the table meaningless.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { refresh, startPeer, stopPeer, type Peer, type Running } from '../../bench/peers/process.js';

process.env.BENCH_CHAINS = '2';

const peers: { peer: Peer; accessToken: RegExp }[] = [
  { peer: { name: 'ours', script: 'ours.ts', args: ['sqlite'], env: { BENCH_GRANTS: '1000' } }, accessToken: /"alg":"ES256"/ },
  { peer: { name: 'sdk', script: 'sdk.ts' }, accessToken: /^opaque$/ },
  { peer: { name: 'oidc-provider', script: 'oidc.ts' }, accessToken: /"alg":"RS256"/ },
];

/** The JWT header as JSON, or "opaque" when the token is not a JWT. */
function tokenKind(token: string): string {
  const parts = token.split('.');
  return parts.length === 3 ? Buffer.from(parts[0]!, 'base64url').toString() : 'opaque';
}

describe('bench peers', () => {
  const running: Running[] = [];
  after(async () => void (await Promise.all(running.map(stopPeer))));

  for (const { peer, accessToken } of peers) {
    it(`${peer.name}: rotates the refresh token at every use and reports its CPU`, async () => {
      const server = await startPeer(peer, false);
      running.push(server);
      assert.equal(server.refreshTokens.length, 2);
      const before = await server.usage();

      const response = await fetch(`http://127.0.0.1:${server.port}/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: server.refreshTokens[0]!, client_id: server.clientId }),
      });
      assert.equal(response.status, 200);
      const body = (await response.json()) as { access_token: string; refresh_token: string };
      assert.match(tokenKind(body.access_token), accessToken);
      assert.notEqual(body.refresh_token, server.refreshTokens[0]);

      const third = await refresh(server, body.refresh_token);
      assert.notEqual(third, body.refresh_token);
      await assert.rejects(refresh(server, body.refresh_token), /answered 400/);
      // The other chain is untouched by the first one's rotations.
      await refresh(server, server.refreshTokens[1]!);

      const usage = await server.usage();
      assert.ok(usage.cpu > before.cpu, 'CPU time grows with the work done');
      assert.ok(usage.rss > 0);
    });
  }
});
