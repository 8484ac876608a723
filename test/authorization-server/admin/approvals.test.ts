import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { revokeApproval } from '../../../src/authorization-server/admin/approvals-operations.js';
import { createMemoryStore } from '../../../src/store/memory.js';
import { expectRefused, expectServed, onEveryStore, USER, whoami } from '../../attack/setup.js';
import { consoleAction, signInToConsole } from '../../helpers/admin-console.js';
import { coHostedServer } from '../../helpers/co-hosted.js';
import {
  addUser,
  authorize,
  expectOAuthError,
  plainTokens,
  postForm,
  redeemCode,
  registerClient,
  RESOURCE,
  type Harness,
  type TestClient,
} from '../../helpers/harness.js';

/** A person approves `client` for the co-hosted server (signing in on the way) and redeems the code. */
async function approve(h: Harness, client: TestClient, user: { username: string; password: string }) {
  const { location, verifier } = await authorize(h, { client, user, resource: RESOURCE, scope: 'mcp:tools' });
  const response = await redeemCode(h, client, location.searchParams.get('code')!, verifier, { resource: RESOURCE });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()) as { access_token: string; refresh_token: string };
}

function refresh(h: Harness, client: TestClient, refreshToken: string): Promise<Response> {
  return postForm(h, '/token', { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.client_id });
}

const BOB = { username: 'bob', password: 'correct horse battery' };

/** A co-hosted server on the memory store with alice and bob, both having approved one client. */
async function twoApprovals() {
  const h = coHostedServer(createMemoryStore());
  await addUser(h, USER.username, USER.password);
  await addUser(h, BOB.username, BOB.password);
  const client = await registerClient(h, { client_name: 'Notes' });
  const alices = await approve(h, client, USER);
  const bobs = await approve(h, client, BOB);
  return { h, client, alices, bobs };
}

onEveryStore('console: revoke an approval', (env) => {
  it("ends that person's grant at once (refresh token refused at /token, access token at the co-hosted guard) and leaves other people's", async () => {
    const h = await env.target();
    await addUser(h, BOB.username, BOB.password);
    const client = await registerClient(h, { client_name: 'Notes' });
    const alices = await approve(h, client, USER);
    const bobs = await approve(h, client, BOB);
    await expectServed(await whoami(h, `Bearer ${alices.access_token}`));
    const admin = await signInToConsole(h);

    const page = plainTokens(await (await admin.browser.fetch(`/admin/approvals?user=${USER.username}`)).text());
    assert.match(page, /Notes <span class="tag">unverified<\/span>/);
    assert.ok(page.includes(`<code>${RESOURCE}</code>`), 'names the server');
    assert.ok(page.includes('<code>mcp:tools</code>'), 'names the scope');
    assert.match(page, /name="action" value="revoke-approval"/);

    const revoked = await consoleAction(admin, 'revoke-approval', { user: USER.username, client_id: client.client_id });
    assert.equal(revoked.status, 303, await revoked.clone().text());
    const location = new URL(revoked.headers.get('location')!, 'http://x');
    assert.equal(location.pathname, '/admin/approvals');
    assert.equal(location.searchParams.get('user'), USER.username);
    assert.equal(location.searchParams.get('done'), 'revoke-approval');
    assert.equal(location.searchParams.get('what'), `Notes (${client.client_id}) for alice`);

    await expectRefused(await whoami(h, `Bearer ${alices.access_token}`), 401, 'invalid_token', /revoked/);
    await expectOAuthError(await refresh(h, client, alices.refresh_token), 400, 'invalid_grant');
    // Bob approved the same application: his tokens still work.
    await expectServed(await whoami(h, `Bearer ${bobs.access_token}`));
    assert.equal((await refresh(h, client, bobs.refresh_token)).status, 200);

    // The notice names what was revoked: the server vouches for the name in the URL (a MAC bound to this session).
    const after = await (await admin.browser.fetch(location.pathname + location.search)).text();
    assert.ok(
      after.includes(
        `role="status">Approval revoked: Notes (${client.client_id}) for alice. That application can no longer get tokens for this person. Access tokens it already holds are refused by servers that follow`,
      ),
      after,
    );
    // A name put in the URL by anyone else is not shown: the fixed sentence is.
    location.searchParams.set('what', 'Mallory (evil) for everyone');
    const forged = await (await admin.browser.fetch(location.pathname + location.search)).text();
    assert.match(forged, /role="status">Approval revoked\. That application/);
    assert.doesNotMatch(forged, /Mallory/);
    assert.match(after, /alice has approved no application/);
    const adminId = (await h.store.getUser({ username: 'root' }))!.id;
    assert.ok(h.log.some((e) => e.event === 'admin_action' && e.action === 'revoke-approval' && e.user_id === adminId));
    assert.ok(h.log.some((e) => e.event === 'consent_revoked' && e.by === 'admin' && e.client_id === client.client_id && e.user_id === 'user-alice'));
  });
});

describe('console: the approvals page', () => {
  it('without a lookup shows labelled lookup forms and no consent at all', async () => {
    const { h, client } = await twoApprovals();
    const admin = await signInToConsole(h);
    const html = await (await admin.browser.fetch('/admin/approvals')).text();
    assert.match(html, /<label for="lookup-user">Person \(username\)<\/label>/);
    assert.match(html, /<input id="lookup-user" name="user"/);
    assert.match(html, /<label for="lookup-client">Application \(client ID\)<\/label>/);
    assert.match(html, /<input id="lookup-client" name="client"/);
    assert.ok(!html.includes(client.client_id), 'lists nothing until asked');
    assert.ok(!html.includes('revoke-approval'));
  });

  it('by application lists the people who approved it, each revocable, and a revoke there returns to it', async () => {
    const { h, client, alices, bobs } = await twoApprovals();
    const admin = await signInToConsole(h);
    const html = await (await admin.browser.fetch(`/admin/approvals?client=${encodeURIComponent(client.client_id)}`)).text();
    assert.match(html, /People who approved Notes/);
    assert.match(html, /href="\/admin\/approvals\?user=alice">alice</);
    assert.match(html, /href="\/admin\/approvals\?user=bob">bob</);
    assert.equal(html.match(/value="revoke-approval"/g)?.length, 2);
    assert.match(html, /name="from" value="client"/);

    const revoked = await consoleAction(admin, 'revoke-approval', { user: BOB.username, client_id: client.client_id, from: 'client' });
    assert.equal(revoked.status, 303);
    assert.match(revoked.headers.get('location')!, new RegExp(`^/admin/approvals\\?client=${client.client_id}&done=revoke-approval&what=`));
    await expectOAuthError(await refresh(h, client, bobs.refresh_token), 400, 'invalid_grant');
    assert.equal((await refresh(h, client, alices.refresh_token)).status, 200, 'alice keeps hers');
  });

  it('says plainly when a lookup finds no such person or application', async () => {
    const { h } = await twoApprovals();
    const admin = await signInToConsole(h);
    const person = await (await admin.browser.fetch('/admin/approvals?user=nobody')).text();
    assert.match(person, /There is no user named nobody\./);
    const app = await (await admin.browser.fetch('/admin/approvals?client=no-such-client')).text();
    assert.match(app, /There is no client no-such-client\./);
  });

  it('refuses a revoke that names no one, nothing, or nothing approved, with a clear message and nothing revoked', async () => {
    const { h, client, alices } = await twoApprovals();
    const other = await registerClient(h, { client_name: 'Other' });
    const admin = await signInToConsole(h);
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ user: 'nobody', client_id: client.client_id }, /There is no user named nobody\./],
      [{ user: USER.username, client_id: 'no-such-client' }, /There is no client no-such-client\./],
      [{ user: USER.username, client_id: other.client_id }, /alice has not approved .*: there is nothing to revoke\./],
      [{ client_id: client.client_id }, /Say whose approval to revoke/],
      [{ user: USER.username }, /Say which application to revoke/],
    ];
    for (const [fields, message] of cases) {
      const response = await consoleAction(admin, 'revoke-approval', fields);
      assert.equal(response.status, 400, JSON.stringify(fields));
      assert.match(await response.text(), message);
    }
    assert.equal((await h.store.listConsents({ clientId: client.client_id })).length, 2);
    assert.equal((await refresh(h, client, alices.refresh_token)).status, 200);
    assert.ok(!h.log.some((e) => e.event === 'consent_revoked' || e.event === 'admin_action'));
  });

  it('asks for the password again when the sign-in is older than allowed, and revokes nothing', async () => {
    const { h, client, alices } = await twoApprovals();
    const admin = await signInToConsole(h);
    h.clock.now += 601;
    const response = await consoleAction(admin, 'revoke-approval', { user: USER.username, client_id: client.client_id });
    assert.equal(response.status, 401);
    assert.match(await response.text(), /Confirm it is you/);
    assert.equal((await h.store.listConsents({ userId: 'user-alice' })).length, 1);
    await expectServed(await whoami(h, `Bearer ${alices.access_token}`));
  });
});

describe('revokeApproval: what the CLI and the console both run', () => {
  it('removes the consents and says how many, or says why there is nothing to remove', async () => {
    const { h, client } = await twoApprovals();
    assert.deepEqual(await revokeApproval(h.store, 'nobody', client.client_id, h.clock.now), { refused: 'There is no user named nobody.' });
    assert.deepEqual(await revokeApproval(h.store, 'alice', 'no-such-client', h.clock.now), { refused: 'There is no client no-such-client.' });
    const done = await revokeApproval(h.store, 'alice', client.client_id, h.clock.now);
    assert.ok('revoked' in done && done.revoked === 1 && done.user.username === 'alice');
    assert.deepEqual(await revokeApproval(h.store, 'alice', client.client_id, h.clock.now), {
      refused: `alice has not approved ${client.client_id}: there is nothing to revoke.`,
    });
  });
});
