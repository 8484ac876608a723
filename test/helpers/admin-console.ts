/**
 * Driving the admin console in-process: an administrator (or anyone) signed in at /admin in a
 * Browser, and the CSRF token its forms carry.
 */
import assert from 'node:assert/strict';
import { addUser, Browser, parseForm, type Harness } from './harness.js';

export interface SignedIn {
  browser: Browser;
  csrf: string;
  user: { id: string; username: string; password: string };
}

/** Adds a user (an administrator unless `admin: false`) and signs them in at /admin in a new browser. */
export async function signInToConsole(h: Harness, options: { username?: string; admin?: boolean } = {}): Promise<SignedIn> {
  const user = await addUser(h, options.username ?? 'root');
  if (options.admin !== false) assert.equal(await h.store.setUserAdmin(user.username, true), true);
  const browser = new Browser(h);
  const page = await browser.fetch('/admin');
  const { csrf } = parseForm(await page.text());
  const signedIn = await browser.submit('/admin', { csrf, action: 'sign-in', username: user.username, password: user.password });
  assert.equal(signedIn.status, 303, await signedIn.clone().text());
  return { browser, csrf, user };
}

/** Posts a console action from a signed-in browser. */
export function consoleAction(session: SignedIn, action: string, fields: Record<string, string> = {}): Promise<Response> {
  return session.browser.submit('/admin', { csrf: session.csrf, action, ...fields });
}
