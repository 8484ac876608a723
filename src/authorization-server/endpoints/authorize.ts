import { OAuthError } from '../../core/errors.js';
import { hashSecret, randomToken } from '../../core/secrets.js';
import type { AuthorizationRequest } from '../../core/protocol.js';
import { completeAuthorization, trustedRedirect } from '../authorization-response.js';
import { authorizationParams, resolveRedirectTarget, validateAuthorizationRequest } from '../checks/authorization-request.js';
import { consentCovers } from '../consent.js';
import { clientLookup } from '../clients.js';
import type { InteractionServices } from '../interaction/state.js';
import type { ClientLookupServices, ClientUse } from '../clients.js';
import { toOAuthError } from '../http/errors.js';
import { formFields } from '../http/params.js';
import type { EndpointRequest } from '../http/request.js';
import { seeOther, type Answer } from '../http/responses.js';
import { browserBinding, currentSession } from '../sessions.js';

/**
 * GET or POST /authorize (OAuth 2.1 §4.1.1). First the redirect URI must be trusted (until then
 * errors are thrown plain, and shown as a page); then the request is validated (errors carry the
 * trusted redirect, and go back to the client); then the user signs in and consents on our pages,
 * unless a session and a remembered consent already cover the request.
 */
export async function authorizeEndpoint(ctx: InteractionServices & ClientLookupServices & { clientUse: ClientUse }, request: EndpointRequest): Promise<Answer> {
  const entries: Iterable<[string, string]> =
    request.method === 'POST' ? formFields(request, ctx.config.maxBodyBytes, 'The authorization request must be a form post.') : request.url.searchParams;
  const parsed = authorizationParams(entries);

  const target = await resolveRedirectTarget(parsed, clientLookup(ctx, request), ctx.config.redirectUriRules);
  await ctx.clientUse.note(ctx.store, target.client.clientId, ctx.now());
  const back = trustedRedirect(target, ctx.config.issuer);

  let authorization: AuthorizationRequest;
  try {
    authorization = validateAuthorizationRequest(parsed, target, ctx.config);
  } catch (error) {
    throw toOAuthError(error, ctx.log).redirectTo(back);
  }

  const session = authorization.prompt.includes('login') ? undefined : await currentSession(ctx, request);
  const noPrompt = authorization.prompt.includes('none');
  if (session && !authorization.prompt.includes('consent') && (await consentCovers(ctx, session.userId, authorization))) {
    return completeAuthorization(ctx, authorization, session);
  }
  if (noPrompt) {
    const code = session ? 'consent_required' : 'login_required';
    throw new OAuthError(code, session ? 'the user has not consented yet' : 'the user is not signed in').redirectTo(back);
  }

  const now = ctx.now();
  const binding = browserBinding(ctx, request);
  const interactionId = randomToken(24);
  await ctx.store.createInteraction({
    id: interactionId,
    clientId: authorization.clientId,
    request: authorization,
    browserBindingHash: hashSecret(binding.value),
    csrfToken: randomToken(24),
    userId: session?.userId ?? null,
    createdAt: now,
    expiresAt: now + ctx.config.interactionTtl,
    upstream: null,
  });
  return seeOther(`${ctx.config.basePath}/interaction/${interactionId}`, binding.cookie ? [binding.cookie] : []);
}
