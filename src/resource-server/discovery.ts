import { fail, ok, type Result } from '../core/result.js';
import { authorizationServerMetadataUrls } from '../core/uri.js';

/**
 * Fetches an authorization server's metadata from the places clients look too
 * (`authorizationServerMetadataUrls`) and checks that it names the issuer it was fetched for
 * (RFC 8414 §3.3). When none can be had, says why: not the token's fault.
 */
export async function fetchAuthorizationServerMetadata(issuer: string, fetchImpl: typeof fetch): Promise<Result<Record<string, unknown>, string>> {
  let lastProblem = 'no metadata found';
  for (const url of authorizationServerMetadataUrls(issuer)) {
    let response: Response;
    try {
      response = await fetchImpl(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
    } catch {
      return fail(`cannot reach ${url}`);
    }
    if (response.status === 404) {
      lastProblem = `${url} answered 404`;
      continue;
    }
    if (!response.ok) return fail(`${url} answered ${response.status}`);
    const metadata = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    if (!metadata || metadata.issuer !== issuer) return fail(`${url} is not metadata for ${issuer}`);
    return ok(metadata);
  }
  return fail(lastProblem);
}
