import { OAuthError } from '../core/errors.js';
import { hashSecret, safeEqual } from '../core/secrets.js';
import { isStorableText } from '../core/storable-text.js';
import type { InteractionRecord } from '../store/store.js';
import type { BaseServices } from './services.js';
import { readCookie } from './browser-cookies.js';
import type { EndpointRequest } from './http/request.js';

/*
 * A pending authorization request between /authorize and the code: the sign-in and consent pages
 * and the upstream callback all reach it, always through the browser that started it.
 */

export function expiredInteraction(): OAuthError {
  return new OAuthError('invalid_request', 'the interaction is unknown, expired, finished or bound to another browser').withUserMessage(
    'This sign-in page has expired or was opened in another browser. Go back to the application and start again.',
  );
}

/**
 * The interaction, if it exists, is unexpired and belongs to this browser: the cookie set at our
 * /authorize must come back. A link someone else made (to a page, or to the upstream callback)
 * therefore never completes in a victim's browser.
 */
export async function loadInteraction(ctx: BaseServices, request: EndpointRequest, id: string): Promise<InteractionRecord | undefined> {
  // An id from the URL: one no store can look up (a NUL) is simply unknown.
  if (!isStorableText(id)) return undefined;
  const interaction = await ctx.store.getInteraction(id, ctx.now());
  const binding = readCookie(ctx, request, 'browser');
  if (!interaction || !binding || !safeEqual(hashSecret(binding), interaction.browserBindingHash)) return undefined;
  return interaction;
}
