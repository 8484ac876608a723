import { OAuthError } from '../../core/errors.js';
import { AUDIT_EVENTS, type AuditEventName, type AuditOutcome } from '../audit.js';

/** What the activity page is asked to show: each filter given, and the page (events before `before`). */
export interface ActivityFilters {
  event?: AuditEventName;
  outcome?: AuditOutcome;
  /** A username, as typed. */
  person?: string;
  client?: string;
  /** An address bucket, as the events carry it. */
  address?: string;
  /** Only events older than this one (its seq): the next page. */
  before?: number;
}

/** Longest text filter accepted: a client ID may be a URL, nothing legitimate is longer. */
const MAX_TEXT = 500;

function refuse(description: string, message: string): OAuthError {
  return new OAuthError('invalid_request', description, 400).withUserMessage(message);
}

/** One value of the query, undefined when absent or empty; twice is a malformed link, not a choice. */
function single(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  if (values.length > 1) throw refuse(`${name} is given more than once`, `The filter "${name}" is given more than once. Choose one value.`);
  const value = values[0]?.trim() ?? '';
  return value === '' ? undefined : value;
}

/** A list's choice: "any" is no filter. */
function choice(query: URLSearchParams, name: string): string | undefined {
  const value = single(query, name);
  return value === 'any' ? undefined : value;
}

/** Typed text: taken as it is ("any" may be someone's username). */
function text(query: URLSearchParams, name: string): string | undefined {
  const value = single(query, name);
  if (value !== undefined && value.length > MAX_TEXT) throw refuse(`${name} is too long`, `The filter "${name}" is longer than ${MAX_TEXT} characters.`);
  return value;
}

const isEventName = (name: string): name is AuditEventName => Object.hasOwn(AUDIT_EVENTS, name);

/** The activity page's query, every value checked: a bad one is a 400 that says which. */
export function activityFilters(query: URLSearchParams): ActivityFilters {
  const filters: ActivityFilters = {};
  const event = choice(query, 'event');
  if (event !== undefined) {
    if (!isEventName(event)) throw refuse('unknown event name', `There is no event named "${event.slice(0, 100)}". Choose one from the list.`);
    filters.event = event;
  }
  const outcome = choice(query, 'outcome');
  if (outcome !== undefined) {
    if (outcome !== 'success' && outcome !== 'failure') throw refuse('unknown outcome', 'The outcome is either success or failure.');
    filters.outcome = outcome;
  }
  const before = single(query, 'before');
  if (before !== undefined) {
    const seq = /^[1-9]\d{0,15}$/.test(before) ? Number(before) : NaN;
    if (!Number.isSafeInteger(seq)) throw refuse('before is not an event number', 'The page link is malformed: start again from the newest events.');
    filters.before = seq;
  }
  const person = text(query, 'person');
  const client = text(query, 'client');
  const address = text(query, 'address');
  return { ...filters, ...(person ? { person } : {}), ...(client ? { client } : {}), ...(address ? { address } : {}) };
}

/** The filters as a query again (for the next page's link), `before` left out. */
export function filterQuery(filters: ActivityFilters): Record<string, string | undefined> {
  return { event: filters.event, outcome: filters.outcome, person: filters.person, client: filters.client, address: filters.address };
}
