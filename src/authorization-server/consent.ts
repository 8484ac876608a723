import { isSubset } from '../core/scopes.js';
import type { AuthorizationRequest } from '../core/protocol.js';
import type { BaseServices } from './services.js';

/**
 * The user's remembered consent, per client and resource. /authorize and the interaction pages
 * both ask whether it covers a request, so it lives here, below both.
 */

/** True when the user already agreed to these scopes for this client and resource. */
export async function consentCovers(ctx: BaseServices, userId: string, request: AuthorizationRequest): Promise<boolean> {
  const consent = await ctx.store.getConsent(userId, request.clientId, request.resource);
  return consent !== undefined && isSubset(request.scope, consent.scope);
}

/** Remembers that the user approved this request's scopes for its client and resource. */
export async function rememberConsent(ctx: BaseServices, userId: string, request: AuthorizationRequest): Promise<void> {
  const now = ctx.now();
  await ctx.store.saveConsent({
    userId,
    clientId: request.clientId,
    resource: request.resource,
    scope: request.scope,
    createdAt: now,
    updatedAt: now,
  });
}
