import type { SessionRecord, UserRecord } from '../../store/store.js';
import type { ServerContext } from '../context.js';
import { currentSession } from '../sessions.js';

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
  if (!(await isAdministrator(ctx, user))) return { kind: 'not-admin', user };
  return { kind: 'admin', user, session, fresh: ctx.now() - session.authTime <= ctx.config.admin.reauthSeconds };
}

/** An administrator: a user marked so in the store (`users admin NAME on`, `users add --admin`). */
export async function isAdministrator(_ctx: ServerContext, user: UserRecord): Promise<boolean> {
  return user.admin === true;
}
