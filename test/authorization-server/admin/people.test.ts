import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { confirmSignIn, consoleAction, signInToConsole } from '../../helpers/admin-console.js';
import { addUser, Browser, createHarness, jwtClaims, obtainTokens, plainTokens, REVISIONS, type Harness } from '../../helpers/harness.js';
import { SQLITE, type OpenedStore } from '../../helpers/stores.js';

/** The table's rows as text, one string per row, cells separated by ' | ' (buttons' labels kept). */
function rowsOf(html: string): string[] {
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? '';
  return [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) =>
    [...row[1]!.matchAll(/<td>([\s\S]*?)<\/td>/g)]
      .map((cell) =>
        plainTokens(cell[1]!)
          .replace(/<[^>]+>/g, ' ')
          .replace(/\s+/g, ' ')
          .trim(),
      )
      .join(' | '),
  );
}

async function peoplePage(browser: Browser, query = ''): Promise<string> {
  const response = await browser.fetch(`/admin/people${query}`);
  assert.equal(response.status, 200);
  return response.text();
}

/** Signed in at /account (a browser session of alice's), for checking sign-out everywhere. */
async function accountSession(h: Harness, user: { username: string; password: string }): Promise<Browser> {
  const browser = new Browser(h);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await (await browser.fetch('/account')).text())![1]!;
  assert.equal((await browser.submit('/account', { csrf, action: 'sign-in', ...user })).status, 303);
  return browser;
}

const signedInAtAccount = async (browser: Browser): Promise<boolean> => !(await (await browser.fetch('/account')).text()).includes('name="password"');

const opened: OpenedStore[] = [];
after(async () => {
  for (const store of opened) await store.close();
});

const STORES: { name: string; harness: () => Promise<Harness> }[] = [
  { name: 'memory', harness: async () => createHarness() },
  {
    name: 'SQLite',
    harness: async () => {
      const store = await SQLITE.open();
      opened.push(store);
      return createHarness({ store: store.store });
    },
  },
];

for (const { name, harness } of STORES) {
  describe(`admin console: people (${name} store)`, () => {
    it('lists each person: how they sign in, administrator or not, created, last sign-in, a link to their approvals', async () => {
      const h = await harness();
      const admin = await signInToConsole(h);
      await addUser(h, 'alice');
      await h.store.createUserWithIdentity(
        { id: 'user-gina', username: 'gina', passwordHash: null, createdAt: h.clock.now },
        {
          issuer: 'https://accounts.google.com',
          subject: '1234',
          provider: 'google',
          userId: 'user-gina',
          email: 'gina@example.com',
          name: 'Gina',
          createdAt: h.clock.now,
        },
      );
      const html = await peoplePage(admin.browser);
      assert.match(html, /aria-current="page">People</);
      assert.deepEqual(rowsOf(html), [
        'alice Approvals Sign out everywhere Make administrator Remove | password | no | 2027-01-15 08:00 UTC | never',
        'gina Approvals Sign out everywhere Make administrator Remove | google: gina@example.com | no | 2027-01-15 08:00 UTC | never',
        'root (you) Approvals Sign out everywhere | password | administrator | 2027-01-15 08:00 UTC | 2027-01-15 08:00 UTC',
      ]);
      assert.match(html, /<a href="\/admin\/approvals\?user=alice">Approvals<\/a>/);
      assert.match(html, /aria-label="Remove: alice"/);
      assert.deepEqual(
        rowsOf(await peoplePage(admin.browser, '?q=GIN')).map((row) => row.split(' ')[0]),
        ['gina'],
      );
    });

    it('pages 50 at a time in username order', async () => {
      const h = await harness();
      const admin = await signInToConsole(h, { username: 'aaa-root' });
      for (let n = 0; n < 60; n++)
        await h.store.createUser({ id: `u${n}`, username: `user-${String(n).padStart(2, '0')}`, passwordHash: null, createdAt: h.clock.now });
      const first = await peoplePage(admin.browser);
      assert.equal(rowsOf(first).length, 50);
      assert.match(first, /<a href="\/admin\/people\?after=user-48" rel="next">Next page<\/a>/);
      const second = await peoplePage(admin.browser, '?after=user-48');
      assert.deepEqual(
        rowsOf(second).map((row) => row.split(' ')[0]),
        Array.from({ length: 11 }, (_, n) => `user-${49 + n}`),
      );
      assert.match(second, /First page/);
      assert.ok(!second.includes('Next page'));
    });

    it('signs a person out everywhere: their browser sessions end', async () => {
      const h = await harness();
      const admin = await signInToConsole(h);
      const alice = await addUser(h, 'alice');
      const browser = await accountSession(h, alice);
      assert.equal(await signedInAtAccount(browser), true);
      const response = await consoleAction(admin, 'sign-out-everywhere', { username: 'alice' });
      assert.equal(response.status, 303);
      assert.match(response.headers.get('location')!, /^\/admin\/people\?done=sign-out-everywhere&what=alice&sig=/);
      assert.match(
        await peoplePage(admin.browser, new URL(response.headers.get('location')!, 'http://x').search),
        /role="status">Signed out everywhere: every browser session of alice has ended\./,
      );
      assert.equal(await signedInAtAccount(browser), false);
      assert.ok(h.log.some((e) => e.event === 'admin_action' && e.action === 'sign-out-everywhere' && e.target === 'alice'));
    });

    it('removes a person: their tokens stop at once in this process', async () => {
      const h = await harness();
      const admin = await signInToConsole(h);
      const { tokens } = await obtainTokens(h, REVISIONS[0]);
      const access = { claims: jwtClaims(tokens.access_token) };
      // The console asks first, naming the person and what removing does; a second form makes it, Cancel goes back.
      const asked = await consoleAction(admin, 'remove-user', { username: 'alice', return: 'people' });
      assert.equal(asked.status, 200);
      const question = await asked.text();
      assert.match(question, /<h2 id="confirm-heading">Remove the person alice\?<\/h2>/);
      assert.match(question, /This deletes their account, their sessions and their approvals, and revokes the tokens of every application they approved\./);
      assert.match(question, /<input type="hidden" name="action" value="remove-user">\n<input type="hidden" name="username" value="alice">/);
      assert.match(question, /name="confirmed" value="yes"/);
      assert.match(
        question,
        /<a class="button" href="\/admin\/people">Cancel<\/a><button type="submit" class="danger" aria-label="Remove the person alice">Remove<\/button>/,
      );
      assert.ok(await h.store.getUser({ username: 'alice' }), 'nobody removed before it is confirmed');
      assert.ok(!h.log.some((e) => e.event === 'admin_action'));

      const response = await consoleAction(admin, 'remove-user', { username: 'alice', return: 'people', confirmed: 'yes' });
      assert.equal(response.status, 303);
      assert.equal(await h.store.getUser({ username: 'alice' }), undefined);
      assert.equal(h.server.revocations.isRevoked(access), true);
      assert.ok(h.log.some((e) => e.event === 'admin_action' && e.action === 'remove-user' && e.target === 'alice'));
      const notice = await peoplePage(admin.browser, new URL(response.headers.get('location')!, 'http://x').search);
      assert.match(
        notice,
        /role="status">Person removed: alice, with their sessions and approvals\. Access tokens their applications already hold are refused/,
      );
    });

    it('makes a person an administrator and revokes it', async () => {
      const h = await harness();
      const admin = await signInToConsole(h);
      await addUser(h, 'alice');
      assert.equal((await consoleAction(admin, 'set-admin', { username: 'alice', admin: 'on' })).status, 303);
      assert.equal((await h.store.getUser({ username: 'alice' }))?.admin, true);
      assert.match(
        rowsOf(await peoplePage(admin.browser))[0]!,
        /^alice Approvals Sign out everywhere Revoke administrator Remove \| password \| administrator \| /,
      );
      assert.equal((await consoleAction(admin, 'set-admin', { username: 'alice', admin: 'off' })).status, 303);
      assert.notEqual((await h.store.getUser({ username: 'alice' }))?.admin, true);
    });

    it('refuses to remove yourself or revoke your own rights, an unknown person, and a bad form', async () => {
      const h = await harness();
      const admin = await signInToConsole(h);
      const self = await consoleAction(admin, 'remove-user', { username: 'root', confirmed: 'yes' });
      assert.equal(self.status, 400);
      assert.match(await self.text(), /You cannot remove your own account here/);
      const revoke = await consoleAction(admin, 'set-admin', { username: 'root', admin: 'off' });
      assert.equal(revoke.status, 400);
      assert.match(await revoke.text(), /You cannot revoke your own administrator rights/);
      assert.equal((await h.store.getUser({ username: 'root' }))?.admin, true);
      for (const action of ['remove-user', 'sign-out-everywhere']) {
        const unknown = await consoleAction(admin, action, { username: 'nobody', confirmed: 'yes' });
        assert.equal(unknown.status, 404, action);
        assert.match(await unknown.text(), /There is no user named nobody\./);
      }
      assert.equal((await consoleAction(admin, 'set-admin', { username: 'nobody', admin: 'on' })).status, 404);
      assert.equal((await consoleAction(admin, 'set-admin', { username: 'root', admin: 'maybe' })).status, 400);
      assert.ok(!h.log.some((e) => e.event === 'admin_action'), 'nothing was done');
    });

    it('asks a stale sign-in for the password before a change, then makes it', async () => {
      const h = await harness();
      const admin = await signInToConsole(h);
      await addUser(h, 'alice');
      h.clock.now += 601;
      const stale = await consoleAction(admin, 'set-admin', { username: 'alice', admin: 'on', return: 'people' });
      assert.equal(stale.status, 401);
      assert.match(await stale.text(), /Confirm it is you/);
      assert.notEqual((await h.store.getUser({ username: 'alice' }))?.admin, true, 'nothing changed');
      const confirmed = await confirmSignIn(admin, { return: 'people' });
      assert.equal(confirmed.headers.get('location'), '/admin/people');
      assert.equal((await consoleAction(admin, 'set-admin', { username: 'alice', admin: 'on' })).status, 303);
      assert.equal((await h.store.getUser({ username: 'alice' }))?.admin, true);
    });
  });
}
