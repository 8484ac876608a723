/**
 * A URL given as a context server's that is not one, told apart in words that say what to give
 * instead: nothing there (404), an authorization server's own URL (its issuer, an endpoint, its
 * metadata), or a server that answers an MCP request neither with a 401 asking for a token nor
 * with a JSON-RPC answer.
 */
import { authorizationServerMetadataUrls, canonicalizeResourceUri } from '../core/uri.js';
import { ClientError } from './errors.js';
import { assertSecureUrl, getJson } from './http.js';
import { failureReason } from './network-errors.js';

/** How the URL answered an MCP initialize sent without a token. */
export interface ProbeAnswer {
  status: number;
  wwwAuthenticate: string | null;
  contentType: string | null;
  location: string | null;
}

/** An MCP initialize without a token: the request whose 401 starts discovery. */
export async function probeServer(fetchImpl: typeof fetch, serverUrl: string): Promise<ProbeAnswer> {
  let response: Response;
  try {
    response = await fetchImpl(serverUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'context-auth', version: '0' } },
      }),
      redirect: 'manual',
      signal: AbortSignal.timeout(15_000),
    });
  } catch (error) {
    throw new ClientError('discovery_failed', `cannot reach ${serverUrl}: ${failureReason(error, serverUrl)}`, { cause: error });
  }
  await response.body?.cancel();
  const header = (name: string) => response.headers.get(name);
  return { status: response.status, wwwAuthenticate: header('www-authenticate'), contentType: header('content-type'), location: header('location') };
}

/** A context server's answer: 401 (it wants a token), or JSON-RPC (as JSON or an event stream) to a client it lets in. */
export function answersAsContextServer(answer: ProbeAnswer): boolean {
  if (answer.status === 401) return true;
  const type = (answer.contentType ?? '').split(';')[0]!.trim().toLowerCase();
  return answer.status >= 200 && answer.status < 300 && (type === 'application/json' || type === 'text/event-stream');
}

const canonical = (url: string): string | undefined => {
  try {
    return canonicalizeResourceUri(url);
  } catch {
    return undefined;
  }
};

/** What of an authorization server `serverUrl` is (its issuer, one of its endpoints, its metadata), if it is one's. */
async function authorizationServerPart(fetchImpl: typeof fetch, serverUrl: string): Promise<{ issuer: string; part: string } | undefined> {
  const url = new URL(serverUrl);
  const parent = url.pathname.replace(/\/[^/]*\/?$/, '');
  // The issuer may be the origin, the URL itself (an issuer with a path), or the URL's parent (one of its endpoints).
  const issuers = [...new Set([url.origin, serverUrl, `${url.origin}${parent}`])];
  const metadataUrls = [...new Set(issuers.flatMap((issuer) => authorizationServerMetadataUrls(issuer)))];
  for (const metadataUrl of metadataUrls) {
    const { body } = await getJson(fetchImpl, metadataUrl).catch(() => ({ body: undefined }));
    const issuer = body?.issuer;
    if (typeof issuer !== 'string' || !URL.canParse(issuer) || new URL(issuer).origin !== url.origin) continue;
    if (canonical(issuer) === serverUrl) return { issuer, part: 'its issuer' };
    if (canonical(metadataUrl) === serverUrl) return { issuer, part: 'its metadata' };
    for (const [name, value] of Object.entries(body!)) {
      if ((name.endsWith('_endpoint') || name === 'jwks_uri') && typeof value === 'string' && canonical(value) === serverUrl)
        return { issuer, part: `its ${name}` };
    }
  }
  return undefined;
}

/** The context server the origin's protected resource metadata names (as serve's does), when it is not `serverUrl`. */
async function contextServerAtOrigin(fetchImpl: typeof fetch, serverUrl: string): Promise<string | undefined> {
  const { body } = await getJson(fetchImpl, `${new URL(serverUrl).origin}/.well-known/oauth-protected-resource`).catch(() => ({ body: undefined }));
  const resource = typeof body?.resource === 'string' ? canonical(body.resource) : undefined;
  return resource !== undefined && resource !== serverUrl && new URL(resource).origin === new URL(serverUrl).origin ? resource : undefined;
}

export interface WrongUrlOptions {
  /**
   * Also report a server that answered, but not as a context server does (not a 404 and not an
   * authorization server's URL): where nothing else showed it is one. Server errors (5xx) are
   * never taken as a wrong URL.
   */
  answeredOtherwise?: boolean;
}

/**
 * Why `serverUrl` (canonical) is not a context server's URL, given its answer to the probe: a
 * ClientError `not_a_context_server` saying what to give instead, or undefined when it answered as
 * a context server does or nothing shows it is wrong.
 */
export async function wrongServerUrl(
  fetchImpl: typeof fetch,
  serverUrl: string,
  answer: ProbeAnswer,
  options: WrongUrlOptions = {},
): Promise<ClientError | undefined> {
  if (answersAsContextServer(answer) || answer.status >= 500) return undefined;
  const authorizationServer = await authorizationServerPart(fetchImpl, serverUrl);
  const elsewhere = await contextServerAtOrigin(fetchImpl, serverUrl);
  const wrong = (message: string) => new ClientError('not_a_context_server', message);
  if (authorizationServer) {
    const { issuer, part } = authorizationServer;
    const instead = elsewhere ? `here ${elsewhere}` : `e.g. ${issuer.replace(/\/$/, '')}/mcp when it is context-auth serve`;
    return wrong(`${serverUrl} is the authorization server ${issuer} (${part}), not a context server: give the context server's URL instead, ${instead}`);
  }
  const hint = elsewhere ? `; the context server here is ${elsewhere}` : '';
  if (answer.status === 404) return wrong(`nothing at ${serverUrl} (404): is the path right? Context servers usually end in /mcp${hint}`);
  if (!options.answeredOtherwise) return undefined;
  const type = answer.contentType ? ` (${answer.contentType.split(';')[0]!.trim()})` : '';
  const redirect = answer.location ? `, a redirect to ${answer.location}` : '';
  return wrong(
    `${serverUrl} is not a context server: it answered an MCP request with HTTP ${answer.status}${type}${redirect}, not with a 401 asking for a token nor with JSON-RPC${hint}`,
  );
}

/**
 * Checks that `serverUrl` is a context server's URL by sending it an MCP initialize without a
 * token: a ClientError `not_a_context_server` that says what to give instead (nothing there, an
 * authorization server's URL, or a server that does not answer as a context server does), or
 * undefined when it answers as a context server (or with a server error, which says nothing of the URL).
 */
export async function checkContextServerUrl(serverUrl: string, options: { fetch?: typeof fetch } = {}): Promise<ClientError | undefined> {
  const fetchImpl = options.fetch ?? fetch;
  let url: string;
  try {
    url = canonicalizeResourceUri(serverUrl);
  } catch {
    return new ClientError('not_a_context_server', `not a server URL: ${serverUrl}`);
  }
  assertSecureUrl(url, 'the context server URL');
  return wrongServerUrl(fetchImpl, url, await probeServer(fetchImpl, url), { answeredOtherwise: true });
}
