import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addUser, Browser, createHarness, parseForm } from '../../helpers/harness.js';
import { atConsoleSignIn, consoleAction, consoleToken, signInToConsole } from '../../helpers/admin-console.js';
import { withoutCapabilities } from '../../helpers/core-store.js';
import { createMemoryStore } from '../../../src/store/memory.js';

describe('admin console: who may enter', () => {
  it('asks a browser with no session to sign in, with a form bound to this browser', async () => {
    const h = createHarness();
    const response = await new Browser(h).fetch('/admin');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.match(response.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
    const html = await response.text();
    assert.match(html, /name="action" value="sign-in"/);
    assert.match(html, /name="password"/);
  });

  it('lets an administrator in, to an overview with the navigation', async () => {
    const h = createHarness();
    const admin = await signInToConsole(h);
    const response = await admin.browser.fetch('/admin');
    assert.equal(response.status, 200);
    const html = await response.text();
    assert.match(html, /<nav aria-label="Admin console">/);
    assert.match(html, /aria-current="page">Overview</);
    assert.match(html, /Signed in as <strong>root<\/strong>/);
    assert.ok(h.log.some((event) => event.event === 'login' && event.page === 'admin'));
  });

  it('refuses a signed-in person who is not an administrator, with 403', async () => {
    const h = createHarness();
    const person = await signInToConsole(h, { username: 'bob', admin: false });
    const response = await person.browser.fetch('/admin');
    assert.equal(response.status, 403);
    assert.match(await response.text(), /not an administrator/);
  });

  it('stops letting a person in once they are no longer an administrator', async () => {
    const h = createHarness();
    const admin = await signInToConsole(h);
    await h.store.setUserAdmin('root', false);
    assert.equal((await admin.browser.fetch('/admin')).status, 403);
  });

  it('refuses a wrong password and a form from another browser', async () => {
    const h = createHarness();
    await signInToConsole(h);
    const browser = new Browser(h);
    const { csrf } = parseForm(await (await browser.fetch('/admin')).text());
    const wrong = await browser.submit('/admin', { csrf, action: 'sign-in', username: 'root', password: 'not the password' });
    assert.equal(wrong.status, 401);
    const stranger = new Browser(h);
    await stranger.fetch('/admin');
    const forged = await stranger.submit('/admin', { csrf, action: 'sign-in', username: 'root', password: 'correct horse battery' });
    assert.equal(forged.status, 403);
  });

  it("binds the console's forms to the session: the sign-in page's token, another administrator's, or an ended session's is refused", async () => {
    const h = createHarness();
    const root = await signInToConsole(h);
    const other = await signInToConsole(h, { username: 'ops' });
    await addUser(h, 'alice');
    const { csrf: signInToken } = await atConsoleSignIn(h);
    const browserToken = consoleToken(await (await new Browser(h).fetch('/admin')).text());
    for (const csrf of [signInToken, browserToken, other.csrf]) {
      const response = await consoleAction({ ...root, csrf }, 'set-admin', { username: 'alice', admin: 'on' });
      assert.equal(response.status, 403);
      assert.match(await response.text(), /could not be verified/);
    }
    // Signed out and in again in the same browser: the old session's token is refused.
    const old = root.csrf;
    assert.equal((await consoleAction(root, 'sign-out')).status, 303);
    const { csrf } = parseForm(await (await root.browser.fetch('/admin')).text());
    assert.equal((await root.browser.submit('/admin', { csrf, action: 'sign-in', username: 'root', password: root.user.password })).status, 303);
    assert.equal((await consoleAction({ ...root, csrf: old }, 'set-admin', { username: 'alice', admin: 'on' })).status, 403);
    assert.notEqual((await h.store.getUser({ username: 'alice' }))?.admin, true, 'nobody made an administrator');
    const fresh = consoleToken(await (await root.browser.fetch('/admin')).text());
    assert.equal((await consoleAction({ ...root, csrf: fresh }, 'set-admin', { username: 'alice', admin: 'on' })).status, 303);
    assert.equal((await h.store.getUser({ username: 'alice' }))?.admin, true);
  });

  it('answers 404 for a page the console does not have', async () => {
    const h = createHarness();
    const admin = await signInToConsole(h);
    assert.equal((await admin.browser.fetch('/admin/nothing-here')).status, 404);
  });

  it('signs the administrator out', async () => {
    const h = createHarness();
    const admin = await signInToConsole(h);
    const out = await admin.browser.submit('/admin', { csrf: admin.csrf, action: 'sign-out' });
    assert.equal(out.status, 303);
    const after = await (await admin.browser.fetch('/admin')).text();
    assert.match(after, /name="action" value="sign-in"/);
  });

  it('is not there when the store cannot page clients and users', async () => {
    const h = createHarness({ store: withoutCapabilities(createMemoryStore(), ['console']) as ReturnType<typeof createMemoryStore> });
    assert.equal((await new Browser(h).fetch('/admin')).status, 404);
  });
});
