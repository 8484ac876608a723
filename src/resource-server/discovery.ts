import { authorizationServerMetadataUrls } from '../core/uri.js';
import { VerifierUnavailableError } from './types.js';

/**
 * Fetches an authorization server's metadata from the places clients look too
 * (`authorizationServerMetadataUrls`) and checks that it names the issuer it was fetched for
 * (RFC 8414 §3.3).
 */
export async function fetchAuthorizationServerMetadata(issuer: string, fetchImpl: typeof fetch): Promise<Record<string, unknown>> {
  let lastProblem = 'no metadata found';
  for (const url of authorizationServerMetadataUrls(issuer)) {
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
