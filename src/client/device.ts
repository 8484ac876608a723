/**
 * The OAuth 2.0 Device Authorization Grant (RFC 8628), client side: ask the authorization server
 * for a code, hand it to the person (who signs in on any other device), and poll the token endpoint
 * until they have finished, refused, or the code expired.
 */
import * as oauth from 'oauth4webapi';
import { DEVICE_CODE_GRANT_TYPE } from '../core/protocol.js';
import { ClientError, signInStopped } from './errors.js';
import { assertSecureUrl } from './http.js';
import { requestOptions, tokenError, tokenRequest, withBodyError, type DpopTokenBinding } from './oauth-requests.js';

export const DEVICE_CODE_GRANT = DEVICE_CODE_GRANT_TYPE;

/** RFC 8628 §3.2: the polling interval when the server names none. */
const DEFAULT_INTERVAL_SECONDS = 5;
/** RFC 8628 §3.5: what slow_down adds to the interval, for this and every later poll. */
const SLOW_DOWN_SECONDS = 5;

/** What the person needs to sign in: where to go, and the code to type there. */
export interface DeviceCodeInfo {
  /** The code to type, as the server formats it (e.g. WDJB-MJHT). */
  userCode: string;
  /** The page to open on any device. */
  verificationUri: string;
  /** The same page with the code filled in, when the server offers one (e.g. for a QR code). */
  verificationUriComplete?: string;
  /** Seconds the code stays valid. */
  expiresIn: number;
}

/** Waits `ms` milliseconds, rejecting with the signal's reason when it is aborted first. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** setTimeout's longest delay: a longer one would fire at once. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

export const realSleep: Sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.min(ms, LONGEST_TIMER_MS),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });

export interface DeviceFlowContext {
  as: oauth.AuthorizationServer;
  client: oauth.Client;
  auth: oauth.ClientAuth;
  fetch: typeof fetch;
  /** Seconds since the epoch. */
  now: () => number;
  sleep: Sleep;
  signal?: AbortSignal;
  /** The new grant's DPoP key: each poll proves it, as every token request does. */
  dpop?: DpopTokenBinding;
}

const stopped = signInStopped;

/** The authorization server's device authorization endpoint; a clear error when its metadata names none. */
export function deviceAuthorizationEndpoint(as: oauth.AuthorizationServer): string {
  const endpoint = as.device_authorization_endpoint;
  if (typeof endpoint !== 'string' || endpoint === '') {
    throw new ClientError(
      'discovery_failed',
      `${as.issuer} offers no device sign-in (its metadata has no device_authorization_endpoint): sign in with the browser instead`,
    );
  }
  assertSecureUrl(endpoint, 'the device authorization endpoint');
  return endpoint;
}

/** A device code for `scope` and `resource`, sent as the authorization code flow sends them. */
export async function requestDeviceCode(
  context: DeviceFlowContext,
  parameters: { scope?: string; resource?: string },
): Promise<oauth.DeviceAuthorizationResponse> {
  const endpoint = deviceAuthorizationEndpoint(context.as);
  const body: Record<string, string> = {
    ...(parameters.scope ? { scope: parameters.scope } : {}),
    ...(parameters.resource ? { resource: parameters.resource } : {}),
  };
  let answer: oauth.DeviceAuthorizationResponse;
  try {
    const response = await oauth.deviceAuthorizationRequest(context.as, context.client, context.auth, body, {
      ...requestOptions(context.fetch, endpoint),
      ...signalOption(context.signal),
    });
    answer = await oauth.processDeviceAuthorizationResponse(context.as, context.client, await withBodyError(response));
  } catch (error) {
    if (context.signal?.aborted) throw stopped();
    throw new ClientError('authorization_failed', tokenError(error, 'the device authorization request failed').message, { cause: error });
  }
  // The person is sent to these pages: only web pages, and https unless on this machine.
  assertSecureUrl(answer.verification_uri, 'the verification URI');
  if (answer.verification_uri_complete !== undefined) assertSecureUrl(answer.verification_uri_complete, 'the verification URI');
  return answer;
}

/** The part of a device authorization answer to show the person. */
export function deviceCodeInfo(answer: oauth.DeviceAuthorizationResponse): DeviceCodeInfo {
  return {
    userCode: answer.user_code,
    verificationUri: answer.verification_uri,
    ...(answer.verification_uri_complete ? { verificationUriComplete: answer.verification_uri_complete } : {}),
    expiresIn: answer.expires_in,
  };
}

/**
 * Polls the token endpoint for the device code (RFC 8628 §3.4–3.5): one request per interval,
 * authorization_pending keeps waiting, slow_down lengthens the interval by 5 seconds for good, and
 * a refusal, an expired code or the code's own expiry ends it with an error. No request is sent
 * once the code has expired or the signal aborted.
 */
export async function pollForTokens(
  context: DeviceFlowContext,
  answer: oauth.DeviceAuthorizationResponse,
  issuedAt: number,
  resource: string | undefined,
): Promise<oauth.TokenEndpointResponse> {
  const expiresAt = issuedAt + answer.expires_in;
  let interval = typeof answer.interval === 'number' && answer.interval > 0 ? answer.interval : DEFAULT_INTERVAL_SECONDS;
  const endpoint = context.as.token_endpoint ?? context.as.issuer;
  for (;;) {
    try {
      // Never past the code's expiry: an interval longer than what is left ends the wait there.
      await context.sleep(Math.min(interval, Math.max(0, expiresAt - context.now())) * 1000, context.signal);
    } catch {
      throw stopped();
    }
    if (context.signal?.aborted) throw stopped();
    if (context.now() >= expiresAt) throw expired();
    try {
      const response = await tokenRequest(context.fetch, endpoint, context.dpop, resource ? { resource } : undefined, (options) =>
        oauth.deviceCodeGrantRequest(context.as, context.client, context.auth, answer.device_code, { ...options, ...signalOption(context.signal) }),
      );
      return await oauth.processDeviceCodeResponse(context.as, context.client, response);
    } catch (error) {
      if (context.signal?.aborted) throw stopped();
      if (!(error instanceof oauth.ResponseBodyError)) throw tokenError(error, 'the device code grant failed');
      const detail = error.error_description ? ` (${error.error_description})` : '';
      switch (error.error) {
        case 'authorization_pending':
          continue;
        case 'slow_down':
          interval += SLOW_DOWN_SECONDS;
          continue;
        case 'access_denied':
          throw new ClientError('authorization_failed', `the sign-in was refused (access_denied${detail})`, { cause: error });
        case 'expired_token':
          throw expired(error);
        default:
          throw tokenError(error, 'the device code grant failed');
      }
    }
  }
}

function expired(cause?: unknown): ClientError {
  return new ClientError(
    'authorization_timeout',
    'the code expired before the sign-in was finished; log in again for a new code',
    cause === undefined ? undefined : { cause },
  );
}

function signalOption(signal: AbortSignal | undefined): { signal?: AbortSignal } {
  return signal ? { signal } : {};
}
