import type { AuthorizationServer } from 'oauth4webapi';
import { authorizationServerMetadataUrls, canonicalizeResourceUri, wellKnownUrl } from '../core/uri.js';
import { findBearerChallenge, findChallenge } from '../core/www-authenticate.js';
import { ClientError, type ClientErrorCode } from './errors.js';
import { assertSecureUrl, getJson } from './http.js';
import { answersAsContextServer, probeServer, wrongServerUrl } from './server-url.js';

/** The protocol version a Revision A client announces on discovery (spec: Context-Protocol-Version). */
export const REVISION_A_VERSION = '2025-03-26';

export interface Discovery {
  /** B: found through protected resource metadata; A: the server is its own authorization server. */
  revision: 'A' | 'B';
  /** The context server URL, canonical. */
  serverUrl: string;
  /** Revision B: the `resource` to send (the metadata's resource identifier). Absent in Revision A. */
  resource?: string;
  resourceMetadataUrl?: string;
  resourceMetadata?: Record<string, unknown>;
  /** Every authorization server the resource named; `issuer` is the one chosen. */
  authorizationServers: string[];
  /** The authorization servers in the order to try them (chooseAuthorizationServers applied); `issuer` is among them. */
  candidates: string[];
  issuer: string;
  authorizationServer: AuthorizationServer;
  /** The scope the 401 challenge asked for, if any. */
  challengeScope?: string;
  /** The 401 challenged with the DPoP scheme and not Bearer (RFC 9449 §7.1): the resource wants DPoP-bound tokens. */
  dpopChallenge?: boolean;
  scopesSupported?: string[];
}

export interface DiscoveryOptions {
  fetch?: typeof fetch;
  /** The WWW-Authenticate of a 401 the server already gave; without it the server is probed. */
  wwwAuthenticate?: string | null;
  /** Orders the authorization servers to try (default: as listed); the first whose metadata loads wins. */
  chooseAuthorizationServers?: (servers: string[]) => string[] | Promise<string[]>;
  /** Told about each step, for progress output. */
  onStep?: (message: string) => void;
}

/**
 * RFC 9728 §3.3: the metadata must be about the server we asked for. We accept its identifier
 * when it is the server's canonical URI or a parent path on the same origin (a resource that
 * covers several endpoints), and nothing else.
 */
function resourceCovers(resource: string, serverUrl: string): boolean {
  let canonical: string;
  try {
    canonical = canonicalizeResourceUri(resource);
  } catch {
    return false;
  }
  if (canonical === serverUrl) return true;
  const a = new URL(canonical);
  const b = new URL(serverUrl);
  if (a.origin !== b.origin || a.search) return false;
  const prefix = a.pathname.replace(/\/$/, '');
  return b.pathname === prefix || b.pathname.startsWith(`${prefix}/`);
}

async function findResourceMetadata(
  fetchImpl: typeof fetch,
  serverUrl: string,
  advertised: string | undefined,
): Promise<{ url: string; body: Record<string, unknown> } | undefined> {
  const origin = new URL(serverUrl).origin;
  const candidates = [
    ...new Set(
      [advertised, wellKnownUrl(serverUrl, 'oauth-protected-resource'), `${origin}/.well-known/oauth-protected-resource`].filter((u): u is string => !!u),
    ),
  ];
  for (const url of candidates) {
    assertSecureUrl(url, 'protected resource metadata');
    const { body } = await getJson(fetchImpl, url);
    if (!body) continue;
    if (typeof body.resource !== 'string' || !resourceCovers(body.resource, serverUrl)) {
      throw new ClientError('metadata_mismatch', `${url} describes ${String(body.resource)}, not ${serverUrl}`);
    }
    return { url, body };
  }
  return undefined;
}

/** RFC 8414 §3.1 path insertion, then OpenID Connect discovery (both its forms), issuer checked. */
export async function fetchAuthorizationServerMetadata(fetchImpl: typeof fetch, issuer: string): Promise<AuthorizationServer | undefined> {
  for (const candidate of authorizationServerMetadataUrls(issuer)) {
    const { body } = await getJson(fetchImpl, candidate);
    if (!body) continue;
    if (body.issuer !== issuer) throw new ClientError('metadata_mismatch', `${candidate} names the issuer ${String(body.issuer)}, not ${issuer}`);
    return body as unknown as AuthorizationServer;
  }
  return undefined;
}

/**
 * Revision A (spec, "Revision A discovery"): metadata at the authorization base URL (the server URL
 * without its path), announced with Context-Protocol-Version; on 404 the default paths there.
 */
async function revisionAMetadata(
  fetchImpl: typeof fetch,
  serverUrl: string,
  onStep: (message: string) => void,
  notContextServer?: () => Promise<ClientError | undefined>,
): Promise<AuthorizationServer> {
  const base = new URL(serverUrl).origin;
  const url = `${base}/.well-known/oauth-authorization-server`;
  onStep(`no protected resource metadata; trying ${url}`);
  const { status, body } = await getJson(fetchImpl, url, { 'Context-Protocol-Version': REVISION_A_VERSION, 'MCP-Protocol-Version': REVISION_A_VERSION });
  if (body) {
    // Revision A servers may put their endpoints under a path (issuer https://host/oauth) while
    // serving the metadata at the origin; the server itself is the trust anchor here, so we ask
    // only that the issuer is on its origin.
    if (typeof body.issuer !== 'string' || !URL.canParse(body.issuer) || new URL(body.issuer).origin !== base) {
      throw new ClientError('metadata_mismatch', `${url} names the issuer ${String(body.issuer)}, which is not on ${base}`);
    }
    return body as unknown as AuthorizationServer;
  }
  if (status !== 404) throw new ClientError('discovery_failed', `${url} answered ${status}`);
  const wrong = await notContextServer?.();
  if (wrong) throw wrong;
  onStep(`no metadata (404): using ${base}/authorize, /token and /register`);
  return {
    issuer: base,
    authorization_endpoint: `${base}/authorize`,
    token_endpoint: `${base}/token`,
    registration_endpoint: `${base}/register`,
  };
}

/** Finds the authorization server for a context server, by Revision B if the server supports it, else Revision A. */
export async function discover(serverUrlInput: string, options: DiscoveryOptions = {}): Promise<Discovery> {
  const fetchImpl = options.fetch ?? fetch;
  let serverUrl: string;
  try {
    serverUrl = canonicalizeResourceUri(serverUrlInput);
  } catch {
    throw new ClientError('discovery_failed', `not a server URL: ${serverUrlInput}`);
  }
  assertSecureUrl(serverUrl, 'the context server URL');

  // Probed (no 401 given): an answer unlike a context server's is checked for a wrong URL first.
  const probed = options.wwwAuthenticate !== undefined ? undefined : await probeServer(fetchImpl, serverUrl);
  if (probed) {
    const wrong = await wrongServerUrl(fetchImpl, serverUrl, probed);
    if (wrong) throw wrong;
  }
  const wwwAuthenticate = probed ? (probed.status === 401 ? probed.wwwAuthenticate : null) : options.wwwAuthenticate;
  // A URL that did not answer as a context server, where discovery then fails or finds only
  // guesses: the URL is wrong, and that is what to say.
  const notContextServer =
    probed && !answersAsContextServer(probed) ? () => wrongServerUrl(fetchImpl, serverUrl, probed, { answeredOtherwise: true }) : undefined;
  try {
    return await discoverFrom(fetchImpl, serverUrl, wwwAuthenticate ?? null, options, notContextServer);
  } catch (error) {
    if (!notContextServer || !(error instanceof ClientError) || !DISCOVERY_FAILURES.has(error.code)) throw error;
    throw (await notContextServer()) ?? error;
  }
}

/** The failures of discovery a wrong URL explains better. */
const DISCOVERY_FAILURES: ReadonlySet<ClientErrorCode> = new Set(['discovery_failed', 'metadata_mismatch', 'no_authorization_server']);

/** Discovery from the server's 401 challenge (or none): its metadata, its authorization servers'. */
async function discoverFrom(
  fetchImpl: typeof fetch,
  serverUrl: string,
  wwwAuthenticate: string | null,
  options: DiscoveryOptions,
  notContextServer: (() => Promise<ClientError | undefined>) | undefined,
): Promise<Discovery> {
  const onStep = options.onStep ?? (() => {});
  const bearer = findBearerChallenge(wwwAuthenticate);
  const dpop = findChallenge(wwwAuthenticate, 'dpop');
  // A resource that takes DPoP only names its metadata and scope in its DPoP challenge.
  const challenge = bearer ?? dpop;
  const challengeScope = challenge?.scope || undefined;
  const dpopChallenge = dpop !== undefined && bearer === undefined;
  onStep(challenge?.resource_metadata ? `401 points to ${challenge.resource_metadata}` : `discovering ${serverUrl}`);

  const prm = await findResourceMetadata(fetchImpl, serverUrl, challenge?.resource_metadata);
  if (!prm) {
    const authorizationServer = await revisionAMetadata(fetchImpl, serverUrl, onStep, notContextServer);
    return {
      revision: 'A',
      serverUrl,
      authorizationServers: [authorizationServer.issuer],
      candidates: [authorizationServer.issuer],
      issuer: authorizationServer.issuer,
      authorizationServer,
      ...(challengeScope ? { challengeScope } : {}),
      ...(dpopChallenge ? { dpopChallenge } : {}),
      ...(Array.isArray(authorizationServer.scopes_supported) ? { scopesSupported: authorizationServer.scopes_supported } : {}),
    };
  }

  const listed = prm.body.authorization_servers;
  if (!Array.isArray(listed) || listed.length === 0 || !listed.every((s) => typeof s === 'string')) {
    throw new ClientError('metadata_mismatch', `${prm.url} lists no authorization_servers`);
  }
  const ordered = options.chooseAuthorizationServers ? await options.chooseAuthorizationServers([...listed]) : [...listed];
  const problems: string[] = [];
  const codes = new Set<ClientErrorCode>();
  for (const issuer of ordered) {
    try {
      assertSecureUrl(issuer, 'the authorization server');
      const authorizationServer = await fetchAuthorizationServerMetadata(fetchImpl, issuer);
      if (!authorizationServer) {
        problems.push(`${issuer}: no metadata`);
        codes.add('no_authorization_server');
        continue;
      }
      onStep(`authorization server ${issuer}`);
      const scopesSupported = prm.body.scopes_supported ?? authorizationServer.scopes_supported;
      return {
        revision: 'B',
        serverUrl,
        resource: canonicalizeResourceUri(prm.body.resource as string),
        resourceMetadataUrl: prm.url,
        resourceMetadata: prm.body,
        authorizationServers: listed,
        candidates: ordered,
        issuer,
        authorizationServer,
        ...(challengeScope ? { challengeScope } : {}),
        ...(dpopChallenge ? { dpopChallenge } : {}),
        ...(Array.isArray(scopesSupported) ? { scopesSupported: scopesSupported as string[] } : {}),
      };
    } catch (error) {
      problems.push(`${issuer}: ${(error as Error).message}`);
      codes.add(error instanceof ClientError ? error.code : 'no_authorization_server');
    }
  }
  // When every server failed the same way (say the one listed names another issuer, or is plain
  // http), that code is kept: a generic no_authorization_server hid metadata_mismatch and insecure_url.
  const code = codes.size === 1 ? [...codes][0]! : 'no_authorization_server';
  throw new ClientError(code, `no usable authorization server for ${serverUrl} (${problems.join('; ')})`);
}

/**
 * The same discovery, with another of the authorization servers the resource lists: its own
 * metadata, fetched and issuer-checked. Credentials bound to `issuer` are only ever sent with what
 * this returns (SEP-2352), never with the metadata of whichever server discovery picked.
 */
export async function discoverIssuer(discovery: Discovery, issuer: string, fetchImpl: typeof fetch = fetch): Promise<Discovery> {
  if (issuer === discovery.issuer) return discovery;
  if (!discovery.authorizationServers.includes(issuer)) {
    throw new ClientError('no_authorization_server', `${discovery.serverUrl} no longer lists the authorization server ${issuer}`);
  }
  assertSecureUrl(issuer, 'the authorization server');
  const authorizationServer = await fetchAuthorizationServerMetadata(fetchImpl, issuer);
  if (!authorizationServer) throw new ClientError('no_authorization_server', `${issuer}: no metadata`);
  const scopesSupported = discovery.resourceMetadata?.scopes_supported ?? authorizationServer.scopes_supported;
  const { scopesSupported: _previous, ...rest } = discovery;
  return { ...rest, issuer, authorizationServer, ...(Array.isArray(scopesSupported) ? { scopesSupported: scopesSupported as string[] } : {}) };
}
