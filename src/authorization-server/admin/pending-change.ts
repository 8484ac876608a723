import type { SigningKeys } from '../keys.js';
import { formToken, isFormToken } from '../form-tokens.js';
import type { Params } from '../http/params.js';
import type { AdminAction } from './section.js';

/*
 * A console change waiting for a re-authentication: the action and the fields its form posted.
 * The re-authentication's forms carry it as hidden fields (posted with the session's form token,
 * so only our own page could have put it there); a sign-in at a provider brings it back in the
 * URL of the console page it returns to, with a MAC bound to this browser, where the
 * administrator confirms it.
 */
export interface PendingChange {
  action: string;
  fields: Record<string, string>;
}

/** Hidden fields of the re-authentication forms carry the change under these names. */
const ACTION_FIELD = 'then';
const FIELD_PREFIX = 'then.';

/** The change a form asks for: the action and the fields it reads (nothing else of the form). */
export function changeOf(action: AdminAction, form: Params): PendingChange {
  const fields: Record<string, string> = {};
  for (const name of action.fields) {
    const value = form.get(name);
    if (value !== undefined) fields[name] = value;
  }
  return { action: action.name, fields };
}

/** The change as a form of its own, for running it: its fields under their own names. */
export function formOf(change: PendingChange): Params {
  return new Map(Object.entries(change.fields));
}

/** The hidden fields that carry the change through a re-authentication's forms. */
export function pendingFields(change: PendingChange): Record<string, string> {
  return { [ACTION_FIELD]: change.action, ...Object.fromEntries(Object.entries(change.fields).map(([name, value]) => [FIELD_PREFIX + name, value])) };
}

/** The change a re-authentication form carries, if it carries one of `actions` (only that action's fields are read). */
export function pendingOf(form: Params, actions: readonly AdminAction[]): { action: AdminAction; change: PendingChange } | undefined {
  const action = actions.find((candidate) => candidate.name === form.get(ACTION_FIELD));
  if (!action) return undefined;
  const fields = new Map([...form].filter(([name]) => name.startsWith(FIELD_PREFIX)).map(([name, value]) => [name.slice(FIELD_PREFIX.length), value]));
  return { action, change: changeOf(action, fields) };
}

/**
 * The change as the query of the console page a provider's sign-in returns to, vouched for by a
 * MAC bound to this browser and to the administrator who asked for it.
 */
export async function pendingQuery(ctx: { keys: SigningKeys }, binding: string, userId: string, change: PendingChange): Promise<Record<string, string>> {
  const json = JSON.stringify(change);
  return { confirm: Buffer.from(json).toString('base64url'), sig: await formToken(ctx, 'admin', { binding }, bound(userId, json)) };
}

/** The change in a page's query, if the MAC vouches for it for this browser and this administrator, and it names one of `actions`. */
export async function pendingFromQuery(
  ctx: { keys: SigningKeys },
  binding: string,
  userId: string,
  query: URLSearchParams,
  actions: readonly AdminAction[],
): Promise<{ action: AdminAction; change: PendingChange } | undefined> {
  const encoded = query.get('confirm');
  const sig = query.get('sig');
  if (encoded === null || sig === null || encoded.length > 4000) return undefined;
  const json = Buffer.from(encoded, 'base64url').toString();
  if (!(await isFormToken(ctx, 'admin', { binding }, sig, bound(userId, json)))) return undefined;
  const change = JSON.parse(json) as PendingChange;
  const action = actions.find((candidate) => candidate.name === change.action);
  return action ? { action, change: changeOf(action, formOf(change)) } : undefined;
}

const bound = (userId: string, json: string): string => `pending\n${userId}\n${json}`;
