import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClientRecord } from '../../../src/store/store.js';
import { confirmSignIn, consoleAction, signInToConsole } from '../../helpers/admin-console.js';
import { createHarness, jwtClaims, obtainTokens, plainTokens, REDIRECT_URI, REVISIONS, type Harness } from '../../helpers/harness.js';

const DAY = 24 * 3600;

function clientRecord(h: Harness, overrides: Partial<ClientRecord> & Pick<ClientRecord, 'clientId'>): ClientRecord {
  return {
    clientSecretHash: null,
    tokenEndpointAuthMethod: 'none',
    redirectUris: [REDIRECT_URI],
    grantTypes: ['authorization_code', 'refresh_token'],
    responseTypes: ['code'],
    clientName: null,
    scope: null,
    metadata: {},
    canIntrospect: false,
    registeredBy: 'admin',
    createdAt: h.clock.now,
    lastUsedAt: null,
    ...overrides,
  };
}

/** The table's rows as text, one string per row, cells separated by ' | '. */
function rowsOf(html: string): string[] {
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? '';
  return [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) =>
    [...row[1]!.matchAll(/<td>([\s\S]*?)<\/td>/g)].map((cell) => plainTokens(cell[1]!.replace(/<form[\s\S]*?<\/form>/g, '')).replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim()).join(' | '),
  );
}

describe('admin console: clients', () => {
  it('shows each client with where it came from, its grant types and redirect URIs, when it was used and when an unused one is removed', async () => {
    const h = createHarness({ registrationTtl: 30 * DAY });
    const admin = await signInToConsole(h);
    const created = h.clock.now;
    await h.store.createClient(clientRecord(h, { clientId: 'a-dynamic', clientName: 'Notes <b>', registeredBy: 'dynamic', lastUsedAt: created + DAY }));
    await h.store.createClient(clientRecord(h, { clientId: 'https://app.example.com/client.json', clientName: 'Example App', registeredBy: 'dynamic' }));
    await h.store.createClient(clientRecord(h, { clientId: 'b-machine', clientName: 'Nightly job', grantTypes: ['client_credentials'], redirectUris: [] }));
    await h.store.createClient(clientRecord(h, { clientId: 'c-operator', clientName: 'Wiki' }));

    const response = await admin.browser.fetch('/admin/clients');
    assert.equal(response.status, 200);
    const html = await response.text();
    assert.match(html, /aria-current="page">Clients</);
    assert.ok(!html.includes('Notes <b>'), 'a name is escaped');
    assert.deepEqual(rowsOf(html), [
      'Notes &lt;b&gt; unverified | a-dynamic | dynamic | authorization_code refresh_token | http://127.0.0.1:33333/callback | 2027-01-15 08:00 UTC | 2027-01-16 08:00 UTC | 2027-02-15 08:00 UTC',
      'Nightly job | b-machine | machine | client_credentials | none | 2027-01-15 08:00 UTC | never | never',
      'Wiki | c-operator | pre-registered | authorization_code refresh_token | http://127.0.0.1:33333/callback | 2027-01-15 08:00 UTC | never | never',
      'Example App from app.example.com | https://app.example.com/client.json | document | authorization_code refresh_token | http://127.0.0.1:33333/callback | 2027-01-15 08:00 UTC | never | 2027-02-14 08:00 UTC',
    ]);
    assert.match(html, /<button type="submit" class="danger" aria-label="Remove client Wiki">Remove<\/button>/);
    assert.match(html, /name="action" value="remove-client">\n<input type="hidden" name="client_id" value="c-operator">/);
  });

  it('shows what the server kept of a registration, not what it asked for', async () => {
    const h = createHarness({ allowedRedirectSchemes: [] });
    const admin = await signInToConsole(h);
    const response = await h.request('/register', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Asks for more',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:jwt-bearer'],
        redirect_uris: ['cursor://anysphere.cursor-mcp/oauth/callback', 'http://localhost:8787/callback'],
      }),
    });
    const { client_id } = (await response.json()) as { client_id: string };
    const [row] = rowsOf(await (await admin.browser.fetch('/admin/clients')).text());
    assert.equal(row, `Asks for more unverified | ${client_id} | dynamic | authorization_code refresh_token | http://localhost:8787/callback | 2027-01-15 08:00 UTC | never | 2027-02-14 08:00 UTC`);
  });

  it('says an unused dynamic client is never removed when the sweep of unused clients is off', async () => {
    const h = createHarness({ registrationTtl: 0 });
    const admin = await signInToConsole(h);
    await h.store.createClient(clientRecord(h, { clientId: 'a-dynamic', registeredBy: 'dynamic' }));
    const [row] = rowsOf(await (await admin.browser.fetch('/admin/clients')).text());
    assert.match(row!, /^no name \| a-dynamic \| dynamic \| .* \| never \| never$/);
  });

  it('removes a client and everything issued to it: its tokens stop at once, and the action is logged', async () => {
    const h = createHarness();
    const admin = await signInToConsole(h);
    const { client, tokens } = await obtainTokens(h, REVISIONS[0]);
    const access = { claims: jwtClaims(tokens.access_token) };
    assert.equal(h.server.revocations.isRevoked(access), false);

    const removed = await consoleAction(admin, 'remove-client', { client_id: client.client_id });
    assert.equal(removed.status, 303);
    assert.equal(removed.headers.get('location'), '/admin/clients?done=remove-client');
    assert.equal(await h.store.getClient(client.client_id), undefined);
    assert.equal(h.server.revocations.isRevoked(access), true, 'this process refuses the access token at once');
    const event = h.log.find((e) => e.event === 'admin_action');
    assert.deepEqual(event && { action: event.action, target: event.target, user_id: event.user_id }, { action: 'remove-client', target: client.client_id, user_id: admin.user.id });

    const page = await (await admin.browser.fetch(removed.headers.get('location')!)).text();
    assert.match(page, /role="status">Client removed/);
    assert.ok(!page.includes(client.client_id), 'no longer listed');
  });

  it('refuses an unknown client with a page that says so, and an empty form', async () => {
    const h = createHarness();
    const admin = await signInToConsole(h);
    const unknown = await consoleAction(admin, 'remove-client', { client_id: 'no-such-client' });
    assert.equal(unknown.status, 404);
    assert.match(await unknown.text(), /There is no client no-such-client\./);
    const empty = await consoleAction(admin, 'remove-client', {});
    assert.equal(empty.status, 400);
    assert.ok(!h.log.some((e) => e.event === 'admin_action'), 'nothing done, nothing logged as done');
  });

  it('asks a stale sign-in to confirm with the password first, and changes nothing until then', async () => {
    const h = createHarness();
    const admin = await signInToConsole(h);
    await h.store.createClient(clientRecord(h, { clientId: 'c-operator', clientName: 'Wiki' }));
    h.clock.now += 601;

    const stale = await consoleAction(admin, 'remove-client', { client_id: 'c-operator', return: 'clients' });
    assert.equal(stale.status, 401);
    const html = await stale.text();
    assert.match(html, /Confirm it is you/);
    assert.match(html, /name="action" value="reauth"/);
    assert.ok(await h.store.getClient('c-operator'), 'nothing changed');
    assert.ok(!h.log.some((e) => e.event === 'admin_action'));

    const confirmed = await confirmSignIn(admin, { return: 'clients' });
    assert.equal(confirmed.status, 303);
    assert.equal(confirmed.headers.get('location'), '/admin/clients');
    const again = await consoleAction(admin, 'remove-client', { client_id: 'c-operator' });
    assert.equal(again.status, 303);
    assert.equal(await h.store.getClient('c-operator'), undefined);
  });

  it('refuses a search too long to be one', async () => {
    const h = createHarness();
    const admin = await signInToConsole(h);
    const response = await admin.browser.fetch(`/admin/clients?q=${'x'.repeat(201)}`);
    assert.equal(response.status, 400);
    assert.match(await response.text(), /at most 200 characters/);
  });
});
