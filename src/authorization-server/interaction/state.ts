import type { InteractionRecord } from '../../store/store.js';
import type { SignInThrottle } from '../sign-in-throttle.js';
import type { BrowserServices } from '../services.js';
import type { UpstreamServices } from '../upstream/upstream-sign-in.js';
import type { Params } from '../http/params.js';
import type { EndpointRequest } from '../http/request.js';
import type { Answer } from '../http/responses.js';

/**
 * Where an interaction stands, read from its record: nobody signed in yet (`sign-in`); a provider
 * chosen, whose consent page comes before anything goes upstream (`upstream-consent`); or signed in
 * here, the consent page next (`consent`). The page shown and the steps a post may take follow from it.
 */
export type InteractionState = 'sign-in' | 'upstream-consent' | 'consent';

/** What the interaction's pages and steps use: the pages' services, upstream sign-in, and the sign-in throttle of the password form. */
export type InteractionServices = BrowserServices & UpstreamServices & { signInThrottle: SignInThrottle };

export function interactionState(ctx: UpstreamServices, interaction: InteractionRecord): InteractionState {
  if (interaction.userId !== null) return 'consent';
  // A provider chosen on a server that no longer offers upstream sign-in: the sign-in page again.
  return interaction.upstream && ctx.upstream ? 'upstream-consent' : 'sign-in';
}

/** The `step` a page's form posts: the password form, a provider's button, a consent decision. */
export const STEP_NAMES = ['login', 'upstream', 'consent'] as const;
export type StepName = (typeof STEP_NAMES)[number];

export function isStepName(value: string | undefined): value is StepName {
  return (STEP_NAMES as readonly (string | undefined)[]).includes(value);
}

/** A state's page (GET). */
export type StepPage = (ctx: InteractionServices, interaction: InteractionRecord, request: EndpointRequest) => Promise<Answer>;

/** A posted step, once the interaction was found for this browser and the form's csrf token checked. */
export type Step = (ctx: InteractionServices, request: EndpointRequest, interaction: InteractionRecord, form: Params) => Promise<Answer>;
