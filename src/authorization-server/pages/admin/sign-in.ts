import { html } from '../html.js';
import { page, type Page } from '../layout.js';
import { providerButtons } from '../provider-buttons.js';

export interface AdminSignInPageInput {
  action: string;
  csrfToken: string;
  /** `sign-in` for anyone; `reauth` asks the signed-in administrator for their password again. */
  mode: 'sign-in' | 'reauth';
  /** For `reauth`: whose password is asked (not editable). */
  username?: string;
  /** The console page to return to afterwards (a section's name). */
  returnTo?: string;
  /** False when local users are off (or, for `reauth`, the administrator has no password): no password form. */
  localUsers: boolean;
  /**
   * Upstream identity providers, one button each: for `sign-in`, every one configured; for
   * `reauth`, the one the administrator's session came from ("Sign in again with …").
   */
  providers?: Array<{ id: string; name: string }>;
  /** Where the providers' buttons lead (their origins, for the page's CSP form-action). */
  formTargets?: string[];
  error?: string;
  status?: number;
}

/**
 * The console's sign-in, and its "confirm it's you" before an action when the sign-in is older
 * than the console allows. Contract: `action` (`sign-in` or `reauth`), `return`, and either
 * `provider` (a provider's button) or `username` and `password`.
 */
export function adminSignInPage(input: AdminSignInPageInput): Page {
  const reauth = input.mode === 'reauth';
  const providers = input.providers ?? [];
  const upstreamForm = providerButtons({
    action: input.action,
    fields: { csrf: input.csrfToken, action: input.mode, ...(input.returnTo ? { return: input.returnTo } : {}) },
    providers,
    label: reauth ? 'Sign in again with' : 'Sign in with',
  });
  const form = input.localUsers
    ? html`<form method="post" action="${input.action}">
<input type="hidden" name="csrf" value="${input.csrfToken}">
<input type="hidden" name="action" value="${input.mode}">
${input.returnTo ? html`<input type="hidden" name="return" value="${input.returnTo}">` : ''}
<label for="username">Username</label>
${
  reauth
    ? html`<input id="username" name="username" type="text" autocomplete="username" readonly value="${input.username ?? ''}">`
    : html`<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required autofocus value="${input.username ?? ''}">`
}
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${reauth && providers.length === 0 ? html` autofocus` : ''}>
<div class="actions"><button class="primary" type="submit">${reauth ? 'Confirm' : 'Sign in'}</button></div>
</form>`
    : providers.length > 0
      ? ''
      : html`<p>This server signs people in through a provider. Sign in at your account page, then come back.</p>`;
  const ask = reauth
    ? `Changes in the console need a recent sign-in. ${input.localUsers ? 'Enter your password' : 'Sign in again'} to go on.`
    : 'Sign in with an administrator account.';
  return page(
    reauth ? 'Confirm it is you · Admin' : 'Sign in · Admin',
    html`<h1>${reauth ? 'Confirm it is you' : 'Admin console'}</h1>
<p class="muted">${ask}</p>
${input.error ? html`<p class="error" role="alert">${input.error}</p>` : ''}
${upstreamForm}
${providers.length > 0 && input.localUsers ? html`<p class="or muted">or with a password</p>` : ''}
${form}`,
    { status: input.status ?? (input.error ? 401 : 200), formTargets: input.formTargets ?? [] },
  );
}

/** Signed in, but not an administrator: says so, and where a person's own page is. */
export function notAdminPage(input: { username: string; accountUrl: string | undefined }): Page {
  return page(
    'Not an administrator · Admin',
    html`<h1>Not an administrator</h1>
<p>You are signed in as <strong>${input.username}</strong>, which is not an administrator account.</p>
${input.accountUrl ? html`<p><a href="${input.accountUrl}">Go to your account</a></p>` : ''}`,
    { status: 403 },
  );
}
