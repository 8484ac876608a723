/**
 * Upstream sign-in outside any authorization request: at the account page and the admin console.
 * The same flow as an interaction's (state, PKCE and nonce, the same callback and checks), but
 * what it must remember until the callback has no interaction to live in: it is kept sealed in a
 * short-lived cookie, bound to this browser's binding cookie, and holds where the person returns
 * to — one of a closed list of our own pages, never a URL the request named.
 */
import { OAuthError } from '../../core/errors.js';
import { hashSecret, safeEqual } from '../../core/secrets.js';
import type { BaseServices } from '../services.js';
import type { UpstreamServices } from './upstream-sign-in.js';
import { cookieHeader, readCookie } from '../browser-cookies.js';
import { beginUpstream, type PendingUpstream } from './flow.js';
import { logFailure, signInFailure, signInUpstream, upstreamConfig, type SignInLogFields, type UpstreamSignedIn } from './sign-in.js';
import type { EndpointRequest } from '../http/request.js';

/**
 * Where the person returns after signing in: the account page, or a page of the admin console (a
 * section's name, checked again on return), with, for a re-authentication, the change waiting
 * for it (an action's name and fields, confirmed there).
 */
export type PageSignInTarget =
  { page: 'account' } | { page: 'admin'; section: string; reauth?: { userId: string }; then?: { action: string; fields: Record<string, string> } };

/** What the cookie keeps between sending the person upstream and the callback. */
interface PendingPageSignIn {
  pending: PendingUpstream;
  target: PageSignInTarget;
  /** Seconds since the epoch. */
  startedAt: number;
}

/** How long a person has at the provider before the sign-in must be started again. */
const PAGE_SIGN_IN_TTL = 600;

/** The configured providers, for a page's buttons, and the origins its form may lead to (its CSP form-action). */
export async function offeredProviders(
  ctx: BaseServices & UpstreamServices,
): Promise<{ providers: Array<{ id: string; name: string }>; formTargets: string[] }> {
  if (!ctx.upstream) return { providers: [], formTargets: [] };
  const providers = ctx.upstream.providers.list();
  // A provider that cannot be discovered now still gets its button: choosing it says why it fails.
  const resolved = await Promise.allSettled(providers.map((p) => ctx.upstream!.providers.get(p.id)));
  const origins = resolved.flatMap((r) => (r.status === 'fulfilled' && r.value.ok ? [new URL(r.value.value.as.authorization_endpoint!).origin] : []));
  return { providers, formTargets: [...new Set(origins)] };
}

/**
 * The person chose `provider` on one of our pages: the provider's URL to send them to, and the
 * cookie that keeps what the callback is checked against. A console re-authentication asks the
 * provider for a new login.
 */
export async function beginPageSignIn(
  ctx: BaseServices & UpstreamServices,
  binding: string,
  provider: string,
  target: PageSignInTarget,
): Promise<{ url: URL; cookie: string }> {
  const upstream = upstreamConfig(ctx);
  if (!upstream.providers.has(provider)) {
    throw new OAuthError('invalid_request', `no upstream provider ${provider}`).withUserMessage(
      'That sign-in provider is not offered here. Go back and choose another.',
    );
  }
  const now = ctx.now();
  const logFields = logFieldsOf(target);
  const up = await upstream.providers.get(provider);
  if (!up.ok) throw signInFailure(ctx, provider, logFields, up.defect);
  // No interaction handle in the state: the callback finds this sign-in by the cookie instead.
  const { url, pending } = await beginUpstream(up.value, upstream.callbackUrl, '', target.page === 'admin' && target.reauth ? { freshSince: now } : {});
  const kept: PendingPageSignIn = { pending, target, startedAt: now };
  const sealed = upstream.secretBox.seal(JSON.stringify(kept), ownerOf(binding));
  ctx.log({ event: 'upstream_redirect', provider, ...logFields });
  return { url, cookie: cookieHeader(ctx, 'upstream', sealed, PAGE_SIGN_IN_TTL) };
}

/**
 * The callback of a sign-in begun on one of our pages: it must come back to the browser that began
 * it, with the state sent, in time. Signs the person in; says where they return, and the cookies to set.
 */
export async function finishPageSignIn(
  ctx: BaseServices & UpstreamServices,
  request: EndpointRequest,
  callback: URL,
): Promise<{ target: PageSignInTarget; signedIn: UpstreamSignedIn; cookies: string[] }> {
  const kept = keptSignIn(ctx, request, callback);
  if (!kept) throw expiredPageSignIn();
  const { pending, target } = kept;
  // Used once: the cookie goes, whatever the outcome.
  const cleared = cookieHeader(ctx, 'upstream', '', 0);
  const logFields = logFieldsOf(target);
  const reauth = target.page === 'admin' ? target.reauth : undefined;
  // There is no client to send an error to: the person reads it on our error page.
  const signedIn = await signInUpstream(ctx, pending, callback, logFields, reauth ? { sameUser: reauth.userId } : {}).catch((error: unknown) => {
    logFailure(ctx, pending.providerId, logFields, error);
    throw error instanceof OAuthError ? error : new OAuthError('server_error', 'the sign-in could not be completed');
  });
  if (!signedIn.ok) throw signInFailure(ctx, pending.providerId, logFields, signedIn.defect);
  return { target, signedIn: signedIn.value, cookies: [cleared, signedIn.value.cookie] };
}

/** What this browser's cookie kept for the state in `callback`, if it is this browser's, for this state, and recent. */
function keptSignIn(ctx: BaseServices & UpstreamServices, request: EndpointRequest, callback: URL): PendingPageSignIn | undefined {
  const sealed = readCookie(ctx, request, 'upstream');
  const binding = readCookie(ctx, request, 'browser');
  if (!sealed || !binding) return undefined;
  const opened = upstreamConfig(ctx).secretBox.open(sealed, ownerOf(binding));
  // Altered, sealed for another browser, or sealed with a key since dropped.
  if (!opened.ok) return undefined;
  const kept = JSON.parse(opened.value) as PendingPageSignIn;
  if (ctx.now() - kept.startedAt > PAGE_SIGN_IN_TTL) return undefined;
  if (!safeEqual(callback.searchParams.get('state') ?? '', kept.pending.state)) return undefined;
  return kept;
}

function expiredPageSignIn(): OAuthError {
  return new OAuthError('invalid_request', 'no sign-in of this browser awaits this callback').withUserMessage(
    'This sign-in has expired or was started in another browser. Go back to the page you signed in at and start again.',
  );
}

const ownerOf = (binding: string): string => `page-sign-in:${hashSecret(binding)}`;

function logFieldsOf(target: PageSignInTarget): SignInLogFields {
  return target.page === 'admin' && target.reauth ? { page: 'admin', reauth: true } : { page: target.page };
}
