/**
 * Rate limits per client address at the endpoints (47,000 registrations a minute were once
 * accepted): /register, /token (and /userinfo, from its budget) and the sign-in form answer 429 with Retry-After once an
 * address's budget is spent (JSON for the API, a page for the person), other addresses go on,
 * the budget refills, and a limit can be changed or turned off. The peer address stands in for
 * the socket's (serve's e2e test uses real sockets): the test names it in a header only the
 * test's `clientAddress` reads.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  Browser,
  addUser,
  authorizeUrl,
  createHarness,
  expectOAuthError,
  parseForm,
  pkcePair,
  registerClient,
  REDIRECT_URI,
  type Harness,
  type HarnessOptions,
} from '../helpers/harness.js';

const PEER = 'x-test-peer';

function limitedHarness(overrides: HarnessOptions = {}): Harness {
  return createHarness({ clientAddress: (request) => request.headers.get(PEER) ?? undefined, ...overrides });
}

function register(h: Harness, peer: string | undefined, headers: Record<string, string> = {}): Promise<Response> {
  return h.request('/register', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(peer ? { [PEER]: peer } : {}), ...headers },
    body: JSON.stringify({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' }),
  });
}

function tokenRequest(h: Harness, peer: string): Promise<Response> {
  return h.request('/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', [PEER]: peer },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'not-a-token', client_id: 'nobody' }),
  });
}

async function expect429(response: Response): Promise<number> {
  const body = await expectOAuthError(response, 429, 'temporarily_unavailable');
  assert.match(body.error_description ?? '', /too many requests/);
  const retryAfter = response.headers.get('retry-after') ?? '';
  assert.match(retryAfter, /^[1-9]\d*$/, 'Retry-After: whole seconds');
  assert.equal(response.headers.get('cache-control'), 'no-store');
  return Number(retryAfter);
}

describe('rate limits per client address', () => {
  it('/register: the burst, then 429 with Retry-After until the bucket refills; another address is not affected', async () => {
    const h = limitedHarness({ rateLimits: { register: { burst: 2, perMinute: 1 } } });
    assert.equal((await register(h, '203.0.113.5')).status, 201);
    assert.equal((await register(h, '203.0.113.5')).status, 201);
    const refused = await register(h, '203.0.113.5');
    assert.equal(await expect429(refused), 60);
    assert.equal(refused.headers.get('access-control-allow-origin'), '*', 'a browser client can read the 429');
    assert.equal((await register(h, '198.51.100.7')).status, 201);
    assert.equal((await h.store.listClients()).length, 3, 'nothing registered for the refused request');
    h.clock.now += 60;
    assert.equal((await register(h, '203.0.113.5')).status, 201);
    assert.ok(h.log.some((event) => event.event === 'rate_limited' && event.limit === 'register'));
  });

  it('logs a refusal with its address bucket, at most once a minute per limit and address', async () => {
    const h = limitedHarness({ rateLimits: { register: { burst: 1, perMinute: 1 } } });
    const refusals = () => h.log.filter((event) => event.event === 'rate_limited').map(({ address, refused }) => ({ address, refused }));
    for (const peer of ['2001:db8:1:2::5', '2001:db8:1:2::6', '2001:db8:1:2::7', '203.0.113.5', '203.0.113.5']) await register(h, peer);
    // The IPv6 addresses share their /64: one bucket, refused twice, logged once; never the whole address.
    assert.deepEqual(refusals(), [
      { address: '2001:db8:1:2::/64', refused: 1 },
      { address: '203.0.113.5', refused: 1 },
    ]);
    h.clock.now += 30;
    await register(h, '2001:db8:1:2::8');
    h.clock.now += 31;
    assert.equal((await register(h, '2001:db8:1:2::9')).status, 201, 'refilled');
    await register(h, '2001:db8:1:2::9');
    assert.deepEqual(refusals().at(-1), { address: '2001:db8:1:2::/64', refused: 3 }, 'the refusals since its last line');
  });

  it('/register by default: 30 at once from one address, then 429', async () => {
    const h = limitedHarness();
    for (let i = 0; i < 30; i++) assert.equal((await register(h, '203.0.113.5')).status, 201);
    await expect429(await register(h, '203.0.113.5'));
  });

  it('/token: every request counts, refused before any work (even a bad client gets 429, not 401)', async () => {
    const h = limitedHarness({ rateLimits: { token: { burst: 3, perMinute: 60 } } });
    for (let i = 0; i < 3; i++) assert.equal((await tokenRequest(h, '203.0.113.5')).status, 401);
    assert.equal(await expect429(await tokenRequest(h, '203.0.113.5')), 1);
    h.clock.now += 1;
    assert.equal((await tokenRequest(h, '203.0.113.5')).status, 401);
  });

  it('/userinfo, GET and POST, spends from the token budget: refused before the token is looked at', async () => {
    const h = limitedHarness({ rateLimits: { token: { burst: 3, perMinute: 60 } } });
    const userinfo = (method: 'GET' | 'POST', peer = '203.0.113.9') =>
      h.request('/userinfo', { method, headers: { authorization: 'Bearer not-a-token', [PEER]: peer } });
    assert.equal((await userinfo('GET')).status, 401);
    assert.equal((await userinfo('POST')).status, 401);
    assert.equal((await tokenRequest(h, '203.0.113.9')).status, 401);
    assert.equal(await expect429(await userinfo('GET')), 1);
    assert.equal(await expect429(await userinfo('POST')), 1);
    assert.equal((await userinfo('GET', '203.0.113.10')).status, 401, 'another address has its own budget');
    h.clock.now += 1;
    assert.equal((await userinfo('GET')).status, 401);
  });

  it('/token: the budget is spent before the body is read (once it is spent, not a byte of the body is asked for)', async () => {
    const h = limitedHarness({ rateLimits: { token: { burst: 1, perMinute: 1 } } });
    assert.equal((await tokenRequest(h, '203.0.113.6')).status, 401);
    // A body that never ends, pulled only when someone reads it.
    let pulled = false;
    const endless = new ReadableStream<Uint8Array>(
      {
        pull: (controller) => {
          pulled = true;
          controller.enqueue(new TextEncoder().encode('a=b&'));
        },
      },
      { highWaterMark: 0 },
    );
    const headers = { 'content-type': 'application/x-www-form-urlencoded', [PEER]: '203.0.113.6' };
    await expect429(await h.request('/token', { method: 'POST', headers, body: endless, duplex: 'half' } as RequestInit));
    assert.equal(pulled, false);
  });

  it('IPv6 addresses of one /64 share a budget; another /64 has its own', async () => {
    const h = limitedHarness({ rateLimits: { register: { burst: 1, perMinute: 1 } } });
    assert.equal((await register(h, '2001:db8:1:2::1')).status, 201);
    await expect429(await register(h, '2001:db8:1:2::abcd'));
    assert.equal((await register(h, '2001:db8:1:3::1')).status, 201);
  });

  it('the sign-in form: a page saying how long to wait, 429 with Retry-After', async () => {
    const h = limitedHarness({ rateLimits: { signIn: { burst: 2, perMinute: 2 } } });
    const user = await addUser(h);
    const client = await registerClient(h);
    const browser = new Browser((path, init) => {
      const headers = new Headers(init.headers);
      headers.set(PEER, '203.0.113.5');
      return h.request(path, { ...init, headers });
    });
    const start = await browser.fetch(
      authorizeUrl({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT_URI,
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
      }),
    );
    const { action, csrf } = parseForm(await (await browser.fetch(start.headers.get('location')!)).text());
    assert.equal((await browser.submit(action, { csrf, step: 'login', username: user.username, password: 'wrong' })).status, 401);
    assert.equal((await browser.submit(action, { csrf, step: 'login', username: user.username, password: 'wrong' })).status, 401);
    const refused = await browser.submit(action, { csrf, step: 'login', username: user.username, password: user.password });
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '30');
    assert.match(refused.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(await refused.text(), /Too many attempts from your network\. Wait 30 seconds/);
    h.clock.now += 30;
    assert.equal((await browser.submit(action, { csrf, step: 'login', username: user.username, password: user.password })).status, 303);
  });

  it('a limit turned off is off; the others stay on', async () => {
    const h = limitedHarness({ rateLimits: { register: false, token: { burst: 1, perMinute: 1 } } });
    for (let i = 0; i < 40; i++) assert.equal((await register(h, '203.0.113.5')).status, 201);
    await tokenRequest(h, '203.0.113.5');
    await expect429(await tokenRequest(h, '203.0.113.5'));
  });

  it('an unknown address (no clientAddress given) is not limited', async () => {
    const h = createHarness({ rateLimits: { register: { burst: 1, perMinute: 1 } } });
    for (let i = 0; i < 5; i++) assert.equal((await register(h, undefined)).status, 201);
  });
});

describe('behind a trusted proxy', () => {
  it('X-Forwarded-For from a trusted proxy names the client: each client its own budget', async () => {
    const h = limitedHarness({ trustProxy: ['10.0.0.0/8'], rateLimits: { register: { burst: 1, perMinute: 1 } } });
    assert.equal((await register(h, '10.0.0.2', { 'x-forwarded-for': '203.0.113.5' })).status, 201);
    assert.equal((await register(h, '10.0.0.2', { 'x-forwarded-for': '198.51.100.7' })).status, 201);
    await expect429(await register(h, '10.0.0.3', { 'x-forwarded-for': '203.0.113.5' }));
    // What the client itself wrote, left of what our proxy appended, changes nothing.
    await expect429(await register(h, '10.0.0.2', { 'x-forwarded-for': '192.0.2.99, 203.0.113.5' }));
  });

  it('from any other peer the header is ignored: spoofing it does not buy a fresh budget', async () => {
    const h = limitedHarness({ trustProxy: ['10.0.0.0/8'], rateLimits: { register: { burst: 1, perMinute: 1 } } });
    assert.equal((await register(h, '203.0.113.5', { 'x-forwarded-for': '192.0.2.1' })).status, 201);
    await expect429(await register(h, '203.0.113.5', { 'x-forwarded-for': '192.0.2.2' }));
  });

  it('without trustProxy (the default) the header is never read, even from a private address', async () => {
    const h = limitedHarness({ rateLimits: { register: { burst: 1, perMinute: 1 } } });
    assert.equal((await register(h, '10.0.0.2', { 'x-forwarded-for': '192.0.2.1' })).status, 201);
    await expect429(await register(h, '10.0.0.2', { 'x-forwarded-for': '192.0.2.2' }));
  });

  it('a trustProxy entry that is not an address or range stops the server being created', () => {
    assert.throws(() => limitedHarness({ trustProxy: ['proxy.internal'] }), /not an IP address or CIDR range/);
  });
});
