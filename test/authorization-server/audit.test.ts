import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AUDIT_EVENTS, auditRecord } from '../../src/authorization-server/audit.js';
import {
  addUser,
  authorize,
  Browser,
  createHarness,
  postAs,
  postForm,
  redeemCode,
  registerClient,
  registerServiceClient,
  REVISIONS,
  signInAndConsent,
  authorizeUrl,
  REDIRECT_URI,
  pkcePair,
  ISSUER,
} from '../helpers/harness.js';

describe('audit events', () => {
  it('stamps each event with its time and the outcome its name stands for, dropping undefined fields', () => {
    const record = auditRecord({ event: 'login_failed', client_id: 'c1', reason: undefined }, Date.UTC(2026, 0, 2, 3, 4, 5));
    assert.deepEqual(record, { time: '2026-01-02T03:04:05.000Z', event: 'login_failed', outcome: 'failure', client_id: 'c1' });
    assert.equal(auditRecord({ event: 'token_issued' }, 0).outcome, 'success');
  });

  it('carries no token, code, secret or password through the main flows, and only listed events with their stable fields', async () => {
    const h = createHarness({ clientAddress: () => '2001:db8:1:2:3:4:5:6' });
    const secrets: string[] = [];
    const keep = (...values: unknown[]) => {
      for (const value of values) if (typeof value === 'string' && value.length > 0) secrets.push(value);
    };
    const user = await addUser(h);
    keep(user.password);

    // A password typed wrong, then the authorization code flow.
    const client = await registerClient(h);
    const browser = new Browser(h);
    const { verifier, challenge } = pkcePair();
    keep(verifier);
    const first = await browser.fetch(
      authorizeUrl({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT_URI,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: 's',
      }),
    );
    keep('not the password at all');
    await assert.rejects(signInAndConsent(browser, first, { username: 'alice', password: 'not the password at all' }, 'approve', ISSUER, []));
    const { location, verifier: verifier2 } = await authorize(h, { client, user, resource: REVISIONS[1].resource });
    const code = location.searchParams.get('code')!;
    keep(code, verifier2);
    const tokens = (await (await redeemCode(h, client, code, verifier2)).json()) as Record<string, string>;
    keep(tokens.access_token, tokens.refresh_token);

    // Refresh, then the old refresh token again (reuse), then a revocation.
    const refreshed = (await (
      await postForm(h, '/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id })
    ).json()) as Record<string, string>;
    keep(refreshed.access_token, refreshed.refresh_token);
    h.clock.now += 120;
    await postForm(h, '/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id });
    await postForm(h, '/revoke', { token: refreshed.refresh_token, client_id: client.client_id });
    await redeemCode(h, client, code, verifier2); // replayed

    // A confidential client: client credentials, and a wrong secret.
    const service = await registerServiceClient(h);
    keep(service.client_secret);
    const issued = (await (await postAs(h, '/token', service, { grant_type: 'client_credentials' })).json()) as Record<string, string>;
    keep(issued.access_token);
    await postAs(h, '/token', { ...service, client_secret: 'wrong-secret-value' }, { grant_type: 'client_credentials' });
    keep('wrong-secret-value');

    const names = h.log.map((record) => record.event);
    for (const expected of [
      'login_failed',
      'login',
      'consent_granted',
      'code_issued',
      'token_issued',
      'code_replayed',
      'token_refreshed',
      'refresh_token_reused',
      'client_registered',
    ]) {
      assert.ok(names.includes(expected), `${expected} was logged (got ${names.join(', ')})`);
    }
    const text = JSON.stringify(h.log);
    for (const secret of secrets) assert.equal(text.includes(secret), false, `a logged event carries ${secret.slice(0, 8)}…`);
    for (const record of h.log) {
      const event = record.event as keyof typeof AUDIT_EVENTS;
      assert.ok(event in AUDIT_EVENTS, `${String(event)} is listed`);
      assert.equal(record.outcome, AUDIT_EVENTS[event].outcome);
      assert.match(String(record.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      for (const value of Object.values(record)) assert.ok(value === null || ['string', 'number', 'boolean'].includes(typeof value), 'plain values only');
    }
    // The address as the sign-in throttle counts it: an IPv6 address's /64, never the whole address.
    const failed = h.log.find((record) => record.event === 'login_failed')!;
    assert.equal(failed.address, '2001:db8:1:2::/64');
    assert.equal(text.includes('2001:db8:1:2:3:4:5:6'), false);
  });
});
