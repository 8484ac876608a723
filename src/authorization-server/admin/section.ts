import type { Store, StoreAdministration, StoreConsole, UserRecord } from '../../store/store.js';
import type { Revocations } from '../revocations.js';
import type { BrowserServices } from '../services.js';
import type { SignInThrottle } from '../sign-in-throttle.js';
import type { UpstreamServices } from '../upstream/upstream-sign-in.js';
import type { Params } from '../http/params.js';
import type { SafeHtml } from '../pages/html.js';

/** The store as the console uses it: it exists only where the store can administer and page. */
export type ConsoleStore = Store & StoreAdministration & StoreConsole;

/** What the console uses: the pages' services, upstream sign-in (who is an administrator), and what its actions change: revocations, the sign-in throttle. */
export type AdminServices = BrowserServices & UpstreamServices & { revocations: Revocations; signInThrottle: SignInThrottle };

/** What a console page is rendered with. */
export interface AdminView {
  ctx: AdminServices;
  store: ConsoleStore;
  /** The administrator looking. */
  admin: UserRecord;
  /** The page's query (`?q=`, `?after=`, filters); read only through its own checks. */
  query: URLSearchParams;
  /** The console's form target (POST) and this browser's anti-CSRF token, for the page's forms. */
  action: string;
  csrfToken: string;
  /** Every page of the console, in the navigation's order. */
  sections: readonly AdminSection[];
  /** The URL of a console page, by section name, with a query. */
  href(section: string, query?: Record<string, string | undefined>): string;
}

/** A page of the console: its address under /admin, its title, what it shows. */
export interface AdminSection {
  /** The path segment after /admin/ ('' for the overview). Lowercase letters and dashes. */
  name: string;
  title: string;
  /** One line for the overview: what the page is for. */
  summary: string;
  /** Whether this store can back the page (an optional capability); without it the page is not offered. Absent: always. */
  needs?(store: ConsoleStore): boolean;
  render(view: AdminView): Promise<SafeHtml>;
}

/** The console's pages this store can back, in the navigation's order. */
export function sectionsFor(sections: readonly AdminSection[], store: ConsoleStore): AdminSection[] {
  return sections.filter((section) => section.needs?.(store) ?? true);
}

/** Where an action's result is shown (a section's name and query), and what it acted on. */
export interface AdminActionResult {
  section: string;
  query?: Record<string, string | undefined>;
  /** For the audit event: what was acted on (an id or a name, never a secret). */
  target?: string;
  /** What was acted on, as the notice after it names it ("alice", "Notes (c-1) for alice"). */
  subject: string;
}

/**
 * A change made from the console. It runs the same code as the CLI verb that makes it, and only
 * after the console checked the CSRF token, that the person is an administrator and that their
 * sign-in is recent. A bad form is an OAuthError with a user message.
 */
export interface AdminAction {
  /** The form's `action` value. */
  name: string;
  /** The form fields it reads (beside `csrf`, `action` and `return`): what a confirmation or a re-authentication carries. */
  fields: readonly string[];
  /** The change, named before it is made, from its form ("Remove the person alice"): plain text. */
  describe(view: Omit<AdminView, 'query' | 'sections'>, form: Params): Promise<string>;
  /** Set for a change to be confirmed first: what it does, said on the confirmation, and its button's word. */
  confirm?: { consequence: string; button: string };
  /** The sentence shown once after it succeeded, naming what it acted on when that is vouched for. */
  done(ctx: AdminServices, subject: string | undefined): string;
  run(view: Omit<AdminView, 'query' | 'sections'>, form: Params): Promise<AdminActionResult>;
}
