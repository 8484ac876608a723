import { createHash } from 'node:crypto';

/** Escapes text for HTML element content and double-quoted attributes. */
export function escapeHtml(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** A piece of HTML that is already safe; anything else interpolated into `html` is escaped. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

type Interpolation = SafeHtml | string | number | null | undefined | false | readonly Interpolation[];

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** Tagged template that escapes every interpolated value unless it is SafeHtml. */
export function html(strings: TemplateStringsArray, ...values: Interpolation[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((value, index) => {
    out += render(value) + strings[index + 1]!;
  });
  return new SafeHtml(out);
}

export function cspHash(content: string): string {
  return `'sha256-${createHash('sha256').update(content, 'utf8').digest('base64')}'`;
}

/**
 * An identifier (client id, host, URL) that may wrap only between its parts: after `://`, `/`,
 * `?` or `&`. Each part is an inline block, so a line breaks between parts and never inside one
 * (unless a single part is wider than the whole line).
 */
export function token(value: string): SafeHtml {
  const parts = value.match(/[^/?&]*(?:\/+|[?&]|$)/g)!.filter((part) => part !== '');
  return html`<code class="token">${parts.map((part, i) => html`${i > 0 ? new SafeHtml('<wbr>') : ''}<span>${part}</span>`)}</code>`;
}
