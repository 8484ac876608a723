/**
 * The device authorization grant (RFC 8628) in ContextClient, against a small authorization server
 * on 127.0.0.1 whose token endpoint answers from a script, with a fake clock: what is registered
 * and requested, when each poll is sent (the interval, slow_down's 5 more seconds for good, none
 * after the code's expiry), each error answer, and stopping the wait.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { DEVICE_CODE_GRANT, realSleep, type DeviceCodeInfo } from '../../src/client/device.js';
import { ClientError, type ClientErrorCode } from '../../src/client/errors.js';
import { obtainClient } from '../../src/client/registration.js';
import { ContextClient, type ContextClientOptions } from '../../src/client/session.js';
import { MemoryTokenStore } from '../../src/client/token-store.js';
import { DpopProofVerifier, jwkThumbprint } from '../../src/core/dpop.js';
import { serveHandler, type ServedApp } from './setup.js';

const START = 1_700_000_000;

/** What the token endpoint answers to a device_code request: tokens, or an OAuth error. */
type Answer = 'tokens' | 'authorization_pending' | 'slow_down' | 'access_denied' | 'expired_token' | 'invalid_grant' | 'use_dpop_nonce';

interface Peer {
  origin: string;
  serverUrl: string;
  /** The device authorization answer's interval and expires_in (absent: not sent). */
  interval?: number;
  expiresIn: number;
  /** Without it, the metadata names no device_authorization_endpoint. */
  device: boolean;
  /** Without it, the metadata names no authorization_endpoint (no browser flow). */
  browser: boolean;
  /** Revision A: no protected resource metadata. */
  revisionA: boolean;
  /** Answers to the device_code polls, in order; the last repeats. */
  script: Answer[];
  registrations: Record<string, unknown>[];
  deviceRequests: URLSearchParams[];
  /** Each device_code poll, with the fake clock's time when it arrived and its DPoP proof. */
  polls: { at: number; form: URLSearchParams; dpop: string | null }[];
  refreshes: URLSearchParams[];
  /** Called as each poll arrives (before it is answered). */
  onPoll: () => void;
  close(): Promise<void>;
}

let clock = START;

async function startPeer(): Promise<Peer> {
  const peer = {
    interval: undefined as number | undefined,
    expiresIn: 600,
    device: true,
    browser: true,
    revisionA: false,
    script: ['tokens'] as Answer[],
    registrations: [] as Record<string, unknown>[],
    deviceRequests: [] as URLSearchParams[],
    polls: [] as { at: number; form: URLSearchParams; dpop: string | null }[],
    refreshes: [] as URLSearchParams[],
    onPoll: () => {},
  };
  let issued = 0;
  const served: ServedApp = await serveHandler(async (request) => {
    const origin = served.origin;
    const url = new URL(request.url);
    if (url.pathname === '/.well-known/oauth-protected-resource/mcp') {
      if (peer.revisionA) return new Response(null, { status: 404 });
      return Response.json({ resource: `${origin}/mcp`, authorization_servers: [origin], scopes_supported: ['mcp:tools'] });
    }
    if (url.pathname === '/.well-known/oauth-authorization-server') {
      return Response.json({
        issuer: origin,
        ...(peer.browser ? { authorization_endpoint: `${origin}/authorize` } : {}),
        token_endpoint: `${origin}/token`,
        registration_endpoint: `${origin}/register`,
        ...(peer.device ? { device_authorization_endpoint: `${origin}/device_authorization` } : {}),
        response_types_supported: ['code'],
        dpop_signing_alg_values_supported: ['ES256'],
      });
    }
    if (url.pathname === '/register') {
      const body = (await request.json()) as Record<string, unknown>;
      peer.registrations.push(body);
      return Response.json({ ...body, client_id: `client-${peer.registrations.length}` }, { status: 201 });
    }
    if (url.pathname === '/device_authorization') {
      peer.deviceRequests.push(new URLSearchParams(await request.text()));
      return Response.json({
        device_code: 'the-device-code',
        user_code: 'WDJB-MJHT',
        verification_uri: `${origin}/device`,
        verification_uri_complete: `${origin}/device?user_code=WDJB-MJHT`,
        expires_in: peer.expiresIn,
        ...(peer.interval !== undefined ? { interval: peer.interval } : {}),
      });
    }
    if (url.pathname === '/token') {
      const form = new URLSearchParams(await request.text());
      if (form.get('grant_type') === 'refresh_token') {
        peer.refreshes.push(form);
        return Response.json({ access_token: `at-${++issued}`, token_type: 'Bearer', expires_in: 3600, refresh_token: `rt-${issued}` });
      }
      if (form.get('grant_type') !== DEVICE_CODE_GRANT) return Response.json({ error: 'unsupported_grant_type' }, { status: 400 });
      peer.polls.push({ at: clock, form, dpop: request.headers.get('dpop') });
      peer.onPoll();
      const answer = peer.script[Math.min(peer.polls.length - 1, peer.script.length - 1)]!;
      if (answer === 'use_dpop_nonce') return Response.json({ error: answer }, { status: 400, headers: { 'dpop-nonce': 'nonce-from-the-server' } });
      if (answer !== 'tokens') return Response.json({ error: answer, error_description: `${answer} for the test` }, { status: 400 });
      return Response.json({
        access_token: `at-${++issued}`,
        token_type: request.headers.has('dpop') ? 'DPoP' : 'Bearer',
        expires_in: 3600,
        refresh_token: `rt-${issued}`,
        scope: 'mcp:tools',
      });
    }
    return new Response(null, { status: 401, headers: { 'www-authenticate': 'Bearer' } });
  });
  return Object.assign(peer, { origin: served.origin, serverUrl: `${served.origin}/mcp`, close: () => served.close() });
}

describe('device authorization grant (RFC 8628)', () => {
  let peer: Peer;
  let shown: DeviceCodeInfo[];
  let sleeps: number[];

  before(async () => {
    peer = await startPeer();
  });
  after(() => peer.close());

  beforeEach(() => {
    clock = START;
    shown = [];
    sleeps = [];
    Object.assign(peer, {
      interval: undefined,
      expiresIn: 600,
      device: true,
      browser: true,
      revisionA: false,
      script: ['tokens'],
      registrations: [],
      deviceRequests: [],
      polls: [],
      refreshes: [],
      onPoll: () => {},
    });
  });

  /** A device-flow client on the fake clock: each sleep moves the clock on by what it was asked. */
  function deviceClient(extra: Partial<ContextClientOptions> = {}): ContextClient {
    return new ContextClient({
      serverUrl: peer.serverUrl,
      store: new MemoryTokenStore(),
      grantType: 'device_code',
      onDeviceCode: (code) => void shown.push(code),
      now: () => clock,
      sleep: async (ms, signal) => {
        if (signal?.aborted) throw signal.reason;
        sleeps.push(ms);
        clock += ms / 1000;
      },
      ...extra,
    });
  }

  const pollTimes = (): number[] => peer.polls.map((poll) => poll.at - START);

  async function rejectsWith(promise: Promise<unknown>, code: ClientErrorCode, message: RegExp): Promise<void> {
    await assert.rejects(promise, (error: unknown) => {
      assert.ok(error instanceof ClientError, String(error));
      assert.equal(error.code, code, error.message);
      assert.match(error.message, message);
      return true;
    });
  }

  it('registers for the device grant, asks for a code with scope and resource, shows it, and polls with the device code', async () => {
    peer.script = ['authorization_pending', 'tokens'];
    const client = deviceClient();
    const grant = await client.login();

    assert.equal(peer.registrations.length, 1);
    const registration = peer.registrations[0]!;
    // The server has the browser flow too: one registration for both, so a later browser sign-in reuses it.
    assert.deepEqual(registration.grant_types, ['authorization_code', DEVICE_CODE_GRANT, 'refresh_token']);
    assert.equal((registration.redirect_uris as string[]).length, 1);
    assert.match((registration.redirect_uris as string[])[0]!, /^http:\/\/127\.0\.0\.1:\d+\/callback$/, 'a loopback redirect, for the browser flow');
    assert.deepEqual(registration.response_types, ['code']);
    assert.equal(registration.token_endpoint_auth_method, 'none');

    assert.equal(peer.deviceRequests.length, 1);
    const deviceRequest = peer.deviceRequests[0]!;
    assert.equal(deviceRequest.get('client_id'), 'client-1');
    assert.equal(deviceRequest.get('scope'), 'mcp:tools');
    assert.equal(deviceRequest.get('resource'), peer.serverUrl);

    assert.deepEqual(shown, [
      { userCode: 'WDJB-MJHT', verificationUri: `${peer.origin}/device`, verificationUriComplete: `${peer.origin}/device?user_code=WDJB-MJHT`, expiresIn: 600 },
    ]);
    assert.equal(peer.polls.length, 2);
    for (const { form } of peer.polls) {
      assert.equal(form.get('device_code'), 'the-device-code');
      assert.equal(form.get('client_id'), 'client-1');
      assert.equal(form.get('resource'), peer.serverUrl);
    }

    assert.equal(grant.accessToken, 'at-1');
    assert.equal(grant.refreshToken, 'rt-1');
    assert.equal(grant.clientId, 'client-1');
    assert.equal(grant.resource, peer.serverUrl);
    assert.deepEqual(await client.grant(), grant);

    const refreshed = await client.refresh({ ...grant, expiresAt: clock });
    assert.equal(peer.refreshes.length, 1);
    assert.equal(peer.refreshes[0]!.get('refresh_token'), 'rt-1');
    assert.equal(refreshed.accessToken, 'at-2');
    assert.deepEqual(await client.grant(), refreshed);
  });

  it('polls every 5 seconds when the server names no interval', async () => {
    peer.script = ['authorization_pending', 'authorization_pending', 'authorization_pending', 'tokens'];
    await deviceClient().login();
    assert.deepEqual(pollTimes(), [5, 10, 15, 20]);
    assert.deepEqual(sleeps, [5000, 5000, 5000, 5000]);
  });

  it("honours the server's interval", async () => {
    peer.interval = 3;
    peer.script = ['authorization_pending', 'authorization_pending', 'tokens'];
    await deviceClient().login();
    assert.deepEqual(pollTimes(), [3, 6, 9]);
  });

  it('adds 5 seconds to the interval at each slow_down, for every later poll', async () => {
    peer.interval = 2;
    peer.script = ['authorization_pending', 'slow_down', 'authorization_pending', 'slow_down', 'authorization_pending', 'tokens'];
    await deviceClient().login();
    // 2 s, then 7 s after the first slow_down, then 12 s after the second.
    assert.deepEqual(pollTimes(), [2, 4, 11, 18, 30, 42]);
  });

  it('sends no poll once the code has expired, and says so', async () => {
    peer.interval = 5;
    peer.expiresIn = 12;
    // The third poll would be answered with tokens: it must not be sent.
    peer.script = ['authorization_pending', 'authorization_pending', 'tokens'];
    await rejectsWith(deviceClient().login(), 'authorization_timeout', /the code expired before the sign-in was finished/);
    assert.deepEqual(pollTimes(), [5, 10], 'no poll at 15 s, past the 12 s the code lives');
  });

  it('sends no poll after slow_down pushes the next one past the expiry', async () => {
    peer.interval = 5;
    peer.expiresIn = 14;
    peer.script = ['slow_down', 'tokens'];
    await rejectsWith(deviceClient().login(), 'authorization_timeout', /expired/);
    assert.deepEqual(pollTimes(), [5]);
  });

  it('waits no longer than the code lives when the interval is longer', async () => {
    peer.interval = 900;
    peer.expiresIn = 600;
    await rejectsWith(deviceClient().login(), 'authorization_timeout', /expired/);
    assert.deepEqual(sleeps, [600_000]);
    assert.equal(peer.polls.length, 0);
  });

  it('reports access_denied as the refusal it is, and stores nothing', async () => {
    peer.script = ['authorization_pending', 'access_denied'];
    const client = deviceClient();
    await rejectsWith(client.login(), 'authorization_failed', /^the sign-in was refused \(access_denied \(access_denied for the test\)\)$/);
    assert.equal(peer.polls.length, 2, 'no poll after the refusal');
    assert.equal(await client.grant(), undefined);
  });

  it('reports expired_token as an expired code', async () => {
    peer.script = ['expired_token'];
    await rejectsWith(deviceClient().login(), 'authorization_timeout', /the code expired before the sign-in was finished/);
    assert.equal(peer.polls.length, 1);
  });

  it('reports any other error answer as it is, without polling again', async () => {
    peer.script = ['invalid_grant', 'tokens'];
    await rejectsWith(deviceClient().login(), 'token_request_failed', /the device code grant failed: invalid_grant \(invalid_grant for the test\)/);
    assert.equal(peer.polls.length, 1);
  });

  it('stops when the signal aborts, sending no further poll', async () => {
    peer.script = ['authorization_pending'];
    const controller = new AbortController();
    peer.onPoll = () => {
      if (peer.polls.length === 2) controller.abort();
    };
    await rejectsWith(deviceClient().login({ signal: controller.signal }), 'authorization_aborted', /the sign-in was stopped/);
    assert.equal(peer.polls.length, 2);
    assert.equal(sleeps.length, 2, 'no wait after the abort');
  });

  it('stops a real wait between polls at once when the signal aborts', async () => {
    const controller = new AbortController();
    const started = Date.now();
    const client = deviceClient({
      // The abort comes once the real wait has begun, whenever that is.
      sleep: (ms, signal) => {
        const waiting = realSleep(ms, signal);
        setImmediate(() => controller.abort());
        return waiting;
      },
      now: () => Math.floor(Date.now() / 1000),
    });
    await rejectsWith(client.login({ signal: controller.signal }), 'authorization_aborted', /stopped/);
    assert.ok(Date.now() - started < 4000, 'well before the 5 s poll');
    assert.equal(peer.polls.length, 0);
  });

  it('with DPoP, proves the key at every poll and answers use_dpop_nonce once, at once, with the nonce', async () => {
    peer.script = ['use_dpop_nonce', 'authorization_pending', 'tokens'];
    const grant = await deviceClient({ dpop: true }).login();
    assert.deepEqual(pollTimes(), [5, 5, 10], 'the nonce retry is part of the first poll, not a poll of its own');
    const proofs = peer.polls.map((poll) => poll.dpop);
    assert.ok(
      proofs.every((proof) => proof !== null),
      'every poll carries a proof',
    );
    const jkt = jwkThumbprint(grant.dpopKey!.publicJwk as Record<string, unknown>);
    const verifier = new DpopProofVerifier();
    for (const [index, proof] of proofs.entries()) {
      const checked = verifier.check({
        proof: proof!,
        method: 'POST',
        url: `${peer.origin}/token`,
        now: START + 5,
        nonce: (nonce) => nonce === (index === 0 ? undefined : 'nonce-from-the-server'),
      });
      assert.ok(checked.ok, `proof ${index}: ${checked.ok ? '' : checked.description}`);
      assert.equal(checked.proof.jkt, jkt, 'the grant key');
    }
    assert.equal(grant.tokenType, 'DPoP');
  });

  it('refuses, before registering, an authorization server with no device_authorization_endpoint', async () => {
    peer.device = false;
    await rejectsWith(deviceClient().login(), 'discovery_failed', /offers no device sign-in \(its metadata has no device_authorization_endpoint\)/);
    assert.equal(peer.registrations.length, 0);
    assert.equal(peer.deviceRequests.length, 0);
  });

  it('works with Revision A discovery (no protected resource metadata), sending no resource', async () => {
    peer.revisionA = true;
    const grant = await deviceClient().login();
    assert.equal(grant.revision, 'A');
    assert.equal(peer.deviceRequests[0]!.get('resource'), null);
    assert.equal(peer.polls[0]!.form.get('resource'), null);
  });

  it('uses a client id given in options without registering', async () => {
    const grant = await deviceClient({ clientId: 'pre-registered' }).login();
    assert.equal(peer.registrations.length, 0);
    assert.equal(peer.deviceRequests[0]!.get('client_id'), 'pre-registered');
    assert.equal(grant.clientId, 'pre-registered');
  });

  it('asks nobody when the client may not be interactive', async () => {
    await rejectsWith(deviceClient({ interactive: false }).login(), 'login_required', /log in first/);
    assert.equal(peer.deviceRequests.length, 0);
  });

  it('shows the code through onProgress when no onDeviceCode is given, the URLs on lines of their own', async () => {
    const lines: string[] = [];
    await deviceClient({ onDeviceCode: undefined, onProgress: (message) => lines.push(message) }).login();
    const text = lines.join('\n');
    assert.ok(text.includes(`\n${peer.origin}/device\n`), text);
    assert.ok(text.includes('WDJB-MJHT'), text);
    assert.ok(text.includes(`\n${peer.origin}/device?user_code=WDJB-MJHT`), text);
  });

  it('registers once for both flows: a device sign-in then a browser one, or a browser one then a device one, use one client', async () => {
    const afterDevice = new MemoryTokenStore();
    const grant = await deviceClient({ store: afterDevice }).login();
    assert.equal(grant.clientId, 'client-1');
    const discovery = await deviceClient({ store: afterDevice }).discover();
    const browser = await obtainClient(discovery, 'http://127.0.0.1:5555/callback', afterDevice, { fetch, now: () => clock });
    assert.equal(browser.clientId, 'client-1', "the browser flow reuses the device sign-in's registration");

    const afterBrowser = new MemoryTokenStore();
    const first = await obtainClient(discovery, 'http://127.0.0.1:5555/callback', afterBrowser, { fetch, now: () => clock });
    assert.equal(first.clientId, 'client-2');
    assert.deepEqual(
      peer.registrations[1]!.grant_types,
      ['authorization_code', DEVICE_CODE_GRANT, 'refresh_token'],
      'the server offers the device flow: registered for it too',
    );
    assert.deepEqual(peer.registrations[1]!.redirect_uris, ['http://127.0.0.1:5555/callback']);
    assert.equal((await deviceClient({ store: afterBrowser }).login()).clientId, 'client-2', "the device flow reuses the browser sign-in's registration");
    assert.equal(peer.registrations.length, 2);
  });

  it('registers again where the stored registration (from before one served both) lacks the flow asked for', async () => {
    const store = new MemoryTokenStore();
    await store.saveClient({
      application: 'context-auth',
      issuer: peer.origin,
      clientId: 'browser-client',
      tokenEndpointAuthMethod: 'none',
      redirectUris: ['http://127.0.0.1:5555/callback'],
      source: 'dynamic',
      createdAt: START,
    });
    const grant = await deviceClient({ store }).login();
    assert.equal(grant.clientId, 'client-1', 'a new registration, for the device grant');
    assert.equal((await store.getClient('context-auth', peer.origin))?.clientId, 'client-1');
  });

  it('registers for the device grant alone at a server without the browser flow: no redirect URI', async () => {
    peer.browser = false;
    await deviceClient().login();
    assert.deepEqual(peer.registrations[0]!.grant_types, [DEVICE_CODE_GRANT, 'refresh_token']);
    assert.equal(peer.registrations[0]!.redirect_uris, undefined, 'no redirect URI: nothing comes back to this machine');
    assert.deepEqual(peer.registrations[0]!.response_types, []);
  });
});
