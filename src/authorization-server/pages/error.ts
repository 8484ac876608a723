import { html } from './html.js';
import { page, type Page } from './layout.js';

/**
 * Any error on the browser routes that carries no trusted redirect (http/errors.ts). At /authorize
 * that means the redirect URI cannot be trusted (unknown client, unregistered redirect URI), and
 * OAuth 2.1 §4.1.2.1 forbids redirecting then; on the interaction pages, anything but a denial.
 */
export function errorPage(status: number, error: string, description: string): Page {
  return page(
    'Authorization error',
    html`<h1>This request cannot continue</h1>
<p class="error" role="alert">${description}</p>
<p class="muted">Error code: <code>${error}</code>. Return to the application and try again; if it keeps happening, tell its developer.</p>`,
    { status },
  );
}
