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
    [...row[1]!.matchAll(/<td>([\s\S]*?)<\/td>/g)]
      .map((cell) =>
        plainTokens(cell[1]!.replace(/<form[\s\S]*?<\/form>/g, ''))
          .replace(/<[^>]+>/g, ' ')
          .replace(/\s+/g, ' ')
          .trim(),
      )
      .join(' | '),
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
    assert.equal(
      row,
      `Asks for more unverified | ${client_id} | dynamic | authorization_code refresh_token | http://localhost:8787/callback | 2027-01-15 08:00 UTC | never | 2027-02-14 08:00 UTC`,
    );
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

    // First the console asks: what the removal does, and a second form that makes it; nothing is removed yet.
    const asked = await consoleAction(admin, 'remove-client', { client_id: client.client_id, return: 'clients' });
    assert.equal(asked.status, 200);
    const question = await asked.text();
    assert.ok(question.includes(`<h2 id="confirm-heading">Remove the client Test Client (${client.client_id})?</h2>`), question);
    assert.match(question, /name="confirmed" value="yes"/);
    assert.match(question, /<a class="button" href="\/admin\/clients">Cancel<\/a>/);
    assert.ok(await h.store.getClient(client.client_id), 'nothing removed before it is confirmed');
    assert.equal(h.server.revocations.isRevoked(access), false);

    const removed = await consoleAction(admin, 'remove-client', { client_id: client.client_id, confirmed: 'yes' });
    assert.equal(removed.status, 303);
    assert.match(removed.headers.get('location')!, /^\/admin\/clients\?done=remove-client&what=Test\+Client\+%28/);
    assert.equal(await h.store.getClient(client.client_id), undefined);
    assert.equal(h.server.revocations.isRevoked(access), true, 'this process refuses the access token at once');
    const event = h.log.find((e) => e.event === 'admin_action');
    assert.deepEqual(event && { action: event.action, target: event.target, user_id: event.user_id }, {
      action: 'remove-client',
      target: client.client_id,
      user_id: admin.user.id,
    });

    const page = await (await admin.browser.fetch(removed.headers.get('location')!)).text();
    assert.ok(page.includes(`role="status">Client removed: Test Client (${client.client_id}), with everything issued to it.`), 'the notice names the client');
    assert.ok(!(/<tbody>[\s\S]*<\/tbody>/.exec(page)?.[0] ?? '').includes(client.client_id), 'no longer listed');
  });

  it('refuses an unknown client with a page that says so, and an empty form', async () => {
    const h = createHarness();
    const admin = await signInToConsole(h);
    const unknown = await consoleAction(admin, 'remove-client', { client_id: 'no-such-client', confirmed: 'yes' });
    assert.equal(unknown.status, 404);
    assert.match(await unknown.text(), /There is no client no-such-client\./);
    const empty = await consoleAction(admin, 'remove-client', { confirmed: 'yes' });
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
    // The page names the change waiting for the password, and carries it.
    assert.match(html, /Waiting for this sign-in: <strong>Remove the client Wiki \(c-operator\)<\/strong>\. Your password makes it at once\./);
    assert.match(html, /name="then" value="remove-client"/);
    assert.match(html, /name="then\.client_id" value="c-operator"/);
    assert.ok(await h.store.getClient('c-operator'), 'nothing changed');
    assert.ok(!h.log.some((e) => e.event === 'admin_action'));

    // A wrong password: the page again, still naming and carrying the change; nothing made.
    const wrong = await consoleAction(admin, 'reauth', { password: 'wrong', return: 'clients', then: 'remove-client', 'then.client_id': 'c-operator' });
    assert.equal(wrong.status, 401);
    assert.match(await wrong.text(), /name="then\.client_id" value="c-operator"/);
    assert.ok(await h.store.getClient('c-operator'));

    // The password: the change is made at once (the page named it; no second confirmation).
    const confirmed = await confirmSignIn(admin, { return: 'clients', then: 'remove-client', 'then.client_id': 'c-operator' });
    assert.equal(confirmed.status, 303);
    assert.match(confirmed.headers.get('location')!, /^\/admin\/clients\?done=remove-client&what=Wiki\+%28c-operator%29&sig=/);
    assert.match(confirmed.headers.get('set-cookie') ?? '', /ca_session=/, 'in the session the password began');
    assert.equal(await h.store.getClient('c-operator'), undefined);
    const event = h.log.find((e) => e.event === 'admin_action');
    assert.equal(event?.target, 'c-operator');
    assert.match(
      await (await admin.browser.fetch(confirmed.headers.get('location')!)).text(),
      /role="status">Client removed: Wiki \(c-operator\), with everything/,
    );
  });

  it("a re-authentication carries only the change's own fields, and makes nothing for a wrong password or a form of another session", async () => {
    const h = createHarness();
    const admin = await signInToConsole(h);
    const other = await signInToConsole(h, { username: 'other-admin' });
    await h.store.createClient(clientRecord(h, { clientId: 'c-operator', clientName: 'Wiki' }));
    h.clock.now += 601;
    // The other administrator's form token with this session: refused before any password is read.
    const foreign = await admin.browser.submit('/admin', {
      csrf: other.csrf,
      action: 'reauth',
      password: admin.user.password,
      then: 'remove-client',
      'then.client_id': 'c-operator',
    });
    assert.equal(foreign.status, 403);
    // An unknown action named as waiting: the sign-in is renewed and nothing else happens.
    const unknown = await confirmSignIn(admin, { then: 'drop-database', 'then.client_id': 'c-operator' });
    assert.equal(unknown.status, 303);
    assert.equal(unknown.headers.get('location'), '/admin');
    assert.ok(await h.store.getClient('c-operator'));
    assert.ok(!h.log.some((e) => e.event === 'admin_action'));
    // Another administrator's name in the form: the password is checked as the session's person's, and the change made as theirs.
    h.clock.now += 601;
    const named = await confirmSignIn(admin, { username: other.user.username, then: 'remove-client', 'then.client_id': 'c-operator' });
    assert.equal(named.status, 303);
    assert.equal(h.log.find((e) => e.event === 'admin_action')?.user_id, admin.user.id);
    assert.equal(h.log.find((e) => e.event === 'login' && e.reauth === true)?.user_id, admin.user.id);
  });

  it('refuses a search too long to be one', async () => {
    const h = createHarness();
    const admin = await signInToConsole(h);
    const response = await admin.browser.fetch(`/admin/clients?q=${'x'.repeat(201)}`);
    assert.equal(response.status, 400);
    assert.match(await response.text(), /at most 200 characters/);
  });
});
