import type { Env, Hono, MiddlewareHandler } from 'hono';
import { DEFAULT_MAX_BODY_BYTES, bodyTooLargeResponse, limitRequestBody } from '../body-limit.js';
import type { ProtectedResource } from '../guard.js';
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
    const result = await protection.authenticate(c.req.raw, options.requiredScopes);
    if (!result.ok) return result.response;
    const limited = limitRequestBody(c.req.raw, maxBytes, (c.env as { incoming?: unknown } | undefined)?.incoming);
    if (limited === null) return bodyTooLargeResponse(maxBytes);
    c.req.raw = limited;
    c.set('auth', result.auth);
    await next();
  };
}

/** Serves the protected resource metadata at its well-known paths. Generic so an app typed with AuthVariables fits too. */
export function honoProtectedResourceMetadata<E extends Env>(app: Hono<E>, protection: ProtectedResource): void {
  for (const path of protection.metadataPaths) app.get(path, () => protection.metadataResponse());
}
