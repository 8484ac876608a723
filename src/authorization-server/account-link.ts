import { hasAdministration, hasSignOut } from '../store/capabilities.js';
import type { SignOutStore, Store, StoreAdministration } from '../store/store.js';
import type { BaseServices } from './services.js';

/** The account page: a person's approved applications, each revocable, and signing out. */
export const ACCOUNT_PATH = '/account';

/** Whether the account page is served: the store lists and revokes consents, and ends a session. */
export const servesAccountPage = (store: Store): store is Store & StoreAdministration & SignOutStore => hasAdministration(store) && hasSignOut(store);

/** Where the consent pages send a person to revoke later; none where the store cannot serve the account page. */
export function accountPath(ctx: BaseServices): string | undefined {
  return servesAccountPage(ctx.store) ? `${ctx.config.basePath}${ACCOUNT_PATH}` : undefined;
}
