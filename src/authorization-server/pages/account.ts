import { accessRow, applicationRow } from './consent.js';
import { html, token } from './html.js';
import { page, type Page } from './layout.js';
import { signInForms } from './sign-in-forms.js';

/** One application the person approved: who it is (what of it is verified), and each server it may use. */
export interface ApprovedApplication {
  clientId: string;
  clientName: string;
  /** A metadata-document client's site, which vouches for its name. */
  clientHost?: string;
  /** A dynamically registered client's self-chosen name. */
  clientNameUnverified?: boolean;
  /** Seconds since the epoch; null when never recorded. */
  lastUsedAt: number | null;
  access: Array<{ resource: string; scopes: string[]; approvedAt: number }>;
}

export interface AccountPageInput {
  action: string;
  csrfToken: string;
  username: string;
  applications: ApprovedApplication[];
  /** What revoking does to the access tokens an application holds (pages/revoked-tokens.ts). */
  revokedAccessTokens: string;
  /** What the last action did, said once after its redirect. */
  notice?: string;
}

/** A time as the page shows it: to the minute, in UTC (the page has no script to learn the reader's zone). */
function shownTime(seconds: number): string {
  return `${new Date(seconds * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** What is known of one approved application: who publishes it, its name (marked when unverified), each server and scope, when. */
export function approvedApplicationFacts(app: ApprovedApplication) {
  return html`${app.clientHost ? html`<p class="site">Published by <strong>${token(app.clientHost)}</strong></p>` : ''}
<dl>
${applicationRow(app)}
${app.access.map((access) => html`<dt>Server</dt><dd>${token(access.resource)}</dd>
${accessRow(access.scopes)}
<dt>Approved</dt><dd>${shownTime(access.approvedAt)}</dd>`)}
<dt>Application last used</dt><dd>${app.lastUsedAt === null ? html`<span class="muted">not recorded</span>` : shownTime(app.lastUsedAt)}</dd>
</dl>`;
}

/**
 * The signed-in person's page: the applications they approved, each with a Revoke button, and Sign out.
 * Contract: forms post `csrf` and `action` (`revoke` with `client_id`, or `sign-out`).
 */
export function accountPage(input: AccountPageInput): Page {
  const hidden = html`<input type="hidden" name="csrf" value="${input.csrfToken}">`;
  const applications = input.applications.map(
    (app) => html`<section class="app">
${approvedApplicationFacts(app)}
<form method="post" action="${input.action}">
${hidden}
<input type="hidden" name="action" value="revoke">
<input type="hidden" name="client_id" value="${app.clientId}">
<div class="actions"><button class="danger" type="submit">Revoke</button></div>
</form>
</section>`,
  );
  return page(
    'Your account',
    html`<h1>Your account</h1>
<p class="muted">Signed in as <strong>${input.username}</strong></p>
${input.notice ? html`<p class="notice" role="status">${input.notice}</p>` : ''}
<h2>Applications you approved</h2>
${
  applications.length > 0
    ? html`<p class="muted">Revoking stops an application getting new tokens at once: it has to ask you again. ${input.revokedAccessTokens}</p>${applications}`
    : html`<p class="muted">None. Applications you approve appear here, and you can revoke them here.</p>`
}
<form method="post" action="${input.action}">
${hidden}
<input type="hidden" name="action" value="sign-out">
<div class="actions"><button type="submit">Sign out</button></div>
</form>`,
  );
}

export interface AccountSignInPageInput {
  action: string;
  csrfToken: string;
  /** False when local users are off: no password form. */
  localUsers: boolean;
  /** Upstream identity providers, one button each. */
  providers?: Array<{ id: string; name: string }>;
  /** Where the providers' buttons lead (their origins, for the page's CSP form-action). */
  formTargets?: string[];
  username?: string;
  error?: string;
  notice?: string;
  status?: number;
}

/**
 * The account page before signing in: a button per upstream provider and a password form.
 * Contract: `action=sign-in`, with `provider` (a provider's button) or inputs `username` and `password`.
 */
export function accountSignInPage(input: AccountSignInPageInput): Page {
  const providers = input.providers ?? [];
  const forms = signInForms({
    action: input.action,
    fields: { csrf: input.csrfToken, action: 'sign-in' },
    providers,
    localUsers: input.localUsers,
    ...(input.username !== undefined ? { username: input.username } : {}),
    ...(providers.length > 0 ? {} : { autofocus: 'username' as const }),
  });
  const noForm = !input.localUsers && providers.length === 0;
  return page(
    'Your account',
    html`<h1>Your account</h1>
<p class="muted">Sign in to see the applications you approved, and to revoke them.</p>
${input.notice ? html`<p class="notice" role="status">${input.notice}</p>` : ''}
${input.error ? html`<p class="error" role="alert">${input.error}</p>` : ''}
${forms}
${noForm ? html`<p>This server signs people in through a provider, when they approve an application. Approve one, then come back to this page.</p>` : ''}`,
    { status: input.status ?? (input.error ? 401 : 200), formTargets: input.formTargets ?? [] },
  );
}
