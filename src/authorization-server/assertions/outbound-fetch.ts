import { fetchClientDocument, type DocumentFetchOptions } from '../client-documents/fetch-document.js';

/**
 * A `fetch` for JSON documents at URLs that others chose (a client's `jwks_uri`, a trusted
 * issuer's metadata and keys), with every defence of the client document fetcher: https only,
 * public addresses only, no redirects, timeouts and a size cap. It answers GET requests with the
 * parsed body as a JSON response, so key sets written for `fetch` (resource-server/jwks.ts) use
 * it unchanged; a refusal rejects with the fetcher's DocumentFetchError, for the log only.
 */
export function outboundJsonFetch(options: DocumentFetchOptions): typeof fetch {
  const fetchOptions: DocumentFetchOptions = { ...options, extraContentTypes: ['application/jwk-set+json', ...(options.extraContentTypes ?? [])] };
  return (async (input: string | URL | Request) => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const { body } = await fetchClientDocument(url, fetchOptions);
    return Response.json(body);
  }) as typeof fetch;
}
