import { RemoteKeySet } from '../../core/remote-key-set.js';
import { wellKnownUrl } from '../../core/uri.js';
import { fail, ok, type Result } from '../../core/result.js';
import type { AssertionDefect, AssertionKeys } from './verify-assertion.js';
import { isTestLoopbackUrl } from '../client-documents/fetch-document.js';
import { outboundJsonFetch } from './outbound-fetch.js';

/** Where an issuer's metadata is looked for, in order: OpenID Connect Discovery, then RFC 8414. */
export type MetadataKind = 'openid-configuration' | 'oauth-authorization-server';

export interface IssuerKeysOptions {
  /** Tests only: issuers (and their keys) at http://127.0.0.1. */
  allowLoopbackHttp: boolean;
  /** Replaces the defended fetch (tests that count requests). */
  fetch?: typeof fetch;
  /** Least time between two fetches of one issuer's keys for a kid it lacks, ms. Default 30 s. */
  cooldownMs?: number;
}

/** An issuer's keys that could not be had; `log` (it may describe our network) names the issuer and why, never the response. */
function keysUnavailable(issuer: string, reason: string): AssertionDefect {
  return { code: 'keys_unavailable', description: "the keys of the assertion's issuer could not be fetched; try again shortly", log: { issuer, reason } };
}

/**
 * The signing keys of issuers the operator trusts (identity providers issuing ID-JAGs, platforms
 * issuing workload tokens), found through their metadata: `jwks_uri` from the first document
 * whose `issuer` is the issuer exactly, then the key set itself, cached and refetched on an
 * unknown kid (RemoteKeySet). Every request goes through the fetch that keeps the SSRF defences
 * (https, public addresses, no redirects, size and time limits). A discovery that fails is not
 * remembered, so an issuer that was down works once it is back. Only ever called for an issuer
 * already found in the configuration: a stranger's `iss` makes us fetch nothing.
 */
export class IssuerKeys {
  private readonly keySets = new Map<string, Promise<Result<RemoteKeySet, string>>>();
  private readonly fetch: typeof fetch;

  constructor(private readonly options: IssuerKeysOptions) {
    this.fetch = options.fetch ?? outboundJsonFetch({ allowLoopbackHttp: options.allowLoopbackHttp });
  }

  /** The keys of `issuer` as the assertion verifier asks for them. */
  keysOf(issuer: string, kinds: readonly MetadataKind[]): AssertionKeys {
    return async (alg, kid) => {
      const keySet = await this.keySet(issuer, kinds);
      if (!keySet.ok) return { defect: keysUnavailable(issuer, keySet.defect) };
      const found = await keySet.value.lookup(alg, kid);
      return 'problem' in found && found.problem === 'unavailable' ? { defect: keysUnavailable(issuer, found.reason) } : found;
    };
  }

  private keySet(issuer: string, kinds: readonly MetadataKind[]): Promise<Result<RemoteKeySet, string>> {
    let pending = this.keySets.get(issuer);
    if (!pending) {
      pending = this.discover(issuer, kinds).then((jwksUri) =>
        jwksUri.ok
          ? ok(new RemoteKeySet(jwksUri.value, { cooldownMs: this.options.cooldownMs ?? 30_000, maxAgeMs: 600_000, timeoutMs: 10_000, fetch: this.fetch }))
          : jwksUri,
      );
      // A discovery that failed is not kept: the next assertion tries again.
      void pending.then(
        (found) => {
          if (!found.ok) this.keySets.delete(issuer);
        },
        () => this.keySets.delete(issuer),
      );
      this.keySets.set(issuer, pending);
    }
    return pending;
  }

  /** The issuer's `jwks_uri`, or why none could be found (for the log). */
  private async discover(issuer: string, kinds: readonly MetadataKind[]): Promise<Result<string, string>> {
    const problems: string[] = [];
    for (const kind of kinds) {
      // OpenID Connect Discovery appends to the issuer's path; RFC 8414 inserts before it.
      const url = kind === 'openid-configuration' ? `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration` : wellKnownUrl(issuer, kind);
      let document: unknown;
      try {
        const response = await this.fetch(url, { method: 'GET', redirect: 'manual', signal: AbortSignal.timeout(10_000) });
        if (response.status !== 200) {
          problems.push(`${url}: it answered ${response.status}`);
          continue;
        }
        document = await response.json();
      } catch (error) {
        problems.push(`${url}: ${(error as Error).message}`);
        continue;
      }
      const metadata = (typeof document === 'object' && document !== null ? document : {}) as Record<string, unknown>;
      // The document must be the issuer's own (OpenID Connect Discovery §4.3, RFC 8414 §3.3).
      if (metadata.issuer !== issuer) {
        problems.push(`${url}: its issuer is not ${issuer}`);
        continue;
      }
      const jwksUri = metadata.jwks_uri;
      if (typeof jwksUri !== 'string' || !URL.canParse(jwksUri)) {
        problems.push(`${url}: it has no jwks_uri`);
        continue;
      }
      const keysUrl = new URL(jwksUri);
      if (keysUrl.protocol !== 'https:' && !(this.options.allowLoopbackHttp && isTestLoopbackUrl(keysUrl))) {
        problems.push(`${url}: its jwks_uri is not https`);
        continue;
      }
      return ok(keysUrl.href);
    }
    return fail(problems.join('; '));
  }
}
