import { hasAdministration } from '../store/capabilities.js';
import type { Store } from '../store/store.js';

/**
 * Whether the store has no users at all: why every password sign-in fails on a server nobody was
 * added to yet. Asked only after a sign-in named an unknown user; a store seen with users is not
 * listed again for a minute, so a run of failed guesses does not list the users each time. Only a
 * store an operator administers here lists its users; of another, nothing is said.
 */
const RECHECK_MS = 60_000;
const usersSeenAt = new WeakMap<Store, number>();

export async function hasNoUsers(store: Store, nowMs: number): Promise<boolean> {
  if (!hasAdministration(store)) return false;
  const seen = usersSeenAt.get(store);
  if (seen !== undefined && nowMs >= seen && nowMs - seen < RECHECK_MS) return false;
  const none = (await store.listUsers()).length === 0;
  if (none) usersSeenAt.delete(store);
  else usersSeenAt.set(store, nowMs);
  return none;
}
