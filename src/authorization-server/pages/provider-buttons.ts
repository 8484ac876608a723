import { html, type SafeHtml } from './html.js';

/**
 * One form with a button per upstream provider (`name="provider"`, valued with its id), posting
 * `fields` (the CSRF token and the step or action) with it; nothing when there is no provider.
 */
export function providerButtons(input: {
  action: string;
  fields: Record<string, string>;
  providers: Array<{ id: string; name: string }>;
  /** The button's words before the provider's name. */
  label?: string;
}): SafeHtml | '' {
  if (input.providers.length === 0) return '';
  return html`<form method="post" action="${input.action}" class="providers">
${Object.entries(input.fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">\n`)}${input.providers.map(
    (p) => html`<button type="submit" name="provider" value="${p.id}">${input.label ?? 'Sign in with'} ${p.name}</button>`,
  )}
</form>`;
}
