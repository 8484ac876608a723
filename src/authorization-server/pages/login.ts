import { html } from './html.js';
import { page, type Page } from './layout.js';
import { providerButtons } from './provider-buttons.js';

export interface LoginPageInput {
  action: string;
  csrfToken: string;
  clientName: string;
  username?: string;
  error?: string;
  formTargets: string[];
  /** Upstream identity providers, one button each. */
  providers?: Array<{ id: string; name: string }>;
  /** Whether the username and password form is offered. Default true. */
  localUsers?: boolean;
}

/**
 * The sign-in page. Contract for scripts and tests: inputs `username` and `password` (step
 * `login`); one button `name="provider"` per upstream provider, valued with its id (step `upstream`).
 */
export function loginPage(input: LoginPageInput): Page {
  const providers = input.providers ?? [];
  const local = input.localUsers ?? true;
  const upstreamForm = providerButtons({ action: input.action, fields: { csrf: input.csrfToken, step: 'upstream' }, providers });
  const localForm = local
    ? html`<form method="post" action="${input.action}">
<input type="hidden" name="csrf" value="${input.csrfToken}">
<input type="hidden" name="step" value="login">
<label for="username">Username</label>
<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required ${providers.length > 0 ? '' : 'autofocus'} value="${input.username ?? ''}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>`
    : '';
  return page(
    'Sign in',
    html`<h1>Sign in</h1>
<p class="muted">to continue to <strong>${input.clientName}</strong></p>
${input.error ? html`<p class="error" role="alert">${input.error}</p>` : ''}
${upstreamForm}
${providers.length > 0 && local ? html`<p class="or muted">or with a password</p>` : ''}
${localForm}`,
    { status: input.error ? 401 : 200, formTargets: input.formTargets },
  );
}
