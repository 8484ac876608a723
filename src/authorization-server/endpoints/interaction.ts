import { OAuthError } from '../../core/errors.js';
import { safeEqual } from '../../core/secrets.js';
import { refuseDuplicatedCookies } from '../browser-cookies.js';
import type { InteractionServices } from '../interaction/state.js';
import { readPageForm } from '../http/page-form.js';
import { submitUpstreamChoice } from '../interaction/choose-upstream.js';
import { notSignedIn, showConsent, submitConsent } from '../interaction/consent.js';
import { showSignIn, submitSignIn } from '../interaction/sign-in.js';
import { interactionState, isStepName, type InteractionState, type Step, type StepName, type StepPage } from '../interaction/state.js';
import { showUpstreamConsent, submitUpstreamConsent } from '../interaction/upstream-consent.js';
import { expiredInteraction, loadInteraction } from '../interactions.js';
import type { EndpointRequest } from '../http/request.js';
import type { Answer } from '../http/responses.js';

/*
 * Errors here and in the steps are thrown and shown as a page (http/errors.ts); only a denial goes
 * back to the client. The person reading the page needs what to do next, so each error carries that sentence.
 */

/** The page each state shows. */
const pages: Record<InteractionState, StepPage> = {
  'sign-in': (ctx, interaction) => showSignIn(ctx, interaction),
  'upstream-consent': showUpstreamConsent,
  consent: showConsent,
};

/**
 * The steps each state takes: the sign-in page's two from the start, and a consent once there is a
 * consent page (a provider chosen, or someone signed in here). Both consent states keep the sign-in
 * page's steps, which a form left open in another tab, or kept by the Back button, still posts.
 */
const steps: Record<InteractionState, Partial<Record<StepName, Step>>> = {
  'sign-in': { login: submitSignIn, upstream: submitUpstreamChoice },
  'upstream-consent': { login: submitSignIn, upstream: submitUpstreamChoice, consent: submitUpstreamConsent },
  consent: { login: submitSignIn, upstream: submitUpstreamChoice, consent: submitConsent },
};

/** GET /interaction/:id: the sign-in page, or a consent page once a provider is chosen or someone signed in. */
export async function interactionPage(ctx: InteractionServices, request: EndpointRequest, id: string): Promise<Answer> {
  refuseDuplicatedCookies(ctx, request);
  const interaction = await loadInteraction(ctx, request, id);
  if (!interaction) throw expiredInteraction();
  return pages[interactionState(ctx, interaction)](ctx, interaction, request);
}

/** POST /interaction/:id: a sign-in, a provider chosen or a consent decision, CSRF-checked and bound to this browser. */
export async function interactionSubmit(ctx: InteractionServices, request: EndpointRequest, id: string): Promise<Answer> {
  // The form first: a post from another site, or with a cookie sent twice, is refused as such.
  const form = readPageForm(ctx, request);
  const interaction = await loadInteraction(ctx, request, id);
  if (!interaction) throw expiredInteraction();
  if (!safeEqual(form.get('csrf') ?? '', interaction.csrfToken)) {
    throw new OAuthError('invalid_request', 'the csrf token does not match the interaction', 403).withUserMessage(
      'The form could not be verified. Reload the page and try again.',
    );
  }
  const name = form.get('step');
  if (!isStepName(name)) throw new OAuthError('invalid_request', 'step must be login, upstream or consent').withUserMessage('Unexpected form.');
  const step = steps[interactionState(ctx, interaction)][name];
  // Only consent is ever missing (in the sign-in state): there is nobody yet whose consent it would be.
  if (!step) throw notSignedIn();
  return step(ctx, request, interaction, form);
}
