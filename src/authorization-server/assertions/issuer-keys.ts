import { RemoteKeySet } from '../../core/remote-key-set.js';
import { wellKnownUrl } from '../../core/uri.js';
import { AssertionDefect, type AssertionKeys } from './verify-assertion.js';
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

/** Why an issuer's keys could not be had: for the log (it may describe our network), never the response. */
export class IssuerKeysUnavailable extends AssertionDefect {
  constructor(readonly issuer: string, readonly reason: string) {
    super('the keys of the assertion\'s issuer could not be fetched; try again shortly', true);
  }
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
  private readonly keySets = new Map<string, Promise<RemoteKeySet>>();
  private readonly fetch: typeof fetch;

  constructor(private readonly options: IssuerKeysOptions) {
    this.fetch = options.fetch ?? outboundJsonFetch({ allowLoopbackHttp: options.allowLoopbackHttp });
  }

  /** The keys of `issuer` as the assertion verifier asks for them. */
  keysOf(issuer: string, kinds: readonly MetadataKind[]): AssertionKeys {
    return async (alg, kid) => (await this.keySet(issuer, kinds)).lookup(alg, kid);
  }

  private keySet(issuer: string, kinds: readonly MetadataKind[]): Promise<RemoteKeySet> {
    let pending = this.keySets.get(issuer);
    if (!pending) {
      pending = this.discover(issuer, kinds).then(
        (jwksUri) => new RemoteKeySet(jwksUri, { cooldownMs: this.options.cooldownMs ?? 30_000, maxAgeMs: 600_000, timeoutMs: 10_000, fetch: this.fetch }),
      );
      pending.catch(() => this.keySets.delete(issuer));
      this.keySets.set(issuer, pending);
    }
    return pending;
  }

  private async discover(issuer: string, kinds: readonly MetadataKind[]): Promise<string> {
    const problems: string[] = [];
    for (const kind of kinds) {
      // OpenID Connect Discovery appends to the issuer's path; RFC 8414 inserts before it.
      const url = kind === 'openid-configuration' ? `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration` : wellKnownUrl(issuer, kind);
      let document: unknown;
      try {
        const response = await this.fetch(url, { method: 'GET', redirect: 'manual', signal: AbortSignal.timeout(10_000) });
        if (response.status !== 200) throw new Error(`it answered ${response.status}`);
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
      return keysUrl.href;
    }
    throw new IssuerKeysUnavailable(issuer, problems.join('; '));
  }
}
