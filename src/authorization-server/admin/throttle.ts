import { hasAuditEvents } from '../../store/capabilities.js';
import type { AuditEventRecord } from '../../store/store.js';
import type { AuditEventName } from '../audit.js';
import { recordTable } from '../pages/admin/layout.js';
import { shownInstant } from '../pages/admin/events.js';
import { html, type SafeHtml } from '../pages/html.js';
import { auditEventsOf } from './activity.js';
import type { AdminSection, AdminView } from './section.js';

/** The window the page looks back over. */
const WINDOW_MS = 24 * 3600 * 1000;
/** Events read per kind at most: the page stays quick under a flood, and says when it stopped short. */
const READ_PER_KIND = 1000;
/** Keys waiting right now shown at most. */
const WAITING_SHOWN = 50;

/** The refusals counted, in the table's order, with their column heading. */
const KINDS = [
  { event: 'login_failed', heading: 'Failed sign-ins' },
  { event: 'login_throttled', heading: 'Sign-ins throttled' },
  { event: 'user_code_wrong', heading: 'Wrong user codes' },
  { event: 'user_code_throttled', heading: 'User codes throttled' },
  { event: 'rate_limited', heading: 'Rate-limit refusals' },
] as const satisfies readonly { event: AuditEventName; heading: string }[];

interface AddressRow {
  address: string | null;
  counts: number[];
  lastMs: number;
}

/** How many refusals an event stands for: a rate_limited line counts those since its last line. */
function refusals(event: AuditEventRecord): number {
  const refused = event.details?.refused;
  return typeof refused === 'number' && Number.isSafeInteger(refused) && refused > 0 ? refused : 1;
}

/** Sign-in throttling and rate-limit refusals over the last day, one row per address bucket. */
export const THROTTLE: AdminSection = {
  name: 'throttle',
  title: 'Sign-in throttling',
  summary: 'Failed and throttled sign-ins, wrong user codes and rate-limit refusals over the last 24 hours, by address.',
  needs: (store) => hasAuditEvents(store),
  async render(view) {
    const store = auditEventsOf(view.store);
    const since = view.ctx.nowMs() - WINDOW_MS;
    const read = await Promise.all(KINDS.map(({ event }) => store.listAuditEvents({ event, since, limit: READ_PER_KIND + 1 })));
    const rows = new Map<string | null, AddressRow>();
    read.forEach((events, kind) => {
      for (const event of events.slice(0, READ_PER_KIND)) {
        const row = rows.get(event.address) ?? { address: event.address, counts: KINDS.map(() => 0), lastMs: 0 };
        row.counts[kind]! += refusals(event);
        row.lastMs = Math.max(row.lastMs, event.occurredAt);
        rows.set(event.address, row);
      }
    });
    const cut = KINDS.filter((_, kind) => read[kind]!.length > READ_PER_KIND).map(({ heading }) => heading.toLowerCase());
    const sorted = [...rows.values()].sort((a, b) => b.lastMs - a.lastMs);
    const table = recordTable({
      caption: 'Refusals by address bucket over the last 24 hours, most recent first',
      columns: ['Address', ...KINDS.map(({ heading }) => heading), 'Last'],
      rows: sorted.map((row) => [addressCell(view, row.address), ...row.counts.map((count) => html`${count}`), shownInstant(row.lastMs)]),
      empty: 'No failed or refused sign-ins, user codes or rate-limited requests in the last 24 hours.',
    });
    return html`<p class="muted">From the stored audit events of the last 24 hours. An IPv6 address counts by its /64, as the throttle and the rate limits count it.</p>
${cut.length > 0 ? html`<p class="notice" role="status">Only the latest ${READ_PER_KIND} events of each kind were read, and there were more of these: ${cut.join(', ')}. Older ones in the window are not counted.</p>` : ''}
${table}
${waitingNow(view)}`;
  },
};

/** An address links to its events; events that carried none (a limit for all addresses, an unknown peer) are one row. */
function addressCell(view: AdminView, address: string | null): SafeHtml {
  if (address === null) return html`<span class="muted">no address</span>`;
  return html`<a href="${view.href('activity', { address })}"><code class="nowrap">${address}</code></a>`;
}

/** The sign-in throttle's current waits, as this process keeps them (in memory). */
function waitingNow(view: AdminView): SafeHtml {
  const waiting = view.ctx.signInThrottle.waiting(view.ctx.nowMs(), WAITING_SHOWN);
  const table = recordTable({
    caption: 'Accounts and addresses whose next sign-in must wait',
    columns: ['Kind', 'Account or address', 'Wait'],
    rows: waiting.map(({ key, seconds }) => {
      const [kind, ...rest] = key.split(':');
      return [html`${kind}`, html`<code>${rest.join(':')}</code>`, html`${seconds} s`];
    }),
    empty: 'No account or address is waiting now.',
  });
  return html`<h2>Waiting now</h2>
<p class="muted">As this server process counts them (each process throttles on its own); the longest waits first, at most ${WAITING_SHOWN}.</p>
${table}`;
}
