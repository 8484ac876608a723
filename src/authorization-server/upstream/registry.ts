/**
 * The configured upstream providers. What can be checked without asking them is checked here, at
 * construction, so a server does not start with a setting that can never work. OpenID providers
 * are discovered on first use and the result kept; a discovery that fails is not kept, so a
 * provider that was down at start works once it is back. `ready()` resolves them all.
 */
import { OAuthError } from '../../core/errors.js';
import { fail, ok, type Result } from '../../core/result.js';
import { upstreamFailure, type UpstreamDefect } from './defects.js';
import { checkUpstreamProviders, describe, resolveUpstream, type ResolveOptions, type ResolvedUpstream, type UpstreamProviderOptions } from './provider.js';

export class UpstreamProviders {
  private readonly options = new Map<string, UpstreamProviderOptions>();
  private readonly resolved = new Map<string, Promise<ResolvedUpstream>>();

  constructor(
    providers: UpstreamProviderOptions[],
    private readonly resolveOptions: ResolveOptions = {},
  ) {
    checkUpstreamProviders(providers, resolveOptions);
    for (const provider of providers) this.options.set(provider.id, provider);
  }

  /** Id and button label of each provider, in configuration order. */
  list(): Array<{ id: string; name: string }> {
    return [...this.options.values()].map((p) => ({ id: p.id, name: p.name ?? p.id }));
  }

  has(id: string): boolean {
    return this.options.has(id);
  }

  /** Whether the provider can confirm a recent sign-in (an OpenID provider: `prompt=login`, `max_age`, `auth_time`). */
  confirmsSignIn(id: string): boolean {
    return this.options.get(id)?.kind === 'oidc';
  }

  /** The id of the provider configured with this issuer, if one is: its people are the same people elsewhere. */
  idForIssuer(issuer: string): string | undefined {
    return [...this.options.values()].find((provider) => provider.issuer === issuer)?.id;
  }

  /** Resolves every provider; throws the first configuration or discovery problem. */
  async ready(): Promise<void> {
    for (const id of this.options.keys()) await this.resolve(id);
  }

  /** The provider ready for a request; `unavailable` when its discovery fails now. Throws invalid_request for an id not configured. */
  async get(id: string): Promise<Result<ResolvedUpstream, UpstreamDefect>> {
    if (!this.options.has(id)) throw new OAuthError('invalid_request', `there is no sign-in provider named ${id}`);
    try {
      return ok(await this.resolve(id));
    } catch (error) {
      // resolveUpstream's errors name the provider and what it lacks: for the log.
      const description = `the sign-in provider ${this.options.get(id)!.name ?? id} cannot be reached; try again shortly`;
      return fail({ code: 'unavailable', description, failure: upstreamFailure('discovery', null, null, describe(error)) });
    }
  }

  private resolve(id: string): Promise<ResolvedUpstream> {
    let pending = this.resolved.get(id);
    if (!pending) {
      pending = resolveUpstream(this.options.get(id)!, this.resolveOptions);
      this.resolved.set(id, pending);
      pending.catch(() => this.resolved.delete(id));
    }
    return pending;
  }
}
