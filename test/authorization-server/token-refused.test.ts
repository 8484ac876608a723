/**
 * Refused token requests are audit events: one `token_refused` per refused request, naming the
 * grant type, the OAuth error, its description and the client the request named, never a secret
 * or an assertion; answers that ask the client to wait or repeat (authorization_pending,
 * use_dpop_nonce) are not refusals; requests past the token rate limit never reach the endpoint.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { JWT_BEARER_GRANT_TYPE } from '../../src/core/protocol.js';
import { startTestIssuer, type TestIssuer } from '../helpers/enterprise-idp.js';
import { basic, createHarness, expectOAuthError, ISSUER, postAs, postForm, registerClient, registerServiceClient, type Harness } from '../helpers/harness.js';

/** The token_refused events, without the time and outcome every record has. */
const refusals = (h: Harness) => h.log.filter((event) => event.event === 'token_refused').map(({ time: _time, outcome: _outcome, ...event }) => event);

/** Whether any logged event holds `text` in any field. */
const logged = (h: Harness, text: string) => h.log.some((event) => Object.values(event).some((value) => String(value).includes(text)));

let trusted: TestIssuer;
let stranger: TestIssuer;
before(async () => {
  [trusted, stranger] = await Promise.all([startTestIssuer(), startTestIssuer()]);
});
after(async () => {
  await Promise.all([trusted.close(), stranger.close()]);
});

describe('token_refused', () => {
  it('a wrong client secret: invalid_client, with the client it named and the grant type, never the secret', async () => {
    const h = createHarness();
    const robot = await registerServiceClient(h);
    const wrong = 'not-the-secret-0123456789';
    const response = await postForm(h, '/token', { grant_type: 'client_credentials' }, { authorization: basic(robot.client_id, wrong) });
    await expectOAuthError(response, 401, 'invalid_client');
    assert.deepEqual(refusals(h), [
      { event: 'token_refused', grant_type: 'client_credentials', error: 'invalid_client', reason: 'client authentication failed', client_id: robot.client_id },
    ]);
    assert.equal(logged(h, wrong), false, 'the secret is in no event');
  });

  it('a refused jwt-bearer assertion: invalid_grant with its reason, never the assertion', async () => {
    const h = createHarness({ trustedIdps: [trusted.issuer], allowInsecureIssuers: true });
    const assertion = await stranger.sign({ iss: stranger.issuer, sub: 'someone', aud: ISSUER, iat: h.clock.now, exp: h.clock.now + 300 });
    await expectOAuthError(await postForm(h, '/token', { grant_type: JWT_BEARER_GRANT_TYPE, assertion }), 400, 'invalid_grant');
    assert.deepEqual(refusals(h), [
      { event: 'token_refused', grant_type: JWT_BEARER_GRANT_TYPE, error: 'invalid_grant', reason: "the assertion's issuer is not trusted" },
    ]);
    assert.equal(logged(h, assertion), false, 'the assertion is in no event');
  });

  it('unauthorized_client, a dead refresh token, an unknown grant type: one event each, by grant type', async () => {
    const h = createHarness();
    const app = await registerClient(h);
    await expectOAuthError(await postAs(h, '/token', app, { grant_type: 'client_credentials' }), 400, 'unauthorized_client');
    await expectOAuthError(await postAs(h, '/token', app, { grant_type: 'refresh_token', refresh_token: 'no-such-token' }), 400, 'invalid_grant');
    await expectOAuthError(await postAs(h, '/token', app, { grant_type: 'password', username: 'a', password: 'b' }), 400, 'unsupported_grant_type');
    await expectOAuthError(await postAs(h, '/token', app, {}), 400, 'invalid_request');
    assert.deepEqual(
      refusals(h).map((event) => [event.grant_type, event.error, event.client_id]),
      [
        ['client_credentials', 'unauthorized_client', app.client_id],
        ['refresh_token', 'invalid_grant', app.client_id],
        ['other', 'unsupported_grant_type', app.client_id],
        [undefined, 'invalid_request', app.client_id],
      ],
    );
    assert.equal(logged(h, 'no-such-token'), false, 'the refresh token is in no event');
  });

  it('a body that is not a form: refused and logged, with no grant type or client', async () => {
    const h = createHarness();
    const response = await h.request('/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    await expectOAuthError(response, 400, 'invalid_request');
    assert.deepEqual(refusals(h), [{ event: 'token_refused', error: 'invalid_request', reason: 'request body must be application/x-www-form-urlencoded' }]);
  });

  it('a device still waiting (authorization_pending) is not a refusal', async () => {
    const h = createHarness();
    const device = await registerClient(h, { redirect_uris: [], response_types: [], grant_types: ['urn:ietf:params:oauth:grant-type:device_code'] });
    const started = await postAs(h, '/device_authorization', device, {});
    assert.equal(started.status, 200, await started.clone().text());
    const { device_code } = (await started.json()) as { device_code: string };
    const poll = await postAs(h, '/token', device, { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code });
    await expectOAuthError(poll, 400, 'authorization_pending');
    assert.deepEqual(refusals(h), []);
  });

  it('past the token rate limit, requests are refused before the endpoint: no more events than the limit lets through', async () => {
    const h = createHarness({ clientAddress: () => '203.0.113.9', rateLimits: { token: { burst: 3, perMinute: 1 } } });
    for (let i = 0; i < 10; i++) await postForm(h, '/token', { grant_type: 'refresh_token', refresh_token: 'x', client_id: 'nobody' });
    assert.equal(refusals(h).length, 3);
    assert.equal(h.log.filter((event) => event.event === 'rate_limited').length, 1);
  });
});
