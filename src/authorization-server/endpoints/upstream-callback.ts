import type { ServerContext } from '../context.js';
import { finishUpstreamSignIn } from '../upstream/sign-in.js';

/**
 * GET <issuer>/upstream/callback: where upstream providers send the person back (the URL an
 * operator registers at each provider). Served only when upstream sign-in is configured.
 */
export function upstreamCallbackEndpoint(ctx: ServerContext, request: Request): Promise<Response> {
  return finishUpstreamSignIn(ctx, request);
}
