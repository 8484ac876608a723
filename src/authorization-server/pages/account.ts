import { accessRow, applicationRow } from './consent.js';
import { html, token } from './html.js';
import { page, type Page } from './layout.js';
import { signInForms } from './sign-in-forms.js';

/**
 * Where a program's sign-ins end, as its registration allows: at the loopback address of the
 * computer whose browser signed in, with a code shown on a device, or either.
 */
export type RunsOn = 'loopback' | 'device' | 'loopback-or-device';

/** One application the person approved: who it is (what of it is verified), and each server it may use. */
export interface ApprovedApplication {
  clientId: string;
  clientName: string;
  /** A metadata-document client's site, which vouches for its name. */
  clientHost?: string;
  /** A dynamically registered client's self-chosen name. */
  clientNameUnverified?: boolean;
  /** Set when the registration lets it sign in only as a program on a computer or a device. */
  runsOn?: RunsOn;
  /** The registration's software_id, self-declared like its name. */
  softwareId?: string;
  /** Seconds since the epoch; null when never recorded. */
  lastUsedAt: number | null;
  access: Array<{ resource: string; scopes: string[]; approvedAt: number }>;
}

export interface AccountPageInput {
  action: string;
  csrfToken: string;
  username: string;
  /** Registrations that name themselves alike are one group, shown as one card (approved-applications.ts). */
  applications: ApprovedApplication[][];
  /** What revoking does to the access tokens an application holds (pages/revoked-tokens.ts). */
  revokedAccessTokens: string;
  /** What the last action did, said once after its redirect. */
  notice?: string;
}

/** A time as the page shows it: to the minute, in UTC (the page has no script to learn the reader's zone). */
function shownTime(seconds: number): string {
  return `${new Date(seconds * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

const RUNS_ON: Record<RunsOn, string> = {
  loopback: 'a program on the computer you signed in from (its sign-in returns to 127.0.0.1 there)',
  device: 'a program on a device that showed you a code',
  'loopback-or-device': 'a program on the computer you signed in from (its sign-in returns to 127.0.0.1 there), or on a device that showed you a code',
};

/** What the registration says of where the program runs, when it can only be a program. */
function runsOnRow(app: ApprovedApplication) {
  return app.runsOn ? html`<dt>Runs as</dt><dd>${RUNS_ON[app.runsOn]}</dd>` : '';
}

/** Each server the application may use, with what, since when; and when it was last used. */
function accessRows(app: ApprovedApplication) {
  return html`${app.access.map(
    (access) => html`<dt>Server</dt><dd>${token(access.resource)}</dd>
${accessRow(access.scopes)}
<dt>Approved</dt><dd>${shownTime(access.approvedAt)}</dd>`,
  )}
<dt>Application last used</dt><dd>${app.lastUsedAt === null ? html`<span class="muted">not recorded</span>` : shownTime(app.lastUsedAt)}</dd>`;
}

/** What is known of one approved application: who publishes it, its name (marked when unverified), where it runs, each server and scope, when. */
export function approvedApplicationFacts(app: ApprovedApplication) {
  return html`${app.clientHost ? html`<p class="site">Published by <strong>${token(app.clientHost)}</strong></p>` : ''}
<dl>
${applicationRow(app)}
${runsOnRow(app)}
${accessRows(app)}
</dl>`;
}

/** A Revoke button for one application, or (`client_ids`) for every registration of a group. */
function revokeForm(input: AccountPageInput, target: { client_id: string } | { client_ids: string }, label: string, ariaLabel: string) {
  const [name, value] = Object.entries(target)[0]!;
  return html`<form method="post" action="${input.action}">
<input type="hidden" name="csrf" value="${input.csrfToken}">
<input type="hidden" name="action" value="revoke">
<input type="hidden" name="${name}" value="${value}">
<div class="actions"><button class="danger" type="submit" aria-label="${ariaLabel}">${label}</button></div>
</form>`;
}

/**
 * One card per application; registrations under one self-chosen name share a card that lists
 * each (its client ID, where it runs, its servers), each revocable, and all of them at once.
 */
function applicationCard(input: AccountPageInput, group: ApprovedApplication[]) {
  const first = group[0]!;
  if (group.length === 1) {
    return html`<section class="app">
${approvedApplicationFacts(first)}
${revokeForm(input, { client_id: first.clientId }, 'Revoke', `Revoke ${first.clientName}`)}
</section>`;
  }
  // Where they run, said once when every registration says the same.
  const shared = new Set(group.map((app) => app.runsOn)).size === 1;
  return html`<section class="app">
<dl>
<dt>Application</dt><dd>${first.clientName}${first.clientNameUnverified ? html` <span class="tag">unverified</span>` : ''}</dd>
${shared ? runsOnRow(first) : ''}
</dl>
<p class="muted">${group.length} registrations under this name, each approved by you: a program may register again on each computer, or with each credentials file, it signs in from. Whoever registers chooses the name, so revoke any you do not recognise.</p>
${group.map(
  (app, i) => html`<div class="registration">
<dl>
<dt>Registration ${i + 1}</dt><dd>${token(app.clientId)}</dd>
${shared ? '' : runsOnRow(app)}
${accessRows(app)}
</dl>
${revokeForm(input, { client_id: app.clientId }, 'Revoke this one', `Revoke registration ${i + 1} of ${app.clientName}`)}
</div>`,
)}
${revokeForm(input, { client_ids: group.map((app) => app.clientId).join(' ') }, `Revoke all ${group.length}`, `Revoke all ${group.length} registrations of ${first.clientName}`)}
</section>`;
}

/**
 * The signed-in person's page: the applications they approved, each with a Revoke button, and Sign out.
 * Contract: forms post `csrf` and `action` (`revoke` with `client_id`, or with `client_ids`
 * separated by spaces; or `sign-out`).
 */
export function accountPage(input: AccountPageInput): Page {
  const hidden = html`<input type="hidden" name="csrf" value="${input.csrfToken}">`;
  const applications = input.applications.map((group) => applicationCard(input, group));
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
