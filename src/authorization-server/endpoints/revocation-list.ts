import { OAuthError } from '../../core/errors.js';
import { authenticateClient, type ClientAuthenticationServices } from '../checks/authenticate-client.js';
import { readForm } from '../http/params.js';
import { json, type Answer } from '../http/responses.js';
import { revocationList } from '../revocation-list.js';
import type { RevocationFeedStore } from '../../store/store.js';
import type { EndpointRequest } from '../http/request.js';

/**
 * POST /revocations: revoked grants and access tokens since `cursor`, for resource servers that
 * poll instead of introspecting every request. Only for the clients an operator trusts to
 * introspect any token (`clients add --introspect`): the list names grants of every client.
 * Served only from a store with a revocation feed (`feed`, the store itself).
 */
export async function revocationListEndpoint(ctx: ClientAuthenticationServices, request: EndpointRequest, feed: RevocationFeedStore): Promise<Answer> {
  const params = readForm(request, ctx.config.maxBodyBytes);
  const caller = await authenticateClient(ctx, request, params);
  if (caller.tokenEndpointAuthMethod === 'none') {
    throw new OAuthError('invalid_client', 'the revocation list requires a confidential client', 401);
  }
  if (!caller.canIntrospect) {
    throw new OAuthError('unauthorized_client', 'this client may not read the revocation list (an operator allows it with clients add --introspect)', 403);
  }
  return json(await revocationList(feed, params.get('cursor'), ctx.now()));
}
