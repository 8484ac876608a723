import { html } from './html.js';
import { page, type Page } from './layout.js';

export interface LoginPageInput {
  action: string;
  csrfToken: string;
  clientName: string;
  username?: string;
  error?: string;
  formTargets: string[];
}

/** The sign-in form. Contract for scripts and tests: inputs `username` and `password`. */
export function loginPage(input: LoginPageInput): Page {
  return page(
    'Sign in',
    html`<h1>Sign in</h1>
<p class="muted">to continue to <strong>${input.clientName}</strong></p>
${input.error ? html`<p class="error" role="alert">${input.error}</p>` : ''}
<form method="post" action="${input.action}">
<input type="hidden" name="csrf" value="${input.csrfToken}">
<input type="hidden" name="step" value="login">
<label for="username">Username</label>
<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" required autofocus value="${input.username ?? ''}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>`,
    { status: input.error ? 401 : 200, formTargets: input.formTargets },
  );
}
