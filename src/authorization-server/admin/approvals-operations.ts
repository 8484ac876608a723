import type { Store, StoreAdministration, UserRecord } from '../../store/store.js';

/** What revoking a person's approval did: how many consents it removed, or why there was nothing to remove (a sentence for the operator). */
export type ApprovalRevocation = { user: UserRecord; revoked: number } | { refused: string };

/**
 * Forgets a person's consents to a client and revokes the grants they produced (refresh tokens stop
 * at once; the revocations are recorded for access tokens): what `context-auth consents revoke`
 * and the console's Revoke button both run, with the same checks and the same sentences.
 */
export async function revokeApproval(
  store: Pick<Store, 'getUser' | 'getClient'> & Pick<StoreAdministration, 'revokeConsents'>,
  username: string,
  clientId: string,
  now: number,
): Promise<ApprovalRevocation> {
  if (!username) return { refused: 'Say whose approval to revoke (a username).' };
  if (!clientId) return { refused: 'Say which application to revoke (a client ID).' };
  const user = await store.getUser({ username });
  if (!user) return { refused: `There is no user named ${username}.` };
  const revoked = await store.revokeConsents(user.id, clientId, now);
  if (revoked > 0) return { user, revoked };
  // Nothing removed: say whether the client is unknown or simply not approved by this person.
  if (!(await store.getClient(clientId))) return { refused: `There is no client ${clientId}.` };
  return { refused: `${username} has not approved ${clientId}: there is nothing to revoke.` };
}
