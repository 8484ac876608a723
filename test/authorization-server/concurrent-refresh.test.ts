/**
 * Two sessions of one MCP host share one credentials store, and so one refresh token: both refresh
 * it at the same moment. Over real HTTP (the app `serve` runs, on @hono/node-server on loopback),
 * on SQLite and PostgreSQL, both are answered 200 with the same new refresh token; then each
 * session refreshes the token it was given, in either order, and both are answered again (the
 * second refresh is itself the retry of the first): no one is signed out by the race. The family
 * keeps one live token throughout, and a spent token presented after its successor was used still
 * revokes it.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { serve, type ServerType } from '@hono/node-server';
import { hashSecret } from '../../src/core/secrets.js';
import { coHostedServer, type CoHosted } from '../helpers/co-hosted.js';
import { obtainTokens, REVISIONS, type TestClient } from '../helpers/harness.js';
import { STORE_KINDS, type OpenedStore } from '../helpers/stores.js';

/** Races per order of the sessions' next refreshes. */
const ROUNDS = 5;

interface Answer {
  status: number;
  body: { access_token?: string; refresh_token?: string; error?: string; error_description?: string };
}

for (const kind of STORE_KINDS) {
  describe(`two sessions refreshing one token at once, over HTTP — ${kind.name}`, () => {
    let opened: OpenedStore;
    let h: CoHosted;
    let listener: ServerType;
    let base: string;

    before(async () => {
      opened = await kind.open();
      h = coHostedServer(opened.store);
      ({ listener, base } = await listen(h));
    });
    after(async () => {
      await new Promise<void>((resolve) => listener.close(() => resolve()));
      await opened.close();
    });

    const refresh = async (client: TestClient, token: string): Promise<Answer> => {
      const response = await fetch(`${base}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token, client_id: client.client_id }),
      });
      return { status: response.status, body: (await response.json()) as Answer['body'] };
    };

    /** How many live refresh tokens the store holds, after checking that `token` is one. */
    const liveTokensWith = async (token: string): Promise<number> => {
      assert.ok(await opened.store.getRefreshToken(hashSecret(token)), 'the token is live');
      return (await opened.counts()).refresh_tokens;
    };

    /** Whether a tools/call at the co-hosted /mcp is served with this access token. */
    const served = async (accessToken: string): Promise<boolean> => {
      const response = await fetch(`${base}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${accessToken}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      await response.body?.cancel();
      return response.status === 200;
    };

    for (const [first, second] of [
      [0, 1],
      [1, 0],
    ] as const) {
      it(`both are answered with the same token, then session ${first + 1} refreshes before session ${second + 1}: both answered, ${ROUNDS} times`, async () => {
        for (let round = 0; round < ROUNDS; round++) {
          const { client, tokens } = await obtainTokens(h, REVISIONS[1]);
          const before = await liveTokensWith(String(tokens.refresh_token));
          const sessions = await Promise.all([refresh(client, String(tokens.refresh_token)), refresh(client, String(tokens.refresh_token))]);
          assert.deepEqual(
            sessions.map((s) => s.status),
            [200, 200],
            `round ${round}: ${JSON.stringify(sessions.map((s) => s.body.error_description))}`,
          );
          const shared = sessions[0]!.body.refresh_token!;
          assert.equal(sessions[1]!.body.refresh_token, shared, `round ${round}: one token for both sessions`);
          assert.equal(await liveTokensWith(shared), before, `round ${round}: the family's one live token is the shared one`);
          for (const session of sessions) assert.ok(await served(session.body.access_token!), `round ${round}: each session's access token is served`);

          h.clock.now += 30;
          const nextFirst = await refresh(client, sessions[first]!.body.refresh_token!);
          const nextSecond = await refresh(client, sessions[second]!.body.refresh_token!);
          assert.equal(nextFirst.status, 200, `round ${round}: ${nextFirst.body.error_description}`);
          assert.equal(nextSecond.status, 200, `round ${round}: ${nextSecond.body.error_description}`);
          assert.equal(nextSecond.body.refresh_token, nextFirst.body.refresh_token, `round ${round}: the later refresh is a retry of the earlier`);
          assert.ok(await served(nextSecond.body.access_token!), `round ${round}`);
          assert.ok(!h.log.some((event) => event.event === 'refresh_token_reused'), `round ${round}: no reuse`);

          // The shared token's successor used, the shared token is a reuse: the family goes.
          const newest = await refresh(client, nextFirst.body.refresh_token!);
          assert.equal(newest.status, 200);
          const reuse = await refresh(client, shared);
          assert.equal(reuse.status, 400);
          assert.match(reuse.body.error_description ?? '', /already used; the grant is revoked/);
          assert.equal(await served(newest.body.access_token!), false, `round ${round}: the family's newest access token goes with it`);
          h.log.length = 0;
        }
      });
    }
  });
}

function listen(h: CoHosted): Promise<{ listener: ServerType; base: string }> {
  return new Promise((resolve) => {
    const listener = serve({ fetch: h.app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) =>
      resolve({ listener, base: `http://127.0.0.1:${info.port}` }),
    );
  });
}
