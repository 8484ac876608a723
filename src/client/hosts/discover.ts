/**
 * Discovery as one host profile runs it: the request without a token, the protected resource
 * metadata where the host looks for it, its `resource` compared as the host compares it, and the
 * authorization server's metadata where the host looks for it. Stops at the first step the host
 * would not get past, and says what the server answered and what would fix it.
 */
import { parseWwwAuthenticate } from '../../core/www-authenticate.js';
import { answered, type ProbeAnswer, type Prober } from './prober.js';
import { authorizationServerMetadataUrl, resourceMatches, resourceMetadataUrl } from './rules.js';
import type { HostProfile } from './types.js';

/** Where a host stops, in words for a table. */
export interface StepFailure {
  step: string;
  /** What the server answered. */
  answered: string;
  /** The fix, in one line. */
  fix: string;
}

export interface HostDiscovery {
  /** The status of the request without a token. */
  probeStatus: number;
  /** The 401's `resource_metadata` and `scope`, when it had them. */
  challenge?: { resourceMetadata?: string; scope?: string };
  resourceMetadataUrl?: string;
  resourceMetadata?: Record<string, unknown>;
  /** The authorization server the host uses: the first the metadata lists. */
  issuer?: string;
  authorizationServerMetadataUrl?: string;
  authorizationServer?: Record<string, unknown>;
  failure?: StepFailure;
}

/** The initialize request an MCP host sends first, without a token. */
export const INITIALIZE_REQUEST = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'context-auth doctor', version: '0' } },
};

/** The challenge's parameters, from whichever challenge names the resource metadata (Bearer first). */
function readChallenge(header: string | null): { resourceMetadata?: string; scope?: string } | undefined {
  if (!header) return undefined;
  let challenges;
  try {
    challenges = parseWwwAuthenticate(header);
  } catch {
    return undefined;
  }
  const ordered = [...challenges.filter((c) => c.scheme === 'bearer'), ...challenges.filter((c) => c.scheme !== 'bearer')];
  const found = ordered.find((c) => c.params.resource_metadata) ?? ordered[0];
  if (!found) return undefined;
  return {
    ...(found.params.resource_metadata ? { resourceMetadata: found.params.resource_metadata } : {}),
    ...(found.params.scope ? { scope: found.params.scope } : {}),
  };
}

function corsProblem(answer: ProbeAnswer, origin: string, readsHeader?: string): string | undefined {
  const allowed = answer.headers.get('access-control-allow-origin');
  if (allowed !== '*' && allowed !== origin) return `no Access-Control-Allow-Origin for ${origin}`;
  if (readsHeader) {
    const exposed = (answer.headers.get('access-control-expose-headers') ?? '')
      .toLowerCase()
      .split(',')
      .map((h) => h.trim());
    if (!exposed.includes('*') && !exposed.includes(readsHeader.toLowerCase())) return `${readsHeader} is not in Access-Control-Expose-Headers`;
  }
  return undefined;
}

export async function discoverAsHost(profile: HostProfile, mcpUrl: string, prober: Prober): Promise<HostDiscovery> {
  const { discovery } = profile;
  const headers = { ...discovery.headers, ...(profile.browserOrigin ? { origin: profile.browserOrigin } : {}) };
  const get = (url: string) => prober.request({ method: 'GET', url, headers, follow: true });
  const cors = (answer: ProbeAnswer, what: string, readsHeader?: string): StepFailure | undefined => {
    const problem = profile.browserOrigin ? corsProblem(answer, profile.browserOrigin, readsHeader) : undefined;
    return problem
      ? {
          step: 'CORS',
          answered: `${what}: ${problem}`,
          fix: `send CORS headers on discovery answers: ${profile.host} runs in a browser page at ${profile.browserOrigin}`,
        }
      : undefined;
  };

  const probe = await prober.request({
    method: discovery.probe === 'POST initialize' ? 'POST' : discovery.probe,
    url: mcpUrl,
    headers,
    ...(discovery.probe === 'POST initialize' ? { body: INITIALIZE_REQUEST } : {}),
  });
  const result: HostDiscovery = { probeStatus: probe.status };
  const fail = (failure: StepFailure): HostDiscovery => ({ ...result, failure });
  if (probe.status !== 401) {
    return fail({
      step: '401 challenge',
      answered: `${discovery.probe} ${mcpUrl}: ${answered(probe)}`,
      fix: 'answer a request without a token with 401 and WWW-Authenticate: Bearer resource_metadata="…"',
    });
  }
  const corsFailure = cors(probe, `${discovery.probe} ${mcpUrl}`, 'WWW-Authenticate');
  if (corsFailure) return fail(corsFailure);
  const challenge = readChallenge(probe.headers.get('www-authenticate'));
  if (challenge) result.challenge = challenge;

  // The protected resource metadata, where this host looks for it.
  const tried: string[] = [];
  const triedUrls = new Set<string>();
  let ignored: string | undefined;
  for (const source of discovery.resourceMetadata) {
    let url: string | undefined;
    if (source === 'challenge' || source === 'challenge-same-origin') {
      url = challenge?.resourceMetadata;
      if (!url) continue;
      let sameOrigin = false;
      try {
        sameOrigin = new URL(url, mcpUrl).origin === new URL(mcpUrl).origin;
      } catch {
        sameOrigin = false;
      }
      if (source === 'challenge-same-origin' && !sameOrigin) {
        ignored = url;
        continue;
      }
      url = new URL(url, mcpUrl).href;
    } else {
      url = resourceMetadataUrl(source, mcpUrl);
    }
    if (triedUrls.has(url)) continue;
    triedUrls.add(url);
    const answer = await get(url);
    tried.push(`${url} ${answered(answer)}`);
    if (answer.status !== 200 || !answer.json) continue;
    const corsFailed = cors(answer, url);
    if (corsFailed) return fail(corsFailed);
    result.resourceMetadataUrl = url;
    result.resourceMetadata = answer.json;
    break;
  }
  if (!result.resourceMetadata) {
    const looked = tried.length > 0 ? tried.join('; ') : 'nowhere: the 401 named no resource_metadata';
    return fail({
      step: 'protected resource metadata',
      answered: `${ignored ? `ignored the 401's resource_metadata on another origin (${ignored}); ` : ''}${looked}`,
      fix: ignored
        ? `serve the protected resource metadata on ${new URL(mcpUrl).origin} too: ${profile.host} follows resource_metadata only on the MCP URL's origin`
        : `serve it at ${resourceMetadataUrl('path', mcpUrl)} and name it in the 401's resource_metadata`,
    });
  }

  const metadata = result.resourceMetadata;
  if (typeof metadata.resource !== 'string') {
    return fail({ step: 'resource', answered: `${result.resourceMetadataUrl} has no resource`, fix: `give it "resource": "${mcpUrl}"` });
  }
  if (!resourceMatches(discovery.resourceRule, metadata.resource, mcpUrl)) {
    return fail({
      step: 'resource',
      answered: `${result.resourceMetadataUrl} names ${metadata.resource}, not ${mcpUrl}`,
      fix: `make the metadata's resource exactly the URL people type: "${mcpUrl}"`,
    });
  }
  const servers = metadata.authorization_servers;
  if (!Array.isArray(servers) || typeof servers[0] !== 'string' || !URL.canParse(servers[0])) {
    return fail({
      step: 'protected resource metadata',
      answered: `${result.resourceMetadataUrl} lists no authorization_servers`,
      fix: 'list the authorization server in authorization_servers',
    });
  }
  const issuer = servers[0];
  result.issuer = issuer;

  // The authorization server's metadata, where this host looks for it.
  const looked: string[] = [];
  const lookedUrls = new Set<string>();
  for (const source of discovery.authorizationServerMetadata) {
    const url = authorizationServerMetadataUrl(source, issuer);
    if (lookedUrls.has(url)) continue;
    lookedUrls.add(url);
    const answer = await get(url);
    looked.push(`${url} ${answered(answer)}`);
    if (answer.status !== 200 || !answer.json) continue;
    const corsFailed = cors(answer, url);
    if (corsFailed) return fail(corsFailed);
    result.authorizationServerMetadataUrl = url;
    result.authorizationServer = answer.json;
    break;
  }
  if (!result.authorizationServer) {
    return fail({
      step: 'authorization server metadata',
      answered: looked.join('; '),
      fix: `serve RFC 8414 metadata at ${authorizationServerMetadataUrl('oauth-path', issuer)}`,
    });
  }
  const named = result.authorizationServer.issuer;
  if (discovery.checksIssuer && (typeof named !== 'string' || !sameIssuer(named, issuer))) {
    return fail({
      step: 'issuer',
      answered: `${result.authorizationServerMetadataUrl} names the issuer ${String(named)}, not ${issuer}`,
      fix: `make issuer exactly ${issuer}, the URL its metadata is found under (RFC 8414 §3.3)`,
    });
  }
  return result;
}

/** Issuer identifiers compared as RFC 8414 asks, a lone trailing slash at the root aside (as rmcp does). */
export function sameIssuer(a: string, b: string): boolean {
  const trim = (issuer: string) => (/^[a-z][a-z0-9+.-]*:\/\/[^/]+\/$/i.test(issuer) ? issuer.slice(0, -1) : issuer);
  return trim(a) === trim(b);
}
