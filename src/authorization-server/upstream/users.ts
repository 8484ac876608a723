/**
 * The local user behind an upstream identity. The identity is the provider (its configured id),
 * its issuer and the subject there (never the email, which can change hands): a plain OAuth 2.0
 * provider's issuer is a name of the operator's, and its numeric ids would match another
 * provider's people if the issuer alone said whose they are. The user record is created on first
 * sign-in, with a readable username (`<provider>:<login or email or subject>`) that no password
 * can sign in to.
 */
import { randomUUID } from 'node:crypto';
import { withoutControlCharacters } from '../../core/control-characters.js';
import { isStoreConflict, type UserRecord } from '../../store/store.js';
import type { BaseServices } from '../services.js';
import type { UpstreamIdentity } from './provider.js';

export async function upstreamUser(ctx: Pick<BaseServices, 'store' | 'now' | 'log'>, provider: string, identity: UpstreamIdentity): Promise<UserRecord> {
  const { store, now } = ctx;
  const key = { provider, issuer: identity.issuer, subject: identity.subject };
  const existing = await store.getUser({ identity: key });
  if (existing) return existing;
  // Names and emails are the provider's (often the person's own) words, shown later on an
  // operator's terminal (`users list`): kept without control characters.
  const email = clean(identity.email);
  const name = clean(identity.name);
  // Cut by characters, not UTF-16 units: half a surrogate pair cannot be stored.
  const base = [...`${provider}:${clean(identity.username) ?? email ?? clean(identity.subject) ?? 'user'}`].slice(0, 100).join('');
  for (let attempt = 1; attempt <= 20; attempt++) {
    const user: UserRecord = { id: randomUUID(), username: attempt === 1 ? base : `${base}-${attempt}`, passwordHash: null, createdAt: now() };
    try {
      await store.createUserWithIdentity(user, {
        issuer: identity.issuer,
        subject: identity.subject,
        provider,
        userId: user.id,
        email,
        name,
        createdAt: user.createdAt,
      });
      ctx.log({ event: 'user_created', user_id: user.id, provider });
      return user;
    } catch (error) {
      if (!isStoreConflict(error)) throw error;
      // Either the username is taken (try the next), or the same person signed in twice at once.
      const raced = await store.getUser({ identity: key });
      if (raced) return raced;
    }
  }
  throw new Error(`no free username for ${base}`);
}

function clean(text: string | null): string | null {
  const kept = text === null ? '' : withoutControlCharacters(text);
  return kept === '' ? null : kept;
}
