import { OAuthError } from '../../core/errors.js';
import { html, type SafeHtml } from '../pages/html.js';
import { pager, searchForm } from '../pages/admin/layout.js';
import type { Params } from '../http/params.js';
import type { AdminView } from './section.js';

/*
 * A console listing a page at a time: `?q=` narrows it, `?after=` is the key of the last record on
 * the page before (keyset paging: every page costs the same on a store of 100,000 records, and
 * nothing loads them all).
 */

export const PAGE_SIZE = 50;
const MAX_SEARCH = 200;
const MAX_KEY = 2048;

export interface PageRequest {
  after?: string;
  search?: string;
}

/** The page the query asks for; a search or page key too long to be one is refused, not cut. */
export function pageRequest(query: URLSearchParams): PageRequest {
  const search = (query.get('q') ?? '').trim();
  const after = query.get('after') ?? '';
  if (search.length > MAX_SEARCH) {
    throw new OAuthError('invalid_request', 'the search is too long').withUserMessage(`A search has at most ${MAX_SEARCH} characters.`);
  }
  if (after.length > MAX_KEY)
    throw new OAuthError('invalid_request', 'the page key is too long').withUserMessage('That page link is not valid. Start from the first page.');
  return { ...(after ? { after } : {}), ...(search ? { search } : {}) };
}

/** One more record than shown is asked for: it tells whether there is a next page. */
export const pageLimit = PAGE_SIZE + 1;

/** The records to show, and the key the next page starts after (null on the last page). */
export function pageOf<T>(records: T[], keyOf: (record: T) => string): { shown: T[]; nextAfter: string | null } {
  const shown = records.slice(0, PAGE_SIZE);
  return { shown, nextAfter: records.length > PAGE_SIZE ? keyOf(shown[shown.length - 1]!) : null };
}

/** The search box above a listing and the First page / Next page links below it, the search kept. */
export function listingControls(
  view: AdminView,
  section: string,
  request: PageRequest,
  nextAfter: string | null,
  label: string,
): { search: SafeHtml; pages: SafeHtml } {
  return {
    search: searchForm({ action: view.href(section), label, value: request.search ?? '' }),
    pages: pager({
      first: request.after ? view.href(section, { q: request.search }) : null,
      next: nextAfter ? view.href(section, { q: request.search, after: nextAfter }) : null,
    }),
  };
}

/** What an empty listing says: none at all, or none matching the search. */
export function emptyListing(request: PageRequest, what: string): string {
  if (request.search) return `No ${what} match “${request.search}”.`;
  return request.after ? `No more ${what}.` : `No ${what} yet.`;
}

/** A short form field the action needs, or the error page saying it is missing. */
export function requiredField(form: Params, name: string, max = MAX_KEY): string {
  const value = form.get(name) ?? '';
  if (value === '' || value.length > max) throw new OAuthError('invalid_request', `${name} is missing or too long`).withUserMessage('Unexpected form.');
  return value;
}

export const muted = (text: string): SafeHtml => html`<span class="muted">${text}</span>`;
