import { ACCOUNT_PATH } from '../account-link.js';
import { adminReturnUrl } from '../admin/address.js';
import { pendingQuery } from '../admin/pending-change.js';
import { readCookie, refuseDuplicatedCookies } from '../browser-cookies.js';
import type { BrowserServices } from '../services.js';
import type { UpstreamServices } from '../upstream/upstream-sign-in.js';
import { seeOther, withCookies, type Answer } from '../http/responses.js';
import { pageAnswer } from '../pages/layout.js';
import { expiredInteraction, loadInteraction } from '../interactions.js';
import { stateHandle } from '../upstream/flow.js';
import { finishPageSignIn, type PageSignInTarget } from '../upstream/page-sign-in.js';
import { finishUpstreamSignIn } from '../upstream/sign-in.js';
import type { EndpointRequest } from '../http/request.js';

/**
 * GET <issuer>/upstream/callback: where upstream providers send the person back (the URL an
 * operator registers at each provider). Served only when upstream sign-in is configured.
 * A `state` led by an interaction's id belongs to an authorization request, which must be this
 * browser's; any other to a sign-in begun on the account page or the admin console, which this
 * browser's cookie must have kept. The rest of the callback (state in full, iss, code or error) is
 * checked by the sign-in against what it sent upstream.
 */
export async function upstreamCallbackEndpoint(ctx: BrowserServices & UpstreamServices, request: EndpointRequest): Promise<Answer> {
  refuseDuplicatedCookies(ctx, request);
  const callback = request.url;
  const handle = stateHandle(callback);
  if (handle === null) {
    const { target, cookies } = await finishPageSignIn(ctx, request, callback);
    return seeOther(await returnUrl(ctx, request, target), cookies);
  }
  const interaction = await loadInteraction(ctx, request, handle);
  // No interaction of this browser: an old or forged link, or one opened elsewhere. No code, and
  // nowhere trusted to send the browser.
  if (!interaction) throw expiredInteraction();
  const result = await finishUpstreamSignIn(ctx, interaction, callback);
  if ('page' in result) {
    return withCookies(pageAnswer(result.page), result.cookies);
  }
  return seeOther(result.redirectTo, result.cookies);
}

/**
 * Our own page the sign-in was begun at: built here from the closed list, never taken from the
 * request. A console re-authentication's waiting change comes along, vouched for by a MAC bound to
 * this browser and this administrator, for the page to ask them to confirm it.
 */
async function returnUrl(ctx: BrowserServices & UpstreamServices, request: EndpointRequest, target: PageSignInTarget): Promise<string> {
  if (target.page !== 'admin') return `${ctx.config.basePath}${ACCOUNT_PATH}`;
  const page = adminReturnUrl(ctx, target.section);
  const binding = readCookie(ctx, request, 'browser');
  if (!target.then || !target.reauth || !binding) return page;
  return `${page}?${new URLSearchParams(await pendingQuery(ctx, binding, target.reauth.userId, target.then))}`;
}
