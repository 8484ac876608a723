import type { TrustedRedirect } from '../core/errors.js';
import type { AuthorizationRequest } from '../core/protocol.js';
import type { SessionRecord } from '../store/store.js';
import type { RedirectTarget } from './checks/authorization-request.js';
import type { BaseServices } from './services.js';
import { createAuthorizationCode } from './authorization-codes.js';
import { seeOther, type Answer } from './http/responses.js';

/**
 * What goes back to the client at the end of an authorization request: the code, or an error once
 * the redirect URI is trusted. Used by /authorize (a session and consent already cover the request)
 * and by the interaction pages (after login or consent), so neither endpoint imports the other.
 */

/** Where an authorization response goes: the redirect URI with our parameters added (RFC 9207 `iss` always). */
export function authorizationResponseUrl(redirectUri: string, values: Record<string, string | null | undefined>, issuer: string): string {
  const url = new URL(redirectUri);
  for (const [key, value] of Object.entries(values)) {
    if (value !== null && value !== undefined) url.searchParams.set(key, value);
  }
  url.searchParams.set('iss', issuer);
  return url.toString();
}

/**
 * The redirect an error may take, for `OAuthError.redirectTo`. It takes only the two shapes whose
 * redirect URI was matched against the client's registration: a resolved target, or a validated request.
 */
export function trustedRedirect(target: RedirectTarget | AuthorizationRequest, issuer: string): TrustedRedirect {
  return { uri: target.redirectUri, state: target.state, iss: issuer };
}

/** Issues the code; returns the URL that takes it back to the client (RFC 9207: with `iss`). */
export async function codeRedirect(ctx: BaseServices, request: AuthorizationRequest, session: SessionRecord): Promise<string> {
  const code = await createAuthorizationCode(ctx, request, session.userId, session.authTime, session.upstreamSessionId);
  ctx.log({ event: 'code_issued', client_id: request.clientId, resource: request.resource });
  return authorizationResponseUrl(request.redirectUri, { code, state: request.state }, ctx.config.issuer);
}

/** Issues the code and sends the browser back to the client. */
export async function completeAuthorization(ctx: BaseServices, request: AuthorizationRequest, session: SessionRecord, cookies: string[] = []): Promise<Answer> {
  return seeOther(await codeRedirect(ctx, request, session), cookies);
}
