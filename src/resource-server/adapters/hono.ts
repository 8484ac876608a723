import type { Env, Hono, MiddlewareHandler } from 'hono';
import { DEFAULT_MAX_BODY_BYTES, bodyTooLargeResponse, limitRequestBody } from '../body-limit.js';
import { nodeHeader, untouchedNodeRequestOf } from '../../node/request.js';
import { denialResponse, type GuardRequest, type ProtectedResource } from '../guard.js';
import type { VerifiedToken } from '../types.js';

export type AuthVariables = { auth: VerifiedToken };

/**
 * Hono middleware: denies with the right status and challenge, or sets `c.get('auth')` and goes
 * on, with the request body capped at `maxBodyBytes` (default 1 MiB): a larger declared body is
 * 413 at once, a longer stream fails when the handler reads past the cap.
 */
export function honoBearerAuth(
  protection: ProtectedResource,
  options: { requiredScopes?: string[]; maxBodyBytes?: number } = {},
): MiddlewareHandler<{ Variables: AuthVariables }> {
  const maxBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  return async (c, next) => {
    const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
    const request = guardRequestOf(c.req.raw, incoming, c);
    const result = protection.checkKnown?.(request, options.requiredScopes) ?? (await protection.check(request, options.requiredScopes));
    if (!result.ok) return denialResponse(result);
    const limited = limitRequestBody(c.req.raw, maxBytes, incoming);
    if (limited === null) return bodyTooLargeResponse(maxBytes);
    c.req.raw = limited;
    c.set('auth', result.auth);
    await next();
    if (result.headers) for (const [name, value] of Object.entries(result.headers)) c.header(name, value);
  };
}

/**
 * What the guard reads of the request. On @hono/node-server (the authorization server's listener
 * or any other), while the Web Request is still the adapter's untouched one, the headers come from
 * the Node request beside it (node/request.ts): asking the lazy Web Request for its headers would
 * build a Headers object of every header. Sent twice, a header's values are joined as the Web
 * Request joins them (a malformed header, as before), whereas Node's own `headers` would keep only
 * the first. The context stands for the request, the same in every middleware on its way, so a
 * second guard (a step-up) knows the proof the first one took.
 */
function guardRequestOf(request: Request, incoming: unknown, context: object): GuardRequest {
  const node = untouchedNodeRequestOf(request, incoming);
  const header = (name: string) => (node ? nodeHeader(node, name) : request.headers.get(name));
  return { authorization: header('authorization'), dpop: header('dpop'), method: request.method, target: request.url, request: context };
}

/** Serves the protected resource metadata at its well-known paths. Generic so an app typed with AuthVariables fits too. */
export function honoProtectedResourceMetadata<E extends Env>(app: Hono<E>, protection: ProtectedResource): void {
  for (const path of protection.metadataPaths) app.get(path, () => protection.metadataResponse());
}
