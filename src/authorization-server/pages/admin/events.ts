import type { AuditEventRecord } from '../../../store/store.js';
import { html, type SafeHtml } from '../html.js';

/** A stored event's time (epoch milliseconds) as the console shows it: to the second, in UTC. */
export function shownInstant(ms: number): SafeHtml {
  const iso = new Date(ms).toISOString();
  return html`<time class="nowrap" datetime="${iso}">${iso.slice(0, 19).replace('T', ' ')} UTC</time>`;
}

/** Longest value shown in full in the details column; the whole event is in the log file. */
const MAX_VALUE = 80;

/** An event's details as short `key=value` text, in the order they were logged. */
export function detailsText(details: AuditEventRecord['details']): string {
  if (!details) return '';
  return Object.entries(details)
    .map(([key, value]) => {
      const shown = String(value);
      return `${key}=${shown.length > MAX_VALUE ? `${shown.slice(0, MAX_VALUE)}…` : shown}`;
    })
    .join(' ');
}

/** Links between pages of events, newest first: back to the newest, and on to older ones. */
export function eventPager(input: { newest: string | null; older: string | null }): SafeHtml {
  if (!input.newest && !input.older) return html``;
  return html`<nav class="pager" aria-label="Pages of events">
${input.newest ? html`<a href="${input.newest}">Newest events</a>` : ''}
${input.older ? html`<a href="${input.older}" rel="next">Older events</a>` : ''}
</nav>`;
}
