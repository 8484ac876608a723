import { html, type SafeHtml } from '../html.js';

export interface ConfirmationInput {
  /** The console's form target and the session's form token. */
  action: string;
  csrfToken: string;
  /** The action's name and the fields its form posted, posted again with `confirmed=yes`. */
  name: string;
  fields: Record<string, string>;
  /** The console page the change returns to, and Cancel leads back to. */
  returnTo: string;
  cancelHref: string;
  /** The change, named ("Remove the person alice"). */
  description: string;
  /** What it does, when that needs saying before it is made. */
  consequence?: string;
  /** The button's word ("Remove"); its accessible name is the change. Default: the change. */
  button?: string;
  /** Back from signing in again at a provider, where the change was asked for. */
  afterSignIn?: boolean;
  danger?: boolean;
}

/**
 * A change asked again before it is made: its name, what it does, and a form that makes it (no
 * script: a second form, and Cancel a link back). Contract: the action's fields, `return`, and
 * `confirmed=yes`.
 */
export function confirmation(input: ConfirmationInput): SafeHtml {
  return html`${input.afterSignIn ? html`<p class="notice" role="status">You signed in again. The change you asked for waits for you to confirm it.</p>` : ''}
<section class="confirm" aria-labelledby="confirm-heading">
<h2 id="confirm-heading">${input.description}?</h2>
${input.consequence ? html`<p>${input.consequence}</p>` : ''}
<form method="post" action="${input.action}">
<input type="hidden" name="csrf" value="${input.csrfToken}">
<input type="hidden" name="action" value="${input.name}">
${Object.entries(input.fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">\n`)}<input type="hidden" name="return" value="${input.returnTo}">
<input type="hidden" name="confirmed" value="yes">
<div class="actions"><a class="button" href="${input.cancelHref}">Cancel</a><button type="submit"${input.danger ? html` class="danger"` : ''}${
    input.button ? html` aria-label="${input.description}"` : ''
  }>${input.button ?? input.description}</button></div>
</form>
</section>`;
}
