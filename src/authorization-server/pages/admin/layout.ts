import { html, type SafeHtml } from '../html.js';
import { page, type Page } from '../layout.js';

/** A link in the console's navigation. */
export interface AdminNavItem {
  href: string;
  title: string;
  current: boolean;
}

export interface AdminPageInput {
  title: string;
  nav: AdminNavItem[];
  /** Who is signed in, shown beside the sign-out button. */
  username: string;
  /** The console's form target and this browser's anti-CSRF token, for the sign-out form. */
  action: string;
  csrfToken: string;
  /** What the last action did, said once after its redirect. */
  notice?: string;
  body: SafeHtml;
  status?: number;
}

/**
 * Every console page: a skip link, the navigation (the current page marked for screen readers
 * too), who is signed in, then the page itself. Wide on a desktop, one column at 390 px, where
 * tables scroll inside their own box rather than the page.
 */
export function adminPage(input: AdminPageInput): Page {
  return page(
    `${input.title} · Admin`,
    html`<a class="skip" href="#content">Skip to content</a>
<header class="admin-bar">
<nav aria-label="Admin console"><ul>
${input.nav.map((item) => html`<li><a href="${item.href}"${item.current ? html` aria-current="page"` : ''}>${item.title}</a></li>`)}
</ul></nav>
<form method="post" action="${input.action}" class="who">
<span class="muted">Signed in as <strong>${input.username}</strong></span>
<input type="hidden" name="csrf" value="${input.csrfToken}">
<input type="hidden" name="action" value="sign-out">
<button type="submit">Sign out</button>
</form>
</header>
<div id="content">
<h1>${input.title}</h1>
${input.notice ? html`<p class="notice" role="status">${input.notice}</p>` : ''}
${input.body}
</div>`,
    { status: input.status ?? 200, wide: true },
  );
}

/** A form that runs one console action: the CSRF token, the action's name, its fields, one button. */
export function actionForm(input: {
  action: string;
  csrfToken: string;
  name: string;
  fields: Record<string, string>;
  label: string;
  danger?: boolean;
  /** Words for screen readers when the button's label alone is ambiguous in a list ("Remove client abc"). */
  ariaLabel?: string;
}): SafeHtml {
  return html`<form method="post" action="${input.action}" class="inline">
<input type="hidden" name="csrf" value="${input.csrfToken}">
<input type="hidden" name="action" value="${input.name}">
${Object.entries(input.fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}
<button type="submit"${input.danger ? html` class="danger"` : ''}${input.ariaLabel ? html` aria-label="${input.ariaLabel}"` : ''}>${input.label}</button>
</form>`;
}

/** A table of records: a caption for screen readers, header cells with scope, and a box that scrolls sideways on a phone. */
export function recordTable(input: { caption: string; columns: string[]; rows: SafeHtml[][]; empty: string }): SafeHtml {
  if (input.rows.length === 0) return html`<p class="muted">${input.empty}</p>`;
  return html`<div class="table-wrap" role="region" aria-label="${input.caption}" tabindex="0">
<table>
<caption class="visually-hidden">${input.caption}</caption>
<thead><tr>${input.columns.map((column) => html`<th scope="col">${column}</th>`)}</tr></thead>
<tbody>
${input.rows.map((cells) => html`<tr>${cells.map((cell) => html`<td>${cell}</td>`)}</tr>`)}
</tbody>
</table>
</div>`;
}

/** A search box over a listing (GET, so the URL can be shared), and the link to the next page when there is one. */
export function searchForm(input: { action: string; label: string; value: string }): SafeHtml {
  return html`<form method="get" action="${input.action}" class="search" role="search">
<label for="q">${input.label}</label>
<div class="row"><input id="q" name="q" type="text" value="${input.value}" autocomplete="off" spellcheck="false"><button type="submit">Search</button></div>
</form>`;
}

export function pager(input: { first: string | null; next: string | null }): SafeHtml {
  if (!input.first && !input.next) return html``;
  return html`<nav class="pager" aria-label="Pages">
${input.first ? html`<a href="${input.first}">First page</a>` : ''}
${input.next ? html`<a href="${input.next}" rel="next">Next page</a>` : ''}
</nav>`;
}

/** A time as the console shows it: to the minute, in UTC (no script to learn the reader's zone). */
export function shownTime(seconds: number | null | undefined): SafeHtml {
  if (seconds === null || seconds === undefined) return html`<span class="muted">never</span>`;
  const iso = new Date(seconds * 1000).toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}
