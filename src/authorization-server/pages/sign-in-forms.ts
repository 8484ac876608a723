import { html, type SafeHtml } from './html.js';
import { providerButtons } from './provider-buttons.js';

export interface SignInFormsInput {
  action: string;
  /** Hidden fields the password form posts (the CSRF token, the step or action, a return target). */
  fields: Record<string, string>;
  /** Hidden fields the provider buttons post, where they differ from `fields`. */
  providerFields?: Record<string, string>;
  providers: Array<{ id: string; name: string }>;
  /** False when local users are off: no password form. */
  localUsers: boolean;
  /** The username to show again (after a failure), or the one being confirmed. */
  username?: string;
  /** The username is the signed-in person's, shown but not editable (a re-authentication). */
  usernameReadonly?: boolean;
  /** Which field has the focus when the page opens, if any. */
  autofocus?: 'username' | 'password';
  /** The password button's words. Default 'Sign in'. */
  submitLabel?: string;
  /** The provider buttons' words before each provider's name. */
  providerLabel?: string;
}

/**
 * Every sign-in page's forms: a button per upstream provider, then "or with a password" and the
 * password form (inputs `username` and `password`). The sign-in page of an authorization, the
 * account page and the admin console all show these, with their own hidden fields.
 */
export function signInForms(input: SignInFormsInput): SafeHtml {
  const hidden = Object.entries(input.fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">\n`);
  const focus = (field: 'username' | 'password') => (input.autofocus === field ? html` autofocus` : '');
  const username = input.usernameReadonly
    ? html`<input id="username" name="username" type="text" autocomplete="username" readonly value="${input.username ?? ''}">`
    : html`<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required${focus('username')} value="${input.username ?? ''}">`;
  const passwordForm = input.localUsers
    ? html`<form method="post" action="${input.action}">
${hidden}<label for="username">Username</label>
${username}
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${focus('password')}>
<div class="actions"><button class="primary" type="submit">${input.submitLabel ?? 'Sign in'}</button></div>
</form>`
    : '';
  const providers = providerButtons({
    action: input.action,
    fields: input.providerFields ?? input.fields,
    providers: input.providers,
    ...(input.providerLabel ? { label: input.providerLabel } : {}),
  });
  return html`${providers}
${input.providers.length > 0 && input.localUsers ? html`<p class="or muted">or with a password</p>` : ''}
${passwordForm}`;
}
