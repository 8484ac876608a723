import { OAuthError } from '../../core/errors.js';
import { hashSecret, randomToken } from '../../core/secrets.js';
import { isSubset } from '../../core/scopes.js';
import type { AuthorizationRequest } from '../../core/protocol.js';
import type { SessionRecord } from '../../store/store.js';
import {
  authorizationParams,
  authorizationResponseUrl,
  resolveRedirectTarget,
  validateAuthorizationRequest,
  type RedirectTarget,
} from '../checks/authorization-request.js';
import type { ServerContext } from '../context.js';
import { createAuthorizationCode } from '../grants/authorization-code.js';
import { readText } from '../http/params.js';
import { toOAuthError } from '../http/responses.js';
import { toResponse } from '../pages/layout.js';
import { errorPage } from '../pages/error.js';
import { browserBinding, currentSession } from '../sessions.js';

/** 303 to a URL, with optional cookies: the shape of every browser hop here. */
export function seeOther(location: string, cookies: string[] = []): Response {
  const headers = new Headers({ Location: location, 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' });
  for (const cookie of cookies) headers.append('Set-Cookie', cookie);
  return new Response(null, { status: 303, headers });
}

export function errorRedirect(ctx: ServerContext, target: Pick<RedirectTarget, 'redirectUri' | 'state'>, error: OAuthError): Response {
  return seeOther(
    authorizationResponseUrl(target.redirectUri, { error: error.code, error_description: error.message, state: target.state }, ctx.config.issuer),
  );
}

/** Issues the code and sends the browser back to the client (RFC 9207: with `iss`). */
export async function completeAuthorization(ctx: ServerContext, request: AuthorizationRequest, session: SessionRecord, cookies: string[] = []): Promise<Response> {
  const code = await createAuthorizationCode(ctx, request, session.userId, session.authTime);
  ctx.config.log({ event: 'code_issued', client_id: request.clientId, resource: request.resource });
  return seeOther(authorizationResponseUrl(request.redirectUri, { code, state: request.state }, ctx.config.issuer), cookies);
}

/** True when the user already agreed to these scopes for this client and resource. */
export async function consentCovers(ctx: ServerContext, userId: string, request: AuthorizationRequest): Promise<boolean> {
  const consent = await ctx.config.store.getConsent(userId, request.clientId, request.resource);
  return consent !== undefined && isSubset(request.scope, consent.scope);
}

/**
 * GET or POST /authorize (OAuth 2.1 §4.1.1). First the redirect URI must be trusted (until then
 * errors are shown as a page); then the request is validated (errors go back to the client);
 * then the user signs in and consents on our pages, unless a session and a remembered consent
 * already cover the request.
 */
export async function authorizeEndpoint(ctx: ServerContext, request: Request): Promise<Response> {
  let entries: Iterable<[string, string]>;
  if (request.method === 'POST') {
    const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded') {
      return toResponse(errorPage(400, 'invalid_request', 'The authorization request must be a form post.'));
    }
    entries = new URLSearchParams(await readText(request, ctx.config.maxBodyBytes));
  } else {
    entries = new URL(request.url).searchParams;
  }
  const parsed = authorizationParams(entries);

  let target: RedirectTarget;
  try {
    target = await resolveRedirectTarget(parsed, ctx.config.store);
  } catch (error) {
    const oauth = toOAuthError(error, ctx.config.log);
    return toResponse(errorPage(oauth.status >= 500 ? oauth.status : 400, oauth.code, oauth.message));
  }

  let authorization: AuthorizationRequest;
  try {
    authorization = validateAuthorizationRequest(parsed, target, ctx.config);
  } catch (error) {
    return errorRedirect(ctx, target, toOAuthError(error, ctx.config.log));
  }

  const session = authorization.prompt.includes('login') ? undefined : await currentSession(ctx, request);
  const noPrompt = authorization.prompt.includes('none');
  if (session && !authorization.prompt.includes('consent') && (await consentCovers(ctx, session.userId, authorization))) {
    return completeAuthorization(ctx, authorization, session);
  }
  if (noPrompt) {
    const code = session ? 'consent_required' : 'login_required';
    return errorRedirect(ctx, target, new OAuthError(code, session ? 'the user has not consented yet' : 'the user is not signed in'));
  }

  const now = ctx.config.now();
  const binding = browserBinding(ctx, request);
  const interactionId = randomToken(24);
  await ctx.config.store.createInteraction({
    id: interactionId,
    clientId: authorization.clientId,
    request: authorization,
    browserBindingHash: hashSecret(binding.value),
    csrfToken: randomToken(24),
    userId: session?.userId ?? null,
    createdAt: now,
    expiresAt: now + ctx.config.interactionTtl,
  });
  return seeOther(`${ctx.config.basePath}/interaction/${interactionId}`, binding.cookie ? [binding.cookie] : []);
}
