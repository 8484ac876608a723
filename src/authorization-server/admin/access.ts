import type { SessionRecord, UserRecord } from '../../store/store.js';
import type { AdminServices } from './section.js';
import { currentSession } from '../sessions.js';
import { upstreamSignInOfSession, type UpstreamSignInFacts } from '../upstream/session.js';
import type { EndpointRequest } from '../http/request.js';

/**
 * Who is at the console: nobody signed in, someone who is not an administrator, or an
 * administrator, with whether their sign-in is recent enough for an action (`fresh`).
 */
export type AdminAccess =
  { kind: 'signed-out' } | { kind: 'not-admin'; user: UserRecord } | { kind: 'admin'; user: UserRecord; session: SessionRecord; fresh: boolean };

/** Who this browser's session belongs to, and what they may do at the console. */
export async function adminAccess(ctx: AdminServices, request: EndpointRequest): Promise<AdminAccess> {
  const session = await currentSession(ctx, request);
  const user = session ? await ctx.store.getUser({ id: session.userId }) : undefined;
  if (!session || !user) return { kind: 'signed-out' };
  const upstream = await upstreamSignInOfSession(ctx, session);
  if (!isAdministrator(ctx, user, upstream)) return { kind: 'not-admin', user };
  const signedInAt = signInTime(session, upstream);
  return { kind: 'admin', user, session, fresh: signedInAt !== null && ctx.now() - signedInAt <= ctx.config.admin.reauthSeconds };
}

/**
 * An administrator: a user marked so in the store (`users admin NAME on`, `users add --admin`), or,
 * for a session begun by an upstream sign-in, one whose email the provider verified at that
 * sign-in and the operator listed (`admin.emails`). The list is read at every request, never
 * written to the user: an email taken off it takes the rights away.
 */
function isAdministrator(ctx: AdminServices, user: UserRecord, upstream: UpstreamSignInFacts): boolean {
  if (user.admin === true) return true;
  return upstream.verifiedEmail !== null && ctx.config.admin.emails.includes(upstream.verifiedEmail);
}

/**
 * When the person proved who they are, as far as we know: a password typed here, at the session's
 * start; through a provider, the login the provider vouches for (its `auth_time`), never later
 * than our session began. A provider that did not say (a plain OAuth 2.0 one, or an OpenID one
 * that sent no `auth_time`) proves nothing: our callback may have followed a login of long ago.
 */
function signInTime(session: SessionRecord, upstream: UpstreamSignInFacts): number | null {
  if (session.upstreamSessionId === null) return session.authTime;
  return upstream.authTime === null ? null : Math.min(upstream.authTime, session.authTime);
}
