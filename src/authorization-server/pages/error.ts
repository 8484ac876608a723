import { html } from './html.js';
import { page, type Page } from './layout.js';

/**
 * Shown instead of redirecting when the redirect URI cannot be trusted (unknown client,
 * unregistered redirect URI): OAuth 2.1 §4.1.2.1 forbids redirecting then.
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
