import { addressBucket } from '../../core/client-address.js';
import { hashSecret, randomToken } from '../../core/secrets.js';
import type { SessionRecord } from '../../store/store.js';
import { readCookie } from '../browser-cookies.js';
import type { InteractionServices } from '../interaction/state.js';
import { DEVICE_VERIFICATION_PATH, normalizeUserCode, sealUserCode, userCodeHash } from '../device-codes.js';
import { deviceAuthorizations } from '../device-store.js';
import { formToken, isFormToken, refusedFormToken, type FormHolder } from '../form-tokens.js';
import { readPageForm } from '../http/page-form.js';
import { seeOther, type Answer } from '../http/responses.js';
import { deviceCodePage } from '../pages/device.js';
import { pageAnswer } from '../pages/layout.js';
import { browserBinding, currentSession } from '../sessions.js';
import { SignInThrottle } from '../sign-in-throttle.js';
import type { EndpointRequest } from '../http/request.js';

/*
 * The device verification page (RFC 8628 §3.3). A person enters the code their device shows; the
 * right code starts an interaction bound to this browser, as /authorize does, and the usual
 * sign-in follows, then a consent page that says a device is asking. A link's code is only filled
 * in: nothing is approved without the person submitting it and then approving.
 */

/** A user code attempt counts against the address, as a sign-in does; attempts from no known address count together. */
/** The address as the throttle counts it (an IPv6 address's /64), for the log; never the whole address. */
const addressField = (ctx: InteractionServices, request: EndpointRequest): { address?: string } => {
  const address = request.clientAddress;
  return address === undefined ? {} : { address: addressBucket(address) };
};

const throttleKeys = (ctx: InteractionServices, request: EndpointRequest): string[] => {
  const keys = SignInThrottle.addressKeys(request.clientAddress);
  return keys.length > 0 ? keys : ['address:unknown'];
};

/** What an upstream sign-in that failed sends back here (as `error`), said to the person. */
const UPSTREAM_FAILED = 'The sign-in did not complete. Enter the code again to try once more.';

/**
 * Whom the code form's token is for (form-tokens.ts): the session signed in here, else this
 * browser. The code starts an interaction for this browser and, when someone is signed in, for them.
 */
const holderOf = (session: SessionRecord | undefined, binding: string): FormHolder => (session ? { session } : { binding });

/** GET /device: the code form, filled in from `user_code` when the device's link carried it. */
export async function devicePage(ctx: InteractionServices, request: EndpointRequest): Promise<Answer> {
  const url = request.url;
  const binding = browserBinding(ctx, request);
  const session = await currentSession(ctx, request);
  const typed = url.searchParams.get('user_code') ?? undefined;
  const page = deviceCodePage({
    action: `${ctx.config.basePath}${DEVICE_VERIFICATION_PATH}`,
    csrfToken: await formToken(ctx, 'device', holderOf(session, binding.value)),
    ...(typed !== undefined ? { userCode: typed.slice(0, 20) } : {}),
    ...(url.searchParams.has('error') ? { error: UPSTREAM_FAILED } : {}),
  });
  return pageAnswer(page, binding.cookie ? { 'Set-Cookie': binding.cookie } : {});
}

/** POST /device: checks the code (throttled per address), then starts the interaction for its device authorization. */
export async function deviceSubmit(ctx: InteractionServices, request: EndpointRequest): Promise<Answer> {
  const form = readPageForm(ctx, request);
  // The interaction it starts is this browser's: no binding, no form.
  const binding = readCookie(ctx, request, 'browser');
  if (!binding) throw refusedFormToken();
  const session = await currentSession(ctx, request);
  const holder = holderOf(session, binding);
  if (!(await isFormToken(ctx, 'device', holder, form.get('csrf') ?? ''))) throw refusedFormToken();
  const action = `${ctx.config.basePath}${DEVICE_VERIFICATION_PATH}`;
  const typed = (form.get('user_code') ?? '').slice(0, 20);
  const csrfToken = await formToken(ctx, 'device', holder);
  const again = (error: string, status: number, headers: Record<string, string> = {}) =>
    pageAnswer(deviceCodePage({ action, csrfToken, userCode: typed, error, status }), headers);

  const attempt = ctx.signInThrottle.begin(throttleKeys(ctx, request), ctx.nowMs());
  if (typeof attempt === 'number') {
    ctx.log({ event: 'user_code_throttled', ...addressField(ctx, request) });
    return again(`Too many wrong codes from this address. Try again in ${attempt} second${attempt === 1 ? '' : 's'}.`, 429, { 'Retry-After': String(attempt) });
  }
  const now = ctx.now();
  const code = normalizeUserCode(typed);
  let device;
  try {
    device = code ? await deviceAuthorizations(ctx.store).findPendingDeviceAuthorization(userCodeHash(code), now) : undefined;
  } catch (error) {
    attempt.abandoned();
    throw error;
  }
  if (!code || !device) {
    attempt.failed(ctx.nowMs());
    ctx.log({ event: 'user_code_wrong', ...addressField(ctx, request) });
    return again('That code is wrong, expired or already used. Check the code your device shows and type it again.', 400);
  }
  attempt.succeeded();

  const interactionId = randomToken(24);
  await ctx.store.createInteraction({
    id: interactionId,
    clientId: device.clientId,
    // What the pages and the consent read of a request: the device's client, scope and resource.
    // No redirect and no PKCE: the device's decision is taken by the device consent, never sent anywhere.
    request: {
      clientId: device.clientId,
      redirectUri: `${ctx.config.issuer}${DEVICE_VERIFICATION_PATH}`,
      redirectUriProvided: false,
      state: null,
      scope: device.scope,
      resource: device.resource,
      codeChallenge: '',
      codeChallengeMethod: 'S256',
      // A device is always confirmed, even with a remembered consent: the person compares the code.
      prompt: ['consent'],
    },
    browserBindingHash: hashSecret(binding),
    csrfToken: randomToken(24),
    userId: session?.userId ?? null,
    createdAt: now,
    expiresAt: Math.min(now + ctx.config.interactionTtl, device.expiresAt),
    upstream: null,
    device: { deviceCodeHash: device.deviceCodeHash, sealedUserCode: sealUserCode(code, binding, interactionId) },
  });
  ctx.log({ event: 'user_code_accepted', client_id: device.clientId });
  return seeOther(`${ctx.config.basePath}/interaction/${interactionId}`);
}
