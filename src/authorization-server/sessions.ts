import { hashSecret, randomToken } from '../core/secrets.js';
import { hasSignOut } from '../store/capabilities.js';
import type { SessionRecord } from '../store/store.js';
import type { BaseServices } from './services.js';
import { cookieHeader, readCookie } from './browser-cookies.js';
import type { EndpointRequest } from './http/request.js';

/**
 * The signed-in user of this browser, if any (the cookie holds a random id; the store its hash).
 * A session started by an upstream sign-in ends with that upstream session's maximum lifetime.
 */
export async function currentSession(ctx: BaseServices, request: EndpointRequest): Promise<SessionRecord | undefined> {
  const id = readCookie(ctx, request, 'session');
  if (!id) return undefined;
  const { store, now } = ctx;
  const session = await store.getSession(hashSecret(id), now());
  if (!session || session.upstreamSessionId === null) return session;
  const upstream = await store.getUpstreamSession(session.upstreamSessionId);
  return upstream && upstream.expiresAt > now() ? session : undefined;
}

/** Starts a session after a successful login; returns the Set-Cookie header value. */
export async function startSession(
  ctx: BaseServices,
  userId: string,
  upstreamSessionId: string | null = null,
): Promise<{ session: SessionRecord; cookie: string }> {
  const now = ctx.now();
  const id = randomToken(32);
  const session: SessionRecord = { idHash: hashSecret(id), userId, authTime: now, createdAt: now, expiresAt: now + ctx.config.sessionTtl, upstreamSessionId };
  await ctx.store.createSession(session);
  return { session, cookie: cookieHeader(ctx, 'session', id, ctx.config.sessionTtl) };
}

/** Ends this browser's session, in the store and in the browser: the Set-Cookie header value that clears it. */
export async function endSession(ctx: BaseServices, request: EndpointRequest): Promise<string> {
  const id = readCookie(ctx, request, 'session');
  // The pages that sign out are served only on a store that can (index.ts).
  if (!hasSignOut(ctx.store)) throw new Error('signing out needs a store with the signOut capability');
  if (id) await ctx.store.deleteSession(hashSecret(id));
  return cookieHeader(ctx, 'session', '', 0);
}

/**
 * The browser binding: a random value in a cookie whose hash each interaction keeps, so a login
 * or consent form can only be completed by the browser that started it (no login CSRF, no
 * consent pushed from another site).
 */
export function browserBinding(ctx: BaseServices, request: EndpointRequest): { value: string; cookie?: string } {
  const existing = readCookie(ctx, request, 'browser');
  if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return { value: existing };
  const value = randomToken(32);
  return { value, cookie: cookieHeader(ctx, 'browser', value, 365 * 24 * 3600) };
}
