import { html } from '../html.js';
import { page, type Page } from '../layout.js';
import { signInForms } from '../sign-in-forms.js';

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
  /**
   * For `reauth`: the name of the provider the administrator's session came from, when it cannot
   * confirm a recent sign-in (a plain OAuth 2.0 provider such as GitHub): the page says what can.
   */
  unconfirmedBy?: string;
  /**
   * For `reauth`: the change waiting for it, named, and the hidden fields that carry it (every
   * form of the page posts them: the password form makes the change once the password is checked).
   */
  pending?: { description: string; fields: Record<string, string> };
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
  const fields = {
    csrf: input.csrfToken,
    action: input.mode,
    ...(input.returnTo ? { return: input.returnTo } : {}),
    ...(reauth ? (input.pending?.fields ?? {}) : {}),
  };
  const forms = signInForms({
    action: input.action,
    fields,
    providers,
    localUsers: input.localUsers,
    ...(input.username !== undefined ? { username: input.username } : {}),
    usernameReadonly: reauth,
    ...(reauth ? (providers.length === 0 ? { autofocus: 'password' as const } : {}) : { autofocus: 'username' as const }),
    submitLabel: reauth ? 'Confirm' : 'Sign in',
    providerLabel: reauth ? 'Sign in again with' : 'Sign in with',
  });
  const noForm = !input.localUsers && providers.length === 0;
  const ask = reauth ? reauthRequest(input) : 'Sign in with an administrator account.';
  return page(
    reauth ? 'Confirm it is you · Admin' : 'Sign in · Admin',
    html`<h1>${reauth ? 'Confirm it is you' : 'Admin console'}</h1>
<p class="muted">${ask}</p>
${reauth && input.pending ? waiting(input, input.pending.description) : ''}
${input.error ? html`<p class="error" role="alert">${input.error}</p>` : ''}
${forms}
${noForm && input.unconfirmedBy === undefined ? html`<p>This server signs people in through a provider. Sign in at your account page, then come back.</p>` : ''}`,
    { status: input.status ?? (input.error ? 401 : 200), formTargets: input.formTargets ?? [] },
  );
}

/** What a re-authentication asks for, and, when the session's provider cannot confirm one, what can. */
function reauthRequest(input: AdminSignInPageInput): string {
  if (input.unconfirmedBy === undefined)
    return `Changes in the console need a recent sign-in. ${input.localUsers ? 'Enter your password' : 'Sign in again'} to go on.`;
  const cannot = `Changes in the console need a recent sign-in, which ${input.unconfirmedBy} cannot confirm: it is not an OpenID provider.`;
  return input.localUsers
    ? `${cannot} Enter your password to go on.`
    : `${cannot} Changes need an administrator who signs in with a password, or through an OpenID provider.`;
}

/** The change a re-authentication is for, and when it is made: at once after the password, after confirming on return from a provider. */
function waiting(input: AdminSignInPageInput, description: string) {
  const providers = input.providers ?? [];
  const after = [
    ...(input.localUsers ? ['Your password makes it at once.'] : []),
    ...(providers.length > 0 ? [`Signing in again with ${providers.map((p) => p.name).join(' or ')} brings you back to confirm it.`] : []),
  ];
  return html`<p class="notice" role="status">Waiting for this sign-in: <strong>${description}</strong>.${after.length > 0 ? ` ${after.join(' ')}` : ''}</p>`;
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
