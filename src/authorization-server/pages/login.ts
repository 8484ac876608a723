import { html } from './html.js';
import { page, type Page } from './layout.js';
import { signInForms } from './sign-in-forms.js';

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
  return page(
    'Sign in',
    html`<h1>Sign in</h1>
<p class="muted">to continue to <strong>${input.clientName}</strong></p>
${input.error ? html`<p class="error" role="alert">${input.error}</p>` : ''}
${signInForms({
  action: input.action,
  fields: { csrf: input.csrfToken, step: 'login' },
  providerFields: { csrf: input.csrfToken, step: 'upstream' },
  providers,
  localUsers: local,
  ...(input.username !== undefined ? { username: input.username } : {}),
  ...(providers.length > 0 ? {} : { autofocus: 'username' as const }),
})}`,
    { status: input.error ? 401 : 200, formTargets: input.formTargets },
  );
}
