import type { Env, Hono, MiddlewareHandler } from 'hono';
import { DEFAULT_MAX_BODY_BYTES, bodyTooLargeResponse, limitRequestBody } from '../body-limit.js';
import { nodeHeader, nodeRequestBehind } from '../../node/request.js';
import { denialResponse, type ProtectedResource } from '../guard.js';
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
    const authorization = authorizationOf(c.req.raw, incoming);
    const result = protection.checkKnown?.(authorization, options.requiredScopes) ?? (await protection.check(authorization, options.requiredScopes));
    if (!result.ok) return denialResponse(result);
    const limited = limitRequestBody(c.req.raw, maxBytes, incoming);
    if (limited === null) return bodyTooLargeResponse(maxBytes);
    c.req.raw = limited;
    c.set('auth', result.auth);
    await next();
  };
}

/**
 * The Authorization header. Under @hono/node-server, read from the Node request's raw headers:
 * asking the lazy Web Request for its headers would build the whole Request (tens of µs, and the
 * body then goes through web streams). Sent twice, the values are joined as the Web Request joins
 * them (a malformed header, as before), whereas Node's own `headers` would keep only the first.
 */
function authorizationOf(request: Request, incoming: unknown): string | null {
  const node = nodeRequestBehind(request, incoming);
  return node ? nodeHeader(node, 'authorization') : request.headers.get('authorization');
}

/** Serves the protected resource metadata at its well-known paths. Generic so an app typed with AuthVariables fits too. */
export function honoProtectedResourceMetadata<E extends Env>(app: Hono<E>, protection: ProtectedResource): void {
  for (const path of protection.metadataPaths) app.get(path, () => protection.metadataResponse());
}
