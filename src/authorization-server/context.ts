import type { ResolvedConfig } from './config.js';
import type { ClientUse } from './clients.js';
import type { SigningKeys } from './keys.js';
import type { RateLimits } from './rate-limit/rate-limits.js';
import type { Revocations } from './revocations.js';
import type { SignInThrottle } from './sign-in-throttle.js';

/** What every endpoint and grant gets: the resolved configuration (with the store) and the keys. */
export interface ServerContext {
  config: ResolvedConfig;
  keys: SigningKeys;
  clientUse: ClientUse;
  signInThrottle: SignInThrottle;
  rateLimits: RateLimits;
  /** Every revocation goes through here, so a guard in this process learns of it before the response. */
  revocations: Revocations;
}
