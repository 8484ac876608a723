import type { SessionRecord } from '../../store/store.js';
import type { AdminServices } from './section.js';
import { formToken, isFormToken } from '../form-tokens.js';
import type { AdminAction } from './section.js';

/*
 * What the console says once after a change (`?done=<action>`): the action's sentence, naming what
 * it acted on (`what`) only when `sig` vouches for it: a MAC of the server's over the
 * administrator's session, the action and that name. A link anyone else made shows at most the
 * action's fixed sentence, never their text.
 */

/** A name longer than this is cut: it is shown, not used. */
const MAX_WHAT = 300;

/** The query that makes the page after a change say what was done, to what. */
export async function noticeQuery(ctx: AdminServices, session: SessionRecord, action: AdminAction, what: string): Promise<Record<string, string>> {
  const shown = what.slice(0, MAX_WHAT);
  return { done: action.name, what: shown, sig: await formToken(ctx, 'admin', { session }, bound(action, shown)) };
}

/** The sentence for `?done=`: naming its object when this session's MAC vouches for it, else the action's fixed sentence. */
export async function noticeOf(
  ctx: AdminServices,
  session: SessionRecord,
  actions: readonly AdminAction[],
  query: URLSearchParams,
): Promise<string | undefined> {
  const action = actions.find((candidate) => candidate.name === query.get('done'));
  if (!action) return undefined;
  const what = query.get('what');
  const sig = query.get('sig');
  const vouched = what !== null && sig !== null && what.length <= MAX_WHAT && (await isFormToken(ctx, 'admin', { session }, sig, bound(action, what)));
  return action.done(ctx, vouched ? what : undefined);
}

const bound = (action: AdminAction, what: string): string => `notice\n${action.name}\n${what}`;
