import { OAuthError } from '../../core/errors.js';
import { safeEqual } from '../../core/secrets.js';
import type { ServerContext } from '../context.js';
import { readText, singleValued, type Params } from '../http/params.js';
import { submitUpstreamChoice } from '../interaction/choose-upstream.js';
import { notSignedIn, showConsent, submitConsent } from '../interaction/consent.js';
import { showSignIn, submitSignIn } from '../interaction/sign-in.js';
import { interactionState, isStepName, type InteractionState, type Step, type StepName, type StepPage } from '../interaction/state.js';
import { showUpstreamConsent, submitUpstreamConsent } from '../interaction/upstream-consent.js';
import { expiredInteraction, loadInteraction } from '../interactions.js';

/*
 * Errors here and in the steps are thrown and shown as a page (http/errors.ts); only a denial goes
 * back to the client. The person reading the page needs what to do next, so each error carries that sentence.
 */

/** The page each state shows. */
const pages: Record<InteractionState, StepPage> = {
  'sign-in': showSignIn,
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

/**
 * The posted form. A person submitted our own form, so whatever is wrong with the body (too
 * large, not UTF-8, a repeated field) is one 400 page saying what; no program reads the status.
 */
async function readInteractionForm(request: Request, maxBytes: number): Promise<Params> {
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new OAuthError('invalid_request', 'the form must be application/x-www-form-urlencoded').withUserMessage('Unexpected form encoding.');
  }
  try {
    return singleValued(new URLSearchParams(await readText(request, maxBytes)));
  } catch (error) {
    if (error instanceof OAuthError) throw new OAuthError('invalid_request', error.description);
    throw new OAuthError('invalid_request', 'the form body could not be read').withUserMessage('Malformed form.');
  }
}

/** GET /interaction/:id: the sign-in page, or a consent page once a provider is chosen or someone signed in. */
export async function interactionPage(ctx: ServerContext, request: Request, id: string): Promise<Response> {
  const interaction = await loadInteraction(ctx, request, id);
  if (!interaction) throw expiredInteraction();
  return pages[interactionState(ctx, interaction)](ctx, interaction);
}

/** POST /interaction/:id: a sign-in, a provider chosen or a consent decision, CSRF-checked and bound to this browser. */
export async function interactionSubmit(ctx: ServerContext, request: Request, id: string): Promise<Response> {
  const interaction = await loadInteraction(ctx, request, id);
  if (!interaction) throw expiredInteraction();
  const form = await readInteractionForm(request, ctx.config.maxBodyBytes);
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
