import type { ServerContext } from '../context.js';
import { seeOther } from '../http/responses.js';
import { toResponse } from '../pages/layout.js';
import { expiredInteraction, loadInteraction } from '../interactions.js';
import { stateHandle } from '../upstream/flow.js';
import { finishUpstreamSignIn } from '../upstream/sign-in.js';

/**
 * GET <issuer>/upstream/callback: where upstream providers send the person back (the URL an
 * operator registers at each provider). Served only when upstream sign-in is configured.
 * The `state` leads to the interaction, which must be this browser's; the rest of the callback
 * (state in full, iss, code or error) is checked by the sign-in against what it sent upstream.
 */
export async function upstreamCallbackEndpoint(ctx: ServerContext, request: Request): Promise<Response> {
  const callback = new URL(request.url);
  const handle = stateHandle(callback);
  const interaction = handle ? await loadInteraction(ctx, request, handle) : undefined;
  // No interaction of this browser: an old or forged link, or one opened elsewhere. No code, and
  // nowhere trusted to send the browser.
  if (!interaction) throw expiredInteraction();
  const result = await finishUpstreamSignIn(ctx, interaction, callback);
  if ('page' in result) {
    const response = toResponse(result.page);
    for (const cookie of result.cookies) response.headers.append('Set-Cookie', cookie);
    return response;
  }
  return seeOther(result.redirectTo, result.cookies);
}
