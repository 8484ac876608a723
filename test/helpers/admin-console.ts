/**
 * Driving the admin console in-process: an administrator (or anyone) signed in at /admin in a
 * Browser, and the CSRF token its forms carry (the session's, once signed in).
 */
import assert from 'node:assert/strict';
import { addUser, Browser, type Harness } from './harness.js';

export interface SignedIn {
  browser: Browser;
  /** The token of the console's forms for this session ('' for someone who is not an administrator: no forms). */
  csrf: string;
  user: { id: string; username: string; password: string };
}

/** A new browser at the console's sign-in page, and its form's token (this browser's). */
export async function atConsoleSignIn(h: Harness): Promise<{ browser: Browser; csrf: string }> {
  const browser = new Browser(h);
  return { browser, csrf: consoleToken(await (await browser.fetch('/admin')).text()) };
}

/** Adds a user (an administrator unless `admin: false`) and signs them in at /admin in a new browser. */
export async function signInToConsole(h: Harness, options: { username?: string; admin?: boolean } = {}): Promise<SignedIn> {
  const user = await addUser(h, options.username ?? 'root');
  if (options.admin !== false) assert.equal(await h.store.setUserAdmin(user.username, true), true);
  const { browser, csrf } = await atConsoleSignIn(h);
  const signedIn = await browser.submit('/admin', { csrf, action: 'sign-in', username: user.username, password: user.password });
  assert.equal(signedIn.status, 303, await signedIn.clone().text());
  return { browser, csrf: await sessionToken(browser), user };
}

/** Posts a console action from a signed-in browser. */
export function consoleAction(session: SignedIn, action: string, fields: Record<string, string> = {}): Promise<Response> {
  return session.browser.submit('/admin', { csrf: session.csrf, action, ...fields });
}

/** Confirms a stale sign-in with the password; the session it begins has a token of its own, kept in `session`. */
export async function confirmSignIn(session: SignedIn, fields: Record<string, string> = {}): Promise<Response> {
  const confirmed = await consoleAction(session, 'reauth', { password: session.user.password, ...fields });
  session.csrf = await sessionToken(session.browser);
  return confirmed;
}

/** The csrf token of a console page's forms, '' on a page without any. */
export function consoleToken(html: string): string {
  return /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
}

const sessionToken = async (browser: Browser): Promise<string> => consoleToken(await (await browser.fetch('/admin')).text());
