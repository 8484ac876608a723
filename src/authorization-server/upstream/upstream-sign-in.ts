import type { SecretBox } from '../../core/secret-box.js';
import type { ResolvedUpstreamConfig } from '../config.js';
import type { UpstreamSignInPolicy } from './policy.js';
import type { UpstreamProviders } from './registry.js';

/** Upstream sign-in as it runs: its settings (`config.upstream`) and what acts on them. */
export interface UpstreamSignIn extends ResolvedUpstreamConfig {
  providers: UpstreamProviders;
  /** Seals upstream tokens at rest. */
  secretBox: SecretBox;
  /** Who may sign in; its `allow` hook is the operator's code. */
  policy: UpstreamSignInPolicy;
}

/** What a part of the server that acts on upstream sign-in gets: null when upstream sign-in is off, as `config.upstream` is. */
export interface UpstreamServices {
  upstream: UpstreamSignIn | null;
}
