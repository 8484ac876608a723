import { fetchClientDocument, type DocumentFetchOptions } from '../client-documents/fetch-document.js';

/**
 * A `fetch` for JSON documents at URLs that others chose (a client's `jwks_uri`, a trusted
 * issuer's metadata and keys), with every defence of the client document fetcher: https only,
 * public addresses only, no redirects, timeouts and a size cap. It answers GET requests with the
 * parsed body as a JSON response, so key sets written for `fetch` (core/remote-key-set.ts) use
 * it unchanged. A document it cannot have rejects, as fetch does, with a TypeError whose message
 * says why: for the log only, since it may describe our network.
 */
export function outboundJsonFetch(options: DocumentFetchOptions): typeof fetch {
  const fetchOptions: DocumentFetchOptions = { ...options, extraContentTypes: ['application/jwk-set+json', ...(options.extraContentTypes ?? [])] };
  return (async (input: Parameters<typeof fetch>[0]) => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const fetched = await fetchClientDocument(url, fetchOptions);
    if (!fetched.ok) throw new TypeError(fetched.defect.description);
    return Response.json(fetched.value.body);
  }) as typeof fetch;
}
