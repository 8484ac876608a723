import { OAuthError } from '../../core/errors.js';
import type { SessionRecord, UserRecord } from '../../store/store.js';
import { accountPath } from '../account-link.js';
import { adminAccess } from '../admin/access.js';
import { ADMIN_PATH } from '../admin/address.js';
import { noticeOf, noticeQuery } from '../admin/notice.js';
import { changeOf, formOf, pendingFields, pendingFromQuery, pendingOf, type PendingChange } from '../admin/pending-change.js';
import { sectionsFor, type AdminAction, type AdminSection, type AdminView, type ConsoleStore } from '../admin/section.js';
import { ADMIN_ACTIONS, ADMIN_SECTIONS } from '../admin/sections.js';
import { readCookie } from '../browser-cookies.js';
import type { AdminServices } from '../admin/section.js';
import { formToken, isFormToken, refusedFormToken } from '../form-tokens.js';
import { readPageForm } from '../http/page-form.js';
import type { Params } from '../http/params.js';
import { notFoundAnswer } from '../http/errors.js';
import { seeOther, type Answer } from '../http/responses.js';
import { adminPage } from '../pages/admin/layout.js';
import { html, type SafeHtml } from '../pages/html.js';
import { confirmation } from '../pages/admin/confirm.js';
import { adminSignInPage, notAdminPage, type AdminSignInPageInput } from '../pages/admin/sign-in.js';
import { pageAnswer } from '../pages/layout.js';
import { checkPassword } from '../password-sign-in.js';
import { browserBinding, endSession, startSession } from '../sessions.js';
import { beginPageSignIn, offeredProviders, type PageSignInTarget } from '../upstream/page-sign-in.js';
import type { EndpointRequest } from '../http/request.js';

/*
 * The admin console: server-rendered pages under /admin for administrators, every form a POST to
 * /admin carrying the server's token for this page (form-tokens.ts): the sign-in form's bound to
 * this browser, every other to the administrator's session. Reading needs an
 * administrator's session; a change also needs a recent sign-in, or the console asks the person to
 * sign in again first (their password, or their provider). Each change is an action
 * (admin/sections.ts) that runs the CLI's code.
 */

export { ADMIN_PATH };

/** A page this store can back, by name (a page whose capability the store lacks is not there at all). */
const sectionNamed = (store: ConsoleStore, name: string): AdminSection | undefined =>
  sectionsFor(ADMIN_SECTIONS, store).find((section) => section.name === name);

/** GET /admin and /admin/<section>. */
export async function adminEndpoint(ctx: AdminServices, store: ConsoleStore, request: EndpointRequest, sectionName = ''): Promise<Answer> {
  const section = sectionNamed(store, sectionName);
  if (!section) return notFoundAnswer();
  const binding = browserBinding(ctx, request);
  const headers: Record<string, string> = binding.cookie ? { 'Set-Cookie': binding.cookie } : {};
  const access = await adminAccess(ctx, request);
  if (access.kind === 'signed-out') {
    const offered = await offeredProviders(ctx);
    const csrfToken = await formToken(ctx, 'admin', { binding: binding.value });
    return pageAnswer(
      adminSignInPage({ action: adminUrl(ctx), csrfToken, mode: 'sign-in', returnTo: section.name, localUsers: localUsers(ctx), ...offered }),
      headers,
    );
  }
  if (access.kind === 'not-admin') return pageAnswer(notAdminPage({ username: access.user.username, accountUrl: accountPath(ctx) }), headers);
  const csrfToken = await formToken(ctx, 'admin', { session: access.session });
  const url = request.url;
  const view: AdminView = { ...viewBase(ctx, store, access.user, csrfToken), query: url.searchParams, sections: sectionsFor(ADMIN_SECTIONS, store) };
  const shell = { title: section.title, nav: navOf(ctx, view.sections, section), username: access.user.username, action: adminUrl(ctx), csrfToken };
  // Back from signing in again at a provider: the change that waited for it, to confirm.
  const pending = await pendingFromQuery(ctx, binding.value, access.user.id, url.searchParams, ADMIN_ACTIONS);
  if (pending) return pageAnswer(adminPage({ ...shell, body: await confirmationOf(view, pending.action, pending.change, section.name, true) }), headers);
  let body;
  try {
    body = await section.render(view);
  } catch (error) {
    // A bad query (an unknown filter value, a malformed page key) is the reader's to fix: said on the page, in the console.
    if (error instanceof OAuthError) return pageAnswer(adminPage({ ...shell, body: consoleError(error), status: error.status }), headers);
    throw error;
  }
  const notice = await noticeOf(ctx, access.session, ADMIN_ACTIONS, url.searchParams);
  return pageAnswer(adminPage({ ...shell, body, ...(notice ? { notice } : {}) }), headers);
}

/** A refused query or action, inside the console (not the authorization error page, which speaks of an application). */
function consoleError(error: OAuthError): SafeHtml {
  return html`<p class="error" role="alert">${error.userMessage}</p>`;
}

/** POST /admin: sign in (the token of this browser), or confirm a sign-in, sign out or run an action (the token of the session). */
export async function adminSubmit(ctx: AdminServices, store: ConsoleStore, request: EndpointRequest): Promise<Answer> {
  const form = readPageForm(ctx, request);
  const csrf = form.get('csrf') ?? '';
  const action = form.get('action') ?? '';
  const returnTo = sectionNamed(store, form.get('return') ?? '')?.name ?? '';
  const provider = form.get('provider');
  // An upstream sign-in is sealed for this browser's binding, whichever token the form carries.
  const binding = readCookie(ctx, request, 'browser');
  if (action === 'sign-in') {
    if (!binding || !(await isFormToken(ctx, 'admin', { binding }, csrf))) throw refusedFormToken();
    if (provider !== undefined) return toProvider(ctx, binding, provider, { page: 'admin', section: returnTo });
    const signedIn = await signIn(ctx, request, await formToken(ctx, 'admin', { binding }), form, returnTo, 'sign-in');
    return 'body' in signedIn ? signedIn : seeOther(hrefOf(ctx, returnTo), [signedIn.cookie]);
  }

  const access = await adminAccess(ctx, request);
  // Signed out meanwhile (another tab, expiry), or no longer an administrator: the console again, which says so; nothing changes.
  if (access.kind !== 'admin') return seeOther(adminUrl(ctx));
  if (!(await isFormToken(ctx, 'admin', { session: access.session }, csrf))) throw refusedFormToken();
  const csrfToken = await formToken(ctx, 'admin', { session: access.session });
  if (action === 'sign-out') {
    const cleared = await endSession(ctx, request);
    ctx.log({ event: 'logout', user_id: access.user.id, page: 'admin' });
    return seeOther(adminUrl(ctx), [cleared]);
  }
  const base = viewBase(ctx, store, access.user, csrfToken);
  // A change waiting for this re-authentication, carried by its forms.
  const waiting = action === 'reauth' ? pendingOf(form, ADMIN_ACTIONS) : undefined;
  if (action === 'reauth' && provider !== undefined) {
    if (!binding) throw refusedFormToken();
    // Back from the provider, the sign-in must be this same person's; the change waits there to be confirmed.
    return toProvider(ctx, binding, provider, {
      page: 'admin',
      section: returnTo,
      reauth: { userId: access.user.id },
      ...(waiting ? { then: waiting.change } : {}),
    });
  }
  if (action === 'reauth') {
    // The same person again: the username is the session's, whatever the form says.
    const pending = waiting ? { description: await waiting.action.describe(base, formOf(waiting.change)), fields: pendingFields(waiting.change) } : undefined;
    const signedIn = await signIn(ctx, request, csrfToken, new Map([...form, ['username', access.user.username]]), returnTo, 'reauth', pending);
    if ('body' in signedIn) return signedIn;
    if (!waiting) return seeOther(hrefOf(ctx, returnTo), [signedIn.cookie]);
    // The page named this change, and the password confirmed it: it is made now, in the new session.
    const renewed = await formToken(ctx, 'admin', { session: signedIn.session });
    return perform(ctx, store, access.user, signedIn.session, renewed, waiting.action, formOf(waiting.change), returnTo, signedIn.cookie);
  }
  const handler = ADMIN_ACTIONS.find((candidate) => candidate.name === action);
  if (!handler) throw new OAuthError('invalid_request', 'unknown console action').withUserMessage('Unexpected form.');
  const change = changeOf(handler, form);
  if (!access.fresh) {
    const offered = await reauthProviders(ctx, access.session);
    // A password is asked only of an administrator who has one.
    const password = localUsers(ctx) && access.user.passwordHash !== null;
    const pending = { description: await handler.describe(base, form), fields: pendingFields(change) };
    return pageAnswer(
      adminSignInPage({
        action: adminUrl(ctx),
        csrfToken,
        mode: 'reauth',
        username: access.user.username,
        returnTo,
        localUsers: password,
        ...offered,
        pending,
        status: 401,
      }),
    );
  }
  if (handler.confirm !== undefined && form.get('confirmed') !== 'yes') {
    const section = sectionNamed(store, returnTo) ?? ADMIN_SECTIONS[0]!;
    return pageAnswer(
      adminPage({ ...shellOf(ctx, store, access.user, csrfToken, section), body: await confirmationOf(base, handler, change, section.name, false) }),
    );
  }
  return perform(ctx, store, access.user, access.session, csrfToken, handler, form, returnTo);
}

/**
 * Makes a change the console checked (an administrator, a recent sign-in, the form's token, and
 * a confirmation where one is asked), logs it, and sends the browser where its result is shown,
 * with a notice naming what it acted on. `cookie`: a session just begun, set with the answer.
 */
async function perform(
  ctx: AdminServices,
  store: ConsoleStore,
  user: UserRecord,
  session: SessionRecord,
  csrfToken: string,
  handler: AdminAction,
  form: Params,
  returnTo: string,
  cookie?: string,
): Promise<Answer> {
  let result;
  try {
    result = await handler.run(viewBase(ctx, store, user, csrfToken), form);
  } catch (error) {
    if (!(error instanceof OAuthError)) throw error;
    // Shown on the page the form came from when it says which, else the overview; nothing was changed.
    const section = sectionNamed(store, returnTo) ?? ADMIN_SECTIONS[0]!;
    const page = adminPage({
      ...shellOf(ctx, store, user, csrfToken, section),
      body: html`${consoleError(error)}<p><a href="${hrefOf(ctx, section.name)}">Back to ${section.title}</a></p>`,
      status: error.status,
    });
    return pageAnswer(page, cookie ? { 'Set-Cookie': cookie } : {});
  }
  ctx.log({ event: 'admin_action', user_id: user.id, action: handler.name, ...(result.target ? { target: result.target } : {}) });
  const notice = await noticeQuery(ctx, session, handler, result.subject);
  return seeOther(hrefOf(ctx, result.section, { ...result.query, ...notice }), cookie ? [cookie] : []);
}

/** A change asked again before it is made (or, back from a provider, confirmed after signing in again). */
async function confirmationOf(
  view: Omit<AdminView, 'query' | 'sections'>,
  handler: AdminAction,
  change: PendingChange,
  returnTo: string,
  afterSignIn: boolean,
): Promise<SafeHtml> {
  return confirmation({
    action: view.action,
    csrfToken: view.csrfToken,
    name: handler.name,
    fields: change.fields,
    returnTo,
    cancelHref: view.href(returnTo),
    description: await handler.describe(view, formOf(change)),
    ...(handler.confirm ? { consequence: handler.confirm.consequence, button: handler.confirm.button, danger: true } : {}),
    afterSignIn,
  });
}

/** The console's frame around a page: its title, the navigation, who is signed in. */
function shellOf(ctx: AdminServices, store: ConsoleStore, user: UserRecord, csrfToken: string, section: AdminSection) {
  return { title: section.title, nav: navOf(ctx, sectionsFor(ADMIN_SECTIONS, store), section), username: user.username, action: adminUrl(ctx), csrfToken };
}

/** action=sign-in or reauth with `provider`: off to that provider, whose callback brings the person back to `target`. */
async function toProvider(ctx: AdminServices, binding: string, provider: string, target: PageSignInTarget): Promise<Answer> {
  const { url, cookie } = await beginPageSignIn(ctx, binding, provider, target);
  return seeOther(url.href, [cookie]);
}

/**
 * For a re-authentication: the provider the administrator's session came from, if it did and can
 * confirm a recent sign-in; else, when it cannot (a plain OAuth 2.0 provider), its name, for the
 * page to say so.
 */
async function reauthProviders(
  ctx: AdminServices,
  session: SessionRecord,
): Promise<{ providers: Array<{ id: string; name: string }>; formTargets: string[]; unconfirmedBy?: string }> {
  const upstreamSession = session.upstreamSessionId === null ? undefined : await ctx.store.getUpstreamSession(session.upstreamSessionId);
  const providers = ctx.upstream?.providers;
  if (!upstreamSession || !providers?.has(upstreamSession.provider)) return { providers: [], formTargets: [] };
  if (!providers.confirmsSignIn(upstreamSession.provider)) {
    const name = providers.list().find((p) => p.id === upstreamSession.provider)!.name;
    return { providers: [], formTargets: [], unconfirmedBy: name };
  }
  const offered = await offeredProviders(ctx);
  return { ...offered, providers: offered.providers.filter((p) => p.id === upstreamSession.provider) };
}

/**
 * action=sign-in or reauth: a local password, through the same check and throttle as every
 * password form. A refusal is the page again (with the change waiting, for a re-authentication);
 * success, the session begun.
 */
async function signIn(
  ctx: AdminServices,
  request: EndpointRequest,
  csrfToken: string,
  form: Params,
  returnTo: string,
  mode: 'sign-in' | 'reauth',
  pending?: AdminSignInPageInput['pending'],
): Promise<Answer | { session: SessionRecord; cookie: string }> {
  if (!localUsers(ctx)) {
    throw new OAuthError('invalid_request', 'local users are turned off').withUserMessage("Sign in with one of the providers on the console's sign-in page.");
  }
  const username = form.get('username') ?? '';
  const checked = await checkPassword(ctx, request, username, form.get('password') ?? '', { page: 'admin' });
  if ('refused' in checked) {
    const { message, retryAfter } = checked.refused;
    const page = adminSignInPage({
      action: adminUrl(ctx),
      csrfToken,
      mode,
      username: username.slice(0, 200),
      returnTo,
      localUsers: true,
      ...(mode === 'sign-in' ? await offeredProviders(ctx) : {}),
      ...(pending ? { pending } : {}),
      error: message,
      ...(retryAfter ? { status: 429 } : {}),
    });
    return pageAnswer(page, retryAfter ? { 'Retry-After': String(retryAfter) } : {});
  }
  const started = await startSession(ctx, checked.user.id);
  ctx.log({ event: 'login', user_id: checked.user.id, page: 'admin', ...(mode === 'reauth' ? { reauth: true } : {}) });
  return started;
}

function viewBase(ctx: AdminServices, store: ConsoleStore, admin: AdminView['admin'], csrfToken: string): Omit<AdminView, 'query' | 'sections'> {
  return { ctx, store, admin, action: adminUrl(ctx), csrfToken, href: (section, query) => hrefOf(ctx, section, query) };
}

function hrefOf(ctx: AdminServices, section: string, query: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(name, value);
  const search = params.size > 0 ? `?${params}` : '';
  return `${adminUrl(ctx)}${section ? `/${section}` : ''}${search}`;
}

function navOf(ctx: AdminServices, sections: readonly AdminSection[], current: AdminSection) {
  return sections.map((section) => ({ href: hrefOf(ctx, section.name), title: section.title, current: section === current }));
}

const adminUrl = (ctx: AdminServices): string => `${ctx.config.basePath}${ADMIN_PATH}`;
const localUsers = (ctx: AdminServices): boolean => ctx.upstream?.localUsers ?? true;
