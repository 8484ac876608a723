/**
 * What the README and docs/ quote of our pages is what the pages say: every phrase they quote
 * ("…", “…” or **…**) that begins as a button or link does (Approve, Sign in, Revoke, Next…) must
 * be text of a page as it renders, so a doc cannot tell a person to press a button that is not
 * there. The pages are the real ones, served in-process: sign-in and consent, the account page
 * with an approval, /device, every section of the admin console; and, for their optional parts,
 * the page functions with those parts present (the console's re-authentication through a
 * provider, the listing and event pagers). A "…" in a quote stands for any text (a provider's name).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { before, describe, it } from 'node:test';
import { REMOVE_CLIENT } from '../../src/authorization-server/admin/clients.js';
import type { AdminView } from '../../src/authorization-server/admin/section.js';
import { ADMIN_SECTIONS } from '../../src/authorization-server/admin/sections.js';
import { makeClient } from '../../src/store/testing/records.js';
import { eventPager } from '../../src/authorization-server/pages/admin/events.js';
import { pager } from '../../src/authorization-server/pages/admin/layout.js';
import { adminSignInPage } from '../../src/authorization-server/pages/admin/sign-in.js';
import { consoleAction, signInToConsole } from '../helpers/admin-console.js';
import {
  addUser,
  authorizeUrl,
  Browser,
  createHarness,
  ISSUER,
  parseForm,
  pkcePair,
  REDIRECT_URI,
  registerClient,
  RESOURCE,
  signInAndConsent,
} from '../helpers/harness.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** How a button or a link of a page begins: a quoted phrase beginning so names one. */
const PAGE_CONTROL =
  /^(Allow|Accept|Authori[sz]e|Approve|Grant|Deny|Reject|Decline|Cancel|Sign|Log|Submit|Continue|Confirm|Revoke|Remove|Delete|Rotate|Make|Search|Filter|Show|Next|Previous|First|Older|Newest|Yes|No|OK)\b/;

/** The quoted phrases of a document that name a button or a link; a paragraph's bold lead (ending in . or :) is not one. */
function quotedControls(doc: string): string[] {
  const text = readFileSync(join(ROOT, doc), 'utf8')
    .replace(/```[\s\S]*?```/g, '')
    .replace(/`[^`\n]*`/g, '');
  const quotes = [...text.matchAll(/\*\*([^*]+)\*\*|"([^"]{1,60})"|“([^”]{1,60})”/g)].map((m) => (m[1] ?? m[2] ?? m[3]!).replace(/\s+/g, ' ').trim());
  return quotes.filter((quote) => PAGE_CONTROL.test(quote) && !/[.:]$/.test(quote));
}

/** A page's text as a person reads it: no tags, entities decoded, spaces collapsed. */
function readable(html: string): string {
  const decoded = html
    .replace(/<(script|style)[\s\S]*?<\/\1>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
  return decoded.replace(/\s+/g, ' ');
}

async function renderedPages(): Promise<Map<string, string>> {
  const pages = new Map<string, string>();
  const h = createHarness();
  const user = await addUser(h);
  const client = await registerClient(h, { client_name: 'Docs client' });

  // Sign-in and consent, as a person meets them through /authorize.
  const browser = new Browser(h);
  const { challenge } = pkcePair();
  const first = await browser.fetch(
    authorizeUrl({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      resource: RESOURCE,
      state: 's',
    }),
  );
  const interaction: string[] = [];
  await signInAndConsent(browser, first, user, 'approve', ISSUER, interaction);
  interaction.forEach((html, i) => pages.set(`interaction page ${i + 1}`, html));

  // The account page, signed in, with that approval.
  const accountBrowser = new Browser(h);
  const signIn = parseForm(await (await accountBrowser.fetch('/account')).text());
  pages.set('/account sign-in', await (await accountBrowser.fetch('/account')).text());
  const signedIn = await accountBrowser.submit('/account', { csrf: signIn.csrf, action: 'sign-in', username: user.username, password: user.password });
  assert.equal(signedIn.status, 303, await signedIn.clone().text());
  pages.set('/account', await (await accountBrowser.fetch('/account')).text());

  pages.set('/device', await (await new Browser(h).fetch('/device')).text());

  // Every section of the console, as an administrator sees it, with another administrator and a user who is not one.
  await h.store.setUserAdmin((await addUser(h, 'bob')).username, true);
  const admin = await signInToConsole(h);
  for (const section of ADMIN_SECTIONS) {
    const path = `/admin${section.name ? `/${section.name}` : ''}${section.name === 'approvals' ? `?user=${user.username}` : ''}`;
    const response = await admin.browser.fetch(path);
    assert.equal(response.status, 200, path);
    pages.set(path, await response.text());
  }
  pages.set('/admin sign-in', await (await new Browser(h).fetch('/admin')).text());
  // A removal asks again before it is made.
  await h.store.createClient(makeClient({ clientId: 'c-1', clientName: 'Notes', metadata: { client_name: 'Notes' } }));
  const asked = await consoleAction(admin, 'remove-client', { client_id: 'c-1', return: 'clients' });
  assert.equal(asked.status, 200, await asked.clone().text());
  pages.set('/admin removal, asked again', await asked.text());

  // The optional parts, rendered by the page functions with them present.
  // Waiting for it: the removal of the client above.
  const view = { store: h.store } as unknown as Omit<AdminView, 'query' | 'sections'>;
  const description = await REMOVE_CLIENT.describe(view, new Map([['client_id', 'c-1']]));
  const reauth = adminSignInPage({
    action: '/admin',
    csrfToken: 'x',
    mode: 'reauth',
    username: 'root',
    localUsers: true,
    providers: [{ id: 'corp', name: 'Corp SSO' }],
    pending: { description, fields: {} },
  });
  pages.set('/admin re-authentication', reauth.body);
  pages.set('listing pager', pager({ first: '/admin/clients', next: '/admin/clients?after=x' }).value);
  pages.set('event pager', eventPager({ newest: '/admin/activity', older: '/admin/activity?before=1' }).value);
  return new Map([...pages].map(([name, html]) => [name, readable(html)]));
}

describe('what the README and docs/ quote of our pages', () => {
  let pages: Map<string, string>;
  before(async () => {
    pages = await renderedPages();
  });

  it('finds quoted buttons and links in them (the quoting this test reads)', () => {
    const found = DOCUMENTS.flatMap(quotedControls);
    assert.ok(found.includes('Approve') && found.includes('Revoke') && found.includes('Rotate now'), found.join(', '));
  });

  for (const doc of DOCUMENTS) {
    const quotes = [...new Set(quotedControls(doc))];
    if (quotes.length === 0) continue;
    it(doc, () => {
      for (const quote of quotes) {
        const pattern = new RegExp(
          quote
            .split('…')
            .map((part) => part.trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
            .join('.+?'),
        );
        const on = [...pages].filter(([, text]) => pattern.test(text)).map(([name]) => name);
        assert.ok(on.length > 0, `${doc} quotes "${quote}", which no page shows (looked at: ${[...pages.keys()].join(', ')})`);
      }
    });
  }
});
