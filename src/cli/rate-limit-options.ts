/** `serve`'s flags for rate limits and trusted proxies, read into createAuthorizationServer options. */
import { DEFAULT_RATE_LIMITS, type RateLimit, type RateLimitOptions } from '../authorization-server/index.js';
import { trustedProxies } from '../cli-support.js';
import { usageError } from './errors.js';

const NAMES = {
  register: 'register',
  token: 'token',
  'sign-in': 'signIn',
  'client-document': 'clientDocument',
  'client-document-total': 'clientDocumentTotal',
  gateway: 'gateway',
} as const;
const UNIT_MINUTES: Record<string, number> = { s: 1 / 60, sec: 1 / 60, second: 1 / 60, m: 1, min: 1, minute: 1, h: 60, hour: 60 };

const describe = (limit: RateLimit): string => `${limit.perMinute}/min,burst=${limit.burst}`;

export const RATE_LIMIT_HELP = `  --rate-limit NAME=RATE   NAME register | token | sign-in | client-document | client-document-total | gateway;
                           RATE N/second|minute|hour[,burst=B] (burst default N) or off
                           (repeatable; defaults per client address: register ${describe(DEFAULT_RATE_LIMITS.register)},
                           token ${describe(DEFAULT_RATE_LIMITS.token)}, sign-in ${describe(DEFAULT_RATE_LIMITS.signIn)},
                           client-document ${describe(DEFAULT_RATE_LIMITS.clientDocument)} (new client ID metadata documents);
                           for all addresses together: client-document-total ${describe(DEFAULT_RATE_LIMITS.clientDocumentTotal)};
                           per --gateway path and person (the token's subject): gateway ${describe(DEFAULT_RATE_LIMITS.gateway)})
  --trust-proxy ADDR       a reverse proxy (address or CIDR; repeatable, or comma-separated) whose
                           X-Forwarded-For names the client; default none: the header is ignored`;

/** `register=60/hour`, `token=600/min,burst=300`, `sign-in=off`. */
export function parseRateLimit(flag: string): [keyof typeof NAMES, RateLimit | false] {
  const match = /^([a-z-]+)=(.+)$/.exec(flag.trim());
  const name = match?.[1] as keyof typeof NAMES | undefined;
  if (!match || !name || !Object.hasOwn(NAMES, name))
    throw usageError(`--rate-limit ${flag}: give register=, token=, sign-in=, client-document=, client-document-total= or gateway=`);
  const spec = match[2]!.trim();
  if (spec === 'off') return [name, false];
  const rate = /^(\d+(?:\.\d+)?)\/([a-z]+)(?:,burst=(\d+))?$/.exec(spec);
  const count = Number(rate?.[1]);
  const minutes = UNIT_MINUTES[rate?.[2] ?? ''];
  const burst = rate?.[3] !== undefined ? Number(rate[3]) : Math.max(1, Math.floor(count));
  if (!rate || !minutes || !(count > 0) || !(burst >= 1 && burst <= 1_000_000)) {
    throw usageError(`--rate-limit ${flag}: the rate is N/second, N/minute or N/hour (N > 0), optionally ,burst=B (1 to 1000000), or off`);
  }
  return [name, { perMinute: count / minutes, burst }];
}

export function rateLimitOptions(flags: readonly string[] = []): RateLimitOptions {
  const options: RateLimitOptions = {};
  for (const flag of flags) {
    const [name, limit] = parseRateLimit(flag);
    options[NAMES[name]] = limit;
  }
  return options;
}

/** Every --trust-proxy entry, split at commas, checked now so that a typo stops serve at start. */
export function trustProxyOption(flags: readonly string[] = []): string[] {
  const entries = flags
    .flatMap((flag) => flag.split(','))
    .map((entry) => entry.trim())
    .filter(Boolean);
  try {
    trustedProxies(entries);
  } catch (error) {
    throw usageError(`--trust-proxy: ${(error as Error).message.replace(/^trustProxy: /, '')}`);
  }
  return entries;
}

/** One banner line: what is limited, and where the buckets live. */
export function rateLimitBanner(options: RateLimitOptions, shared: boolean, trustProxy: string[]): string {
  const parts = (['register', 'token', 'sign-in'] as const).map((name) => {
    const limit = options[NAMES[name]];
    return `${name} ${limit === false ? 'off' : describe(limit ?? DEFAULT_RATE_LIMITS[NAMES[name]])}`;
  });
  const proxies = trustProxy.length > 0 ? `; X-Forwarded-For from ${trustProxy.join(', ')}` : '';
  return `${parts.join(', ')} per address (${shared ? 'shared by replicas' : 'in memory'})${proxies}`;
}

/** The banner's words for the limits on new client ID metadata documents. */
export function clientDocumentLimitsBanner(options: RateLimitOptions): string {
  const limit = (name: 'clientDocument' | 'clientDocumentTotal'): string => {
    const given = options[name];
    return given === false ? 'off' : describe(given ?? DEFAULT_RATE_LIMITS[name]);
  };
  return `new ones ${limit('clientDocument')} per address, ${limit('clientDocumentTotal')} in all`;
}
