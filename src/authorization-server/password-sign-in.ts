import { addressBucket } from '../core/client-address.js';
import { DUMMY_PASSWORD_HASH, verifyPassword } from '../core/passwords.js';
import type { UserRecord } from '../store/store.js';
import type { AuditFields, AuditValue } from './audit.js';
import type { BaseServices } from './services.js';
import { hasNoUsers } from './no-users.js';
import { SignInThrottle } from './sign-in-throttle.js';
import type { EndpointRequest } from './http/request.js';

/** Why a password sign-in did not succeed: what to tell the person, and the wait (seconds, a 429) when throttled. */
export interface PasswordRefused {
  message: string;
  retryAfter?: number;
}

/**
 * Checks a local username and password, behind the sign-in throttle: every password form (the
 * interaction's sign-in, the account page) goes through here. `logFields` say where it came from.
 */
export async function checkPassword(
  ctx: BaseServices & { signInThrottle: SignInThrottle },
  request: EndpointRequest,
  username: string,
  password: string,
  logFields: AuditFields & Record<string, AuditValue>,
): Promise<{ user: UserRecord } | { refused: PasswordRefused }> {
  const { store } = ctx;
  // Failed attempts slow further ones down, for the account and for the address (never a lockout).
  const address = request.clientAddress;
  const attempt = ctx.signInThrottle.begin(SignInThrottle.keys(username, address), ctx.nowMs());
  // Logged as the throttle counts it, by bucket (an IPv6 address's /64), never the whole address.
  const bucket = address === undefined ? {} : { address: addressBucket(address) };
  if (typeof attempt === 'number') {
    const wait = attempt;
    ctx.log({ event: 'login_throttled', ...logFields, ...bucket });
    return {
      refused: {
        message: `Too many failed sign-ins for this account or from this address. Try again in ${wait} second${wait === 1 ? '' : 's'}; each further failure doubles the wait, up to 15 minutes.`,
        retryAfter: wait,
      },
    };
  }
  let user: UserRecord | undefined;
  let valid: boolean;
  try {
    user = username ? await store.getUser({ username }) : undefined;
    // Verify against a dummy hash for unknown users so the response time does not reveal them.
    valid = await verifyPassword(password, user?.passwordHash ?? DUMMY_PASSWORD_HASH);
  } catch (error) {
    attempt.abandoned();
    throw error;
  }
  if (!user || !valid) {
    // Timed after the password check (scrypt, 0.1 s or more): the wait starts when the answer goes out.
    attempt.failed(ctx.nowMs());
    // A server nobody was added to yet fails every sign-in: the operator reading the log learns why.
    const noUsers = !user && (await hasNoUsers(store, ctx.nowMs()));
    ctx.log({ event: 'login_failed', ...logFields, ...bucket, ...(noUsers ? { reason: 'no_users' } : {}) });
    return { refused: { message: 'Wrong username or password.' } };
  }
  attempt.succeeded();
  return { user };
}
