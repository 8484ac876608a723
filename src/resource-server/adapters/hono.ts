import type { Env, Hono, MiddlewareHandler } from 'hono';
import type { ProtectedResource } from '../guard.js';
import type { VerifiedToken } from '../types.js';

export type AuthVariables = { auth: VerifiedToken };

/** Hono middleware: denies with the right status and challenge, or sets `c.get('auth')` and goes on. */
export function honoBearerAuth(protection: ProtectedResource, options: { requiredScopes?: string[] } = {}): MiddlewareHandler<{ Variables: AuthVariables }> {
  return async (c, next) => {
    const result = await protection.authenticate(c.req.raw, options.requiredScopes);
    if (!result.ok) return result.response;
    c.set('auth', result.auth);
    await next();
  };
}

/** Serves the protected resource metadata at its well-known paths. Generic so an app typed with AuthVariables fits too. */
export function honoProtectedResourceMetadata<E extends Env>(app: Hono<E>, protection: ProtectedResource): void {
  for (const path of protection.metadataPaths) app.get(path, () => protection.metadataResponse());
}
