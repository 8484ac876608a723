/**
 * The rate limits, as the operator states them, and their defaults. Each is a token bucket per
 * client address (clientDocumentTotal: one for all; gateway: one per gateway path and person): `burst` requests at once, refilled at
 * `perMinute`. The defaults stop floods (47,000 registrations a minute from one address, without
 * them) and leave room for many honest people behind one address (an office NAT):
 * - register: 30 at once, then 60 an hour. A client registers once per server it is added to.
 * - token: 300 at once, then 600 a minute (10 a second), for /token, /device_authorization and
 *   /userinfo. Every refresh comes here, and a busy service behind a NAT may refresh for many clients.
 * - signIn: 60 at once, then 60 a minute, for every form post of the sign-in and consent pages and
 *   every return from an upstream provider. Each password post costs a scrypt hash; the failure
 *   back-off (sign-in-throttle.ts) is the defence against guessing, this one against volume.
 * - clientDocument: 30 at once, then 60 an hour, like register: the first use of a client ID
 *   metadata document URL creates a client as a registration does (and costs us a fetch of a URL
 *   a stranger chose). Later fetches of a document already known are not counted.
 * - clientDocumentTotal: 100 at once, then 60 an hour, for all addresses together: an attacker
 *   with many addresses still cannot make the server create clients and fetch URLs without end.
 *   Honest documents are few (one per application, not per person), and known ones go on working.
 * - gateway: per gateway path and person (the token's subject), not per address: 300 at once,
 *   then 600 a minute (10 a second). A host's session is a few requests and then one per tool
 *   call; an agent calling tools without end, or a stolen token, is held to that pace at each
 *   upstream, and people behind one address do not share a budget.
 */
export interface RateLimit {
  /** Requests allowed at once: the bucket's size. A whole number from 1 to 1,000,000. */
  burst: number;
  /** Requests a minute, sustained: the bucket's refill. May be a fraction (1 an hour is 1/60). */
  perMinute: number;
}

export type RateLimitName = 'register' | 'token' | 'signIn' | 'clientDocument' | 'clientDocumentTotal' | 'gateway';
export const RATE_LIMIT_NAMES: readonly RateLimitName[] = ['register', 'token', 'signIn', 'clientDocument', 'clientDocumentTotal', 'gateway'];

export const DEFAULT_RATE_LIMITS: Readonly<Record<RateLimitName, RateLimit>> = {
  register: { burst: 30, perMinute: 1 },
  token: { burst: 300, perMinute: 600 },
  signIn: { burst: 60, perMinute: 60 },
  clientDocument: { burst: 30, perMinute: 1 },
  clientDocumentTotal: { burst: 100, perMinute: 1 },
  gateway: { burst: 300, perMinute: 600 },
};

/** Client addresses remembered per limit; beyond it the least recently seen are forgotten. */
export const DEFAULT_MAX_ADDRESSES = 100_000;

export interface RateLimitOptions {
  /** POST /register. `false` turns the limit off. */
  register?: RateLimit | false;
  /** POST /token, POST /device_authorization, GET and POST /userinfo. `false` turns the limit off. */
  token?: RateLimit | false;
  /** Sign-in and consent form posts, and returns from upstream providers. `false` turns the limit off. */
  signIn?: RateLimit | false;
  /** New client ID metadata documents (URLs not yet known as clients), per address. `false` turns the limit off. */
  clientDocument?: RateLimit | false;
  /** New client ID metadata documents from all addresses together (one bucket). `false` turns the limit off. */
  clientDocumentTotal?: RateLimit | false;
  /** Requests to a gateway path beside this server, per path and subject (`gatewayRateLimit`). `false` turns the limit off. */
  gateway?: RateLimit | false;
  /**
   * Keep the buckets in the store, so that replicas on one database share them. Default: when the
   * store is shared by replicas (PostgreSQL) and keeps rate buckets; otherwise in this process's memory.
   */
  shared?: boolean;
  /** Client addresses remembered per limit in memory (the map is bounded). Default 100,000. */
  maxAddresses?: number;
}

export interface ResolvedRateLimits {
  limits: Record<RateLimitName, RateLimit | null>;
  shared: boolean;
  maxAddresses: number;
}

export function validRateLimit(name: string, limit: RateLimit): RateLimit {
  if (!Number.isInteger(limit.burst) || limit.burst < 1 || limit.burst > 1_000_000)
    throw new Error(`rateLimits.${name}.burst must be a whole number from 1 to 1,000,000`);
  if (!(typeof limit.perMinute === 'number' && limit.perMinute > 0 && Number.isFinite(limit.perMinute)))
    throw new Error(`rateLimits.${name}.perMinute must be a positive number`);
  return { burst: limit.burst, perMinute: limit.perMinute };
}

export function resolveRateLimits(options: RateLimitOptions = {}, storeShared: boolean, storeKeepsBuckets = true): ResolvedRateLimits {
  const limits = {} as Record<RateLimitName, RateLimit | null>;
  for (const name of RATE_LIMIT_NAMES) {
    const given = options[name];
    limits[name] = given === false ? null : validRateLimit(name, given ?? DEFAULT_RATE_LIMITS[name]);
  }
  const maxAddresses = options.maxAddresses ?? DEFAULT_MAX_ADDRESSES;
  if (!Number.isInteger(maxAddresses) || maxAddresses < 1) throw new Error('rateLimits.maxAddresses must be a positive whole number');
  if (options.shared && !storeKeepsBuckets) throw new Error('rateLimits.shared needs a store that keeps rate-limit buckets (takeRateTokens)');
  return { limits, shared: options.shared ?? (storeShared && storeKeepsBuckets), maxAddresses };
}
