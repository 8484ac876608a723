import type { ConsentRecord, FullStore } from '../store/store.js';

/** The consents people gave, for one user (by username), one client, or all; refused when the user does not exist. */
export async function listConsents(
  store: Pick<FullStore, 'getUser' | 'listConsents'>,
  filter: { username?: string; clientId?: string } = {},
): Promise<{ consents: ConsentRecord[] } | { refused: string }> {
  const user = filter.username === undefined ? undefined : await store.getUser({ username: filter.username });
  if (filter.username !== undefined && !user) return { refused: `There is no user named ${filter.username}.` };
  return { consents: await store.listConsents({ ...(user ? { userId: user.id } : {}), ...(filter.clientId ? { clientId: filter.clientId } : {}) }) };
}
