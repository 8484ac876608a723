/**
 * The local user behind an upstream identity. The identity is the provider's issuer and subject
 * (never the email, which can change hands); the user record is created on first sign-in, with a
 * readable username (`<provider>:<login or email or subject>`) that no password can sign in to.
 */
import { randomUUID } from 'node:crypto';
import { StoreConflictError, type UserRecord } from '../../store/store.js';
import type { ServerContext } from '../context.js';
import type { UpstreamIdentity } from './provider.js';

export async function upstreamUser(ctx: ServerContext, provider: string, identity: UpstreamIdentity): Promise<UserRecord> {
  const { store, now } = ctx.config;
  const existing = await store.getUserByIdentity(identity.issuer, identity.subject);
  if (existing) return existing;
  const base = `${provider}:${identity.username ?? identity.email ?? identity.subject}`.slice(0, 100);
  for (let attempt = 1; attempt <= 20; attempt++) {
    const user: UserRecord = { id: randomUUID(), username: attempt === 1 ? base : `${base}-${attempt}`, passwordHash: null, createdAt: now() };
    try {
      await store.createUserWithIdentity(user, {
        issuer: identity.issuer,
        subject: identity.subject,
        provider,
        userId: user.id,
        email: identity.email,
        name: identity.name,
        createdAt: user.createdAt,
      });
      ctx.config.log({ event: 'user_created', user_id: user.id, provider });
      return user;
    } catch (error) {
      if (!(error instanceof StoreConflictError)) throw error;
      // Either the username is taken (try the next), or the same person signed in twice at once.
      const raced = await store.getUserByIdentity(identity.issuer, identity.subject);
      if (raced) return raced;
    }
  }
  throw new Error(`no free username for ${base}`);
}
