/**
 * `serve --gateway`: context servers nobody here wrote, protected without a line of their code.
 * The upstream is the official MCP SDK's server over Streamable HTTP, in this process, so the test
 * sees every request it received: never the person's Authorization header. The SDK v2 client finds
 * everything from the gateway's 401 (RFC 9728 at the path form) and gets a token for that path;
 * our own client (`context-auth call`) does the same. A long-running tool reports progress before
 * it finishes, and the test sees that progress while the call is still running: the tool waits
 * for the test, which releases it only then, so an answer buffered by the gateway never arrives.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { dyingUpstream, hangingUpstream, sdkUpstream, type DyingUpstream, type HangingUpstream, type SdkUpstream } from '../helpers/mcp-upstreams.js';
import { MCP_HEADERS, addClient, initialize, readUntil, sdkClient, textOf, tokenFor, type MachineClient } from './gateway-clients.js';
import { cli, freePort, startServe, tempDataFolder, type RunningServer } from './serve-process.js';

describe('serve --gateway in front of the MCP SDK server', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  let upstream: SdkUpstream;
  let other: SdkUpstream;
  let server: RunningServer;
  let issuer: string;
  let alice: MachineClient;
  let bob: MachineClient;

  before(async () => {
    upstream = await sdkUpstream();
    other = await sdkUpstream();
    server = await startServe([
      '--port',
      String(await freePort()),
      '--data',
      data,
      '--quiet',
      '--gateway',
      `/up=${upstream.url}`,
      '--gateway',
      `/other=${other.url}`,
    ]);
    issuer = server.issuer;
    alice = await addClient(data, 'alice robot');
    bob = await addClient(data, 'bob robot');
  });
  after(async () => {
    await server?.stop();
    await upstream?.close();
    await other?.close();
  });

  it('publishes each path as a protected resource of its own, and answers 401 with its metadata before anything goes upstream', async () => {
    const metadata = (await (await fetch(`${issuer}/.well-known/oauth-protected-resource/up`)).json()) as Record<string, unknown>;
    assert.equal(metadata.resource, `${issuer}/up`);
    assert.deepEqual(metadata.authorization_servers, [issuer]);
    const seen = upstream.received.length;
    const refused = await fetch(`${issuer}/up`, { method: 'POST', headers: MCP_HEADERS, body: '{}' });
    assert.equal(refused.status, 401);
    assert.match(refused.headers.get('www-authenticate') ?? '', new RegExp(`^Bearer resource_metadata="${issuer}/\\.well-known/oauth-protected-resource/up"`));
    assert.equal(upstream.received.length, seen, 'the upstream heard nothing of it');
  });

  it('the SDK client connects through the gateway, and a long call streams its progress as it comes', async () => {
    const { sdk } = await sdkClient(`${issuer}/up`, alice, issuer);
    try {
      assert.equal(textOf(await sdk.callTool({ name: 'echo', arguments: { text: 'through the gateway' } })), 'through the gateway');
      let finished = false;
      let sawProgress!: () => void;
      const progressed = new Promise<void>((resolve) => (sawProgress = resolve));
      const call = sdk.callTool({ name: 'wait_for_release', arguments: {} }, { onprogress: () => sawProgress() }).finally(() => (finished = true));
      await progressed;
      assert.equal(finished, false, 'the progress arrived while the tool was still running');
      upstream.release();
      assert.equal(textOf(await call), 'released');
    } finally {
      await sdk.close();
    }
    for (const request of upstream.received) {
      assert.equal(request.headers.authorization, undefined, 'the upstream never sees the Authorization header we received');
      assert.equal(request.headers.dpop, undefined);
    }
    assert.ok(
      upstream.received.some((request) => request.headers['mcp-protocol-version'] !== undefined),
      'MCP-Protocol-Version is passed on',
    );
  });

  it('our client (context-auth call) calls a tool through the gateway, with a bearer token and with a DPoP-bound one', async () => {
    const called = await cli([
      'call',
      `${issuer}/up`,
      'tools/call',
      '{"name":"echo","arguments":{"text":"from context-auth call"}}',
      '--grant-type',
      'client_credentials',
      '--client-id',
      alice.client_id,
      '--client-secret',
      alice.client_secret,
      '--credentials',
      join(data, 'call-credentials.json'),
      '--json',
    ]);
    assert.equal(called.code, 0, called.stderr);
    assert.equal(textOf(JSON.parse(called.stdout)), 'from context-auth call');

    // A DPoP-bound token: the guard checks its proof at the gateway path, and neither reaches the upstream.
    const seen = upstream.received.length;
    const bound = await cli([
      'call',
      `${issuer}/up`,
      'tools/call',
      '{"name":"echo","arguments":{"text":"bound to a key"}}',
      '--grant-type',
      'client_credentials',
      '--dpop',
      '--client-id',
      alice.client_id,
      '--client-secret',
      alice.client_secret,
      '--credentials',
      join(data, 'dpop-credentials.json'),
      '--json',
    ]);
    assert.equal(bound.code, 0, bound.stderr);
    assert.equal(textOf(JSON.parse(bound.stdout)), 'bound to a key');
    assert.match(readFileSync(join(data, 'dpop-credentials.json'), 'utf8'), /"tokenType":\s*"DPoP"/, 'the token was DPoP-bound');
    assert.ok(upstream.received.length > seen);
    for (const request of upstream.received.slice(seen)) {
      assert.equal(request.headers.authorization, undefined);
      assert.equal(request.headers.dpop, undefined);
    }
  });

  it('a token for another gateway path, or for /mcp, is refused: each path is its own audience', async () => {
    const seen = upstream.received.length;
    for (const resource of [`${issuer}/other`, `${issuer}/mcp`]) {
      const token = await tokenFor(issuer, alice, resource);
      const refused = await fetch(`${issuer}/up`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` }, body: '{}' });
      assert.equal(refused.status, 401);
      assert.deepEqual(await refused.json(), { error: 'invalid_token', error_description: 'the access token was not issued for this server' });
    }
    assert.equal(upstream.received.length, seen);
    // The same token where it belongs: accepted, and forwarded there.
    const token = await tokenFor(issuer, alice, `${issuer}/other`);
    const accepted = await fetch(`${issuer}/other`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
      body: JSON.stringify(initialize(1)),
    });
    assert.equal(accepted.status, 200);
    await accepted.body?.cancel();
    assert.equal(other.received.length, 1);
  });

  it('sessions: the GET stream, MCP-Protocol-Version, DELETE, and a session only for the client that opened it', async () => {
    const token = await tokenFor(issuer, alice, `${issuer}/up`);
    const auth = { ...MCP_HEADERS, authorization: `Bearer ${token}` };
    const opened = await fetch(`${issuer}/up`, { method: 'POST', headers: auth, body: JSON.stringify(initialize(1)) });
    assert.equal(opened.status, 200);
    const sessionId = opened.headers.get('mcp-session-id');
    assert.ok(sessionId, 'the session id comes back');
    await opened.text();
    const session = { ...auth, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' };
    const initialized = await fetch(`${issuer}/up`, {
      method: 'POST',
      headers: session,
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    assert.equal(initialized.status, 202);
    assert.equal(upstream.received.at(-1)!.headers['mcp-protocol-version'], '2025-06-18');
    assert.equal(upstream.received.at(-1)!.headers['mcp-session-id'], sessionId);

    const stream = await fetch(`${issuer}/up`, { method: 'GET', headers: { ...session, accept: 'text/event-stream' } });
    assert.equal(stream.status, 200);
    assert.equal(stream.headers.get('content-type'), 'text/event-stream');
    const reading = readUntil(stream.body!, /hello on the standalone stream/);
    await upstream.notifyAll('hello on the standalone stream');
    (await reading).reader.cancel().catch(() => {});

    // Another client with a valid token for this path, and alice's session id: as if the session did not exist.
    const bobToken = await tokenFor(issuer, bob, `${issuer}/up`);
    const seen = upstream.received.length;
    const hijack = await fetch(`${issuer}/up`, {
      method: 'POST',
      headers: { ...session, authorization: `Bearer ${bobToken}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    assert.equal(hijack.status, 404);
    assert.equal(upstream.received.length, seen, 'the request never reached the upstream');

    const ended = await fetch(`${issuer}/up`, { method: 'DELETE', headers: session });
    assert.equal(ended.status, 200);
    assert.deepEqual(upstream.closedSessions.includes(sessionId), true);
    const afterEnd = await fetch(`${issuer}/up`, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }) });
    assert.equal(afterEnd.status, 404);
  });

  it("/readyz reports each path's upstream beside its own checks", async () => {
    const answer = await fetch(`${issuer}/readyz`);
    assert.equal(answer.status, 200);
    assert.deepEqual(await answer.json(), { status: 'ready', checks: { store: 'ok', signing_key: 'ok' }, upstreams: { '/up': 'ok', '/other': 'ok' } });
  });

  it('a body past the cap is refused with 413 and never forwarded', async () => {
    const token = await tokenFor(issuer, alice, `${issuer}/up`);
    const seen = upstream.received.length;
    const tooLarge = await fetch(`${issuer}/up`, {
      method: 'POST',
      headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
      body: 'x'.repeat(1024 * 1024 + 1),
    });
    assert.equal(tooLarge.status, 413);
    assert.equal(upstream.received.length, seen);
  });
});

describe('serve --gateway-token signed, and upstreams that fail', { timeout: 300_000 }, () => {
  const data = tempDataFolder();
  let issuer: string;
  let verified: SdkUpstream;
  let refusing: SdkUpstream;
  let hanging: HangingUpstream;
  let dying: DyingUpstream;
  let server: RunningServer;
  let robot: MachineClient;
  let admin: MachineClient;
  const claimsSeen: JWTPayload[] = [];

  before(async () => {
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    const jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`));
    // What an upstream in any language does with a JWT library: the JWKS, the issuer, its own audience.
    verified = await sdkUpstream(async (authorization) => {
      if (!authorization?.startsWith('Bearer ')) return 'no token';
      try {
        const { payload } = await jwtVerify(authorization.slice(7), jwks, { issuer, audience: verified.url });
        claimsSeen.push(payload);
        return undefined;
      } catch (error) {
        return (error as Error).message;
      }
    });
    refusing = await sdkUpstream(async () => 'this upstream trusts nobody');
    hanging = await hangingUpstream();
    dying = await dyingUpstream();
    const unreachable = `http://127.0.0.1:${await freePort()}/mcp`;
    // The same upstream at a second path, where echo needs mcp:admin and tools/list shows only what the token may call.
    const policy = join(data, 'gateway-policy.json');
    writeFileSync(policy, JSON.stringify({ '/policed': { tools: { echo: ['mcp:admin'] }, filterToolList: true } }));
    server = await startServe([
      '--port',
      String(port),
      '--data',
      data,
      '--quiet',
      '--gateway-token',
      'signed',
      '--gateway-timeout',
      '1',
      '--gateway',
      `/verified=${verified.url}`,
      '--gateway',
      `/refusing=${refusing.url}`,
      '--gateway',
      `/hanging=${hanging.url}`,
      '--gateway',
      `/dying=${dying.url}`,
      '--gateway',
      `/unreachable=${unreachable}`,
      '--gateway',
      `/policed=${verified.url}`,
      '--gateway-policy',
      policy,
    ]);
    robot = await addClient(data, 'robot');
    admin = await addClient(data, 'admin robot', ['--scope', 'mcp:tools mcp:admin']);
  });
  after(async () => {
    await server?.stop();
    for (const upstream of [verified, refusing, hanging, dying]) await upstream?.close();
  });

  async function post(path: string, body: unknown): Promise<Response> {
    const token = await tokenFor(issuer, robot, `${issuer}${path}`);
    return fetch(`${issuer}${path}`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
  }

  it('the upstream gets a short-lived delegated token of ours for its own audience, which it verifies with our JWKS', async () => {
    const { sdk } = await sdkClient(`${issuer}/verified`, robot, issuer);
    try {
      assert.equal(textOf(await sdk.callTool({ name: 'echo', arguments: { text: 'signed' } })), 'signed');
    } finally {
      await sdk.close();
    }
    assert.ok(claimsSeen.length > 0);
    const personal = await tokenFor(issuer, robot, `${issuer}/verified`);
    const personalClaims = JSON.parse(Buffer.from(personal.split('.')[1]!, 'base64url').toString()) as JWTPayload & Record<string, unknown>;
    for (const claims of claimsSeen) {
      assert.equal(claims.iss, issuer);
      assert.equal(claims.aud, verified.url);
      assert.equal(claims.sub, personalClaims.sub);
      assert.equal(claims.client_id, robot.client_id);
      assert.equal(claims.scope, personalClaims.scope);
      // A delegated token of the person's grant (token exchange), the gateway acting.
      assert.deepEqual(claims.act, { sub: `${issuer}/verified` });
      assert.equal(typeof claims.grant_id, 'string');
      assert.equal(claims.cnf, undefined);
      assert.ok(claims.exp! - claims.iat! <= 300, "minutes of life, not the person token's");
    }
    for (const request of verified.received) assert.notEqual(request.headers.authorization, undefined);
  });

  it("per-tool scopes: a call for a tool the token's scopes do not cover is 403 with the scopes to step up to; tools/list shows what the token may call", async () => {
    const seen = verified.received.length;
    const refused = await post('/policed', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } });
    assert.equal(refused.status, 403);
    const challenge = refused.headers.get('www-authenticate') ?? '';
    assert.match(challenge, /^Bearer /);
    assert.match(challenge, /error="insufficient_scope"/);
    assert.match(challenge, /scope="mcp:admin mcp:tools"/);
    assert.match(challenge, new RegExp(`resource_metadata="${issuer}/\\.well-known/oauth-protected-resource/policed"`));
    assert.equal(verified.received.length, seen, 'the call never reached the upstream');

    const { sdk } = await sdkClient(`${issuer}/policed`, robot, issuer);
    try {
      const names = (await sdk.listTools()).tools.map((tool) => tool.name).sort();
      assert.deepEqual(names, ['wait_for_release'], 'echo, which needs mcp:admin, is not listed');
    } finally {
      await sdk.close();
    }
  });

  it('per-tool scopes: the SDK client steps up from the 403 and calls the tool', async () => {
    const { sdk } = await sdkClient(`${issuer}/policed`, admin, issuer);
    try {
      assert.deepEqual((await sdk.listTools()).tools.map((tool) => tool.name).sort(), ['wait_for_release'], "the first token has the challenge's scope alone");
      assert.equal(textOf(await sdk.callTool({ name: 'echo', arguments: { text: 'stepped up' } })), 'stepped up');
      assert.deepEqual((await sdk.listTools()).tools.map((tool) => tool.name).sort(), ['echo', 'wait_for_release']);
    } finally {
      await sdk.close();
    }
    assert.deepEqual(String(claimsSeen.at(-1)!.scope).split(' ').sort(), ['mcp:admin', 'mcp:tools'], "the upstream saw the wider token's scopes");
  });

  it('an upstream that refuses our token is a 502, not a 401 that would send the client to sign in again', async () => {
    const answer = await post('/refusing', initialize(1));
    assert.equal(answer.status, 502);
    assert.equal(answer.headers.get('www-authenticate'), null);
    assert.deepEqual(await answer.json(), { error: 'bad_gateway', error_description: 'the upstream context server refused the gateway' });
  });

  it('an upstream that does not answer in time is a 504; one that cannot be reached a 502', async () => {
    const timedOut = await post('/hanging', initialize(1));
    await hanging.arrived;
    assert.equal(timedOut.status, 504);
    assert.deepEqual(await timedOut.json(), { error: 'gateway_timeout', error_description: 'the upstream context server did not answer in time' });
    const unreachable = await post('/unreachable', initialize(1));
    assert.equal(unreachable.status, 502);
    assert.deepEqual(await unreachable.json(), { error: 'bad_gateway', error_description: 'the upstream context server could not be reached' });
  });

  it("an upstream that dies in the middle of a stream breaks the client's stream too, rather than ending it as if complete", async () => {
    const answer = await post('/dying', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'long' } });
    assert.equal(answer.status, 200);
    const { reader } = await readUntil(answer.body!, /notifications\/progress/);
    dying.die();
    await assert.rejects(async () => {
      for (;;) if ((await reader.read()).done) return;
    });
    // The gateway itself carries on.
    const again = await post('/verified', initialize(2));
    assert.equal(again.status, 200);
    await again.body?.cancel();
  });
});
