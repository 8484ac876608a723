import type { StoreAdministration } from '../store/store.js';
import type { ServerContext } from './context.js';
import { clientOrigin } from './interaction/page-parts.js';
import type { ApprovedApplication } from './pages/account.js';

/**
 * A person's consents, one entry per application (a client may have been approved for several
 * servers), with what the consent page showed of each: the account page and the admin console
 * list them the same way.
 */
export async function approvedApplications(ctx: ServerContext, admin: Pick<StoreAdministration, 'listConsents'>, userId: string): Promise<ApprovedApplication[]> {
  const consents = await admin.listConsents({ userId });
  const byClient = new Map<string, ApprovedApplication>();
  for (const consent of consents) {
    let app = byClient.get(consent.clientId);
    if (!app) {
      const client = await ctx.store.getClient(consent.clientId);
      app = {
        clientId: consent.clientId,
        clientName: client?.clientName ?? consent.clientId,
        ...(client ? clientOrigin(client) : {}),
        lastUsedAt: client?.lastUsedAt ?? null,
        access: [],
      };
      byClient.set(consent.clientId, app);
    }
    app.access.push({ resource: consent.resource, scopes: consent.scope, approvedAt: consent.createdAt });
  }
  return [...byClient.values()];
}
