import { isLoopbackHost } from '../core/uri.js';
import { ClientError } from './errors.js';
import { failureReason } from './network-errors.js';

/**
 * Plain http is allowed only to this machine (development servers, tests); everything else must
 * be https, as the spec requires of authorization endpoints.
 */
export function assertSecureUrl(url: string | URL, what: string): URL {
  const parsed = new URL(url);
  if (parsed.protocol === 'https:') return parsed;
  if (parsed.protocol === 'http:' && isLoopbackHost(parsed.hostname)) return parsed;
  throw new ClientError('insecure_url', `${what} must use https: ${parsed.href}`);
}

export function isInsecureLoopback(url: string | URL): boolean {
  const parsed = new URL(url);
  return parsed.protocol === 'http:' && isLoopbackHost(parsed.hostname);
}

/** GET a JSON document; undefined on 404 (and the other "not here" answers), an error otherwise. */
export async function getJson(
  fetchImpl: typeof fetch,
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body?: Record<string, unknown> }> {
  let response: Response;
  try {
    response = await fetchImpl(url, { headers: { accept: 'application/json', ...headers }, redirect: 'manual', signal: AbortSignal.timeout(15_000) });
  } catch (error) {
    throw new ClientError('discovery_failed', `cannot reach ${url}: ${failureReason(error, url)}`, { cause: error });
  }
  if (!response.ok) {
    await response.body?.cancel();
    return { status: response.status };
  }
  const body = (await response.json().catch(() => undefined)) as unknown;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ClientError('discovery_failed', `${url} did not answer with a JSON object`);
  }
  return { status: response.status, body: body as Record<string, unknown> };
}
