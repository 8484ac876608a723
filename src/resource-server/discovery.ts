import { wellKnownUrl } from '../core/uri.js';
import { VerifierUnavailableError } from './types.js';

/**
 * Fetches an authorization server's RFC 8414 metadata (path-inserted well-known URL, then the
 * OpenID one) and checks that it names the issuer it was fetched for (RFC 8414 §3.3).
 */
export async function fetchAuthorizationServerMetadata(issuer: string, fetchImpl: typeof fetch): Promise<Record<string, unknown>> {
  const candidates = [wellKnownUrl(issuer, 'oauth-authorization-server'), `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`];
  let lastProblem = 'no metadata found';
  for (const url of candidates) {
    let response: Response;
    try {
      response = await fetchImpl(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
    } catch (error) {
      throw new VerifierUnavailableError(`cannot reach ${url}`, { cause: error });
    }
    if (response.status === 404) {
      lastProblem = `${url} answered 404`;
      continue;
    }
    if (!response.ok) throw new VerifierUnavailableError(`${url} answered ${response.status}`);
    const metadata = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    if (!metadata || metadata.issuer !== issuer) throw new VerifierUnavailableError(`${url} is not metadata for ${issuer}`);
    return metadata;
  }
  throw new VerifierUnavailableError(lastProblem);
}
