import type { SessionRecord, UserRecord } from '../../store/store.js';
import type { ServerContext } from '../context.js';
import { currentSession } from '../sessions.js';
import { verifiedEmailOfSession } from '../upstream/session.js';

/**
 * Who is at the console: nobody signed in, someone who is not an administrator, or an
 * administrator, with whether their sign-in is recent enough for an action (`fresh`).
 */
export type AdminAccess =
  | { kind: 'signed-out' }
  | { kind: 'not-admin'; user: UserRecord }
  | { kind: 'admin'; user: UserRecord; session: SessionRecord; fresh: boolean };

/** Who this browser's session belongs to, and what they may do at the console. */
export async function adminAccess(ctx: ServerContext, request: Request): Promise<AdminAccess> {
  const session = await currentSession(ctx, request);
  const user = session ? await ctx.store.getUser({ id: session.userId }) : undefined;
  if (!session || !user) return { kind: 'signed-out' };
  if (!(await isAdministrator(ctx, user, session))) return { kind: 'not-admin', user };
  return { kind: 'admin', user, session, fresh: ctx.now() - session.authTime <= ctx.config.admin.reauthSeconds };
}

/**
 * An administrator: a user marked so in the store (`users admin NAME on`, `users add --admin`), or,
 * for a `session` begun by an upstream sign-in, one whose email the provider verified at that
 * sign-in and the operator listed (`admin.emails`). The list is read at every request, never
 * written to the user: an email taken off it takes the rights away.
 */
export async function isAdministrator(ctx: ServerContext, user: UserRecord, session?: SessionRecord): Promise<boolean> {
  if (user.admin === true) return true;
  if (!session || session.userId !== user.id || ctx.config.admin.emails.length === 0) return false;
  const email = await verifiedEmailOfSession(ctx, session);
  return email !== null && ctx.config.admin.emails.includes(email);
}
