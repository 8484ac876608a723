import { hasAdministration } from '../store/capabilities.js';
import type { ServerContext } from './context.js';

/** The account page: a person's approved applications, each revocable, and signing out. */
export const ACCOUNT_PATH = '/account';

/** Where the consent pages send a person to revoke later; none where the store cannot list consents (no account page then). */
export function accountPath(ctx: ServerContext): string | undefined {
  return hasAdministration(ctx.store) ? `${ctx.config.basePath}${ACCOUNT_PATH}` : undefined;
}
