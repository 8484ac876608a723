import { hasAuditEvents } from '../../store/capabilities.js';
import type { AuditEventRecord, AuditEventStore, Store } from '../../store/store.js';
import { AUDIT_EVENTS } from '../audit.js';
import { recordTable } from '../pages/admin/layout.js';
import { detailsText, eventPager, shownInstant } from '../pages/admin/events.js';
import { html, type SafeHtml } from '../pages/html.js';
import { activityFilters, filterQuery, type ActivityFilters } from './activity-query.js';
import type { AdminSection, AdminView, ConsoleStore } from './section.js';

/** Events a page. */
const PAGE_SIZE = 100;
const EVENT_NAMES = Object.keys(AUDIT_EVENTS).sort();

/** The store's audit events: the page exists only where it has them (`needs`). */
export function auditEventsOf(store: ConsoleStore): Store & AuditEventStore {
  if (!hasAuditEvents(store)) throw new Error('this console page needs a store with audit events');
  return store;
}

/** Recent audit events, newest first, filtered by event, outcome, person, client and address. */
export const ACTIVITY: AdminSection = {
  name: 'activity',
  title: 'Activity',
  summary: 'Recent audit events, newest first, by event, outcome, person, client or address.',
  needs: (store) => hasAuditEvents(store),
  async render(view) {
    const store = auditEventsOf(view.store);
    const filters = activityFilters(view.query);
    const form = filterForm(view, filters);
    let userId: string | undefined;
    if (filters.person !== undefined) {
      userId = (await store.getUser({ username: filters.person }))?.id;
      // An unknown username would match nothing: say so rather than show an empty list.
      if (userId === undefined)
        return html`${form}<p class="error" role="alert">Nobody has the username “${filters.person}”. Check the spelling, or filter by client or address instead.</p>`;
    }
    const events = await store.listAuditEvents({
      limit: PAGE_SIZE + 1,
      ...(filters.before !== undefined ? { beforeSeq: filters.before } : {}),
      ...(filters.event ? { event: filters.event } : {}),
      ...(filters.outcome ? { outcome: filters.outcome } : {}),
      ...(userId !== undefined ? { userId } : {}),
      ...(filters.client ? { clientId: filters.client } : {}),
      ...(filters.address ? { address: filters.address } : {}),
    });
    const shown = events.slice(0, PAGE_SIZE);
    const people = await usernames(store, shown);
    const last = shown.at(-1)?.seq;
    const table = recordTable({
      caption: 'Audit events, newest first',
      columns: ['Time', 'Event', 'Outcome', 'Person', 'Client', 'Address', 'Reason', 'Details'],
      rows: shown.map((event) => [
        shownInstant(event.occurredAt),
        html`<code class="nowrap">${event.event}</code>`,
        html`${event.outcome}`,
        event.userId === null ? html`` : html`${people.get(event.userId) ?? event.userId}`,
        event.clientId === null ? html`` : html`<code class="wide">${event.clientId}</code>`,
        event.address === null ? html`` : html`<code class="nowrap">${event.address}</code>`,
        html`${event.reason ?? ''}`,
        event.details === null ? html`` : html`<code class="wide">${detailsText(event.details)}</code>`,
      ]),
      empty: filters.before === undefined ? 'No events match.' : 'No older events match.',
    });
    const pager = eventPager({
      newest: filters.before === undefined ? null : view.href('activity', filterQuery(filters)),
      older: events.length > PAGE_SIZE && last !== undefined ? view.href('activity', { ...filterQuery(filters), before: String(last) }) : null,
    });
    return html`${form}${table}${pager}`;
  },
};

/** The username of each person the events name who still exists. */
async function usernames(store: Store, events: AuditEventRecord[]): Promise<Map<string, string>> {
  const ids = [...new Set(events.flatMap((event) => (event.userId === null ? [] : [event.userId])))];
  const users = await Promise.all(ids.map((id) => store.getUser({ id })));
  return new Map(users.flatMap((user) => (user ? [[user.id, user.username] as const] : [])));
}

function filterForm(view: AdminView, filters: ActivityFilters): SafeHtml {
  const option = (value: string, label: string, selected: boolean) => html`<option value="${value}"${selected ? html` selected` : ''}>${label}</option>`;
  const field = (name: string, label: string, value: string | undefined) =>
    html`<div class="field"><label for="f-${name}">${label}</label><input id="f-${name}" name="${name}" type="text" value="${value ?? ''}" autocomplete="off" spellcheck="false"></div>`;
  return html`<form method="get" action="${view.href('activity')}" class="filters" role="search" aria-label="Filter events">
<div class="field"><label for="f-event">Event</label><select id="f-event" name="event">
${option('any', 'any', filters.event === undefined)}
${EVENT_NAMES.map((name) => option(name, name, filters.event === name))}
</select></div>
<div class="field"><label for="f-outcome">Outcome</label><select id="f-outcome" name="outcome">
${option('any', 'any', filters.outcome === undefined)}${option('success', 'success', filters.outcome === 'success')}${option('failure', 'failure', filters.outcome === 'failure')}
</select></div>
${field('person', 'Person (username)', filters.person)}
${field('client', 'Client ID', filters.client)}
${field('address', 'Address bucket', filters.address)}
<div class="field"><button type="submit">Filter</button></div>
</form>`;
}
