/**
 * The checks of a deployment that no single host profile makes: every discovery document at every
 * place some host looks, read strictly, and what each one's absence costs.
 */
import { isLoopbackHost } from '../../core/uri.js';
import { INITIALIZE_REQUEST, sameIssuer } from './discover.js';
import { answered, type Prober } from './prober.js';
import { authorizationServerMetadataUrl, resourceMatches, resourceMetadataUrl } from './rules.js';

export interface ServerCheck {
  check: string;
  /** `fails`: some host is refused for it; `warning`: some host takes a longer way or asks for more; `info`: nothing depends on it here. */
  result: 'ok' | 'fails' | 'warning' | 'info';
  detail: string;
}

const strings = (value: unknown): string[] | undefined => (Array.isArray(value) && value.every((v) => typeof v === 'string') ? (value as string[]) : undefined);

export async function serverChecks(mcpUrl: string, prober: Prober): Promise<ServerCheck[]> {
  const checks: ServerCheck[] = [];
  const add = (check: string, result: ServerCheck['result'], detail: string) => checks.push({ check, result, detail });
  const get = (url: string) => prober.request({ method: 'GET', url, follow: true });
  const url = new URL(mcpUrl);

  if (url.protocol === 'https:') add('https', 'ok', mcpUrl);
  else if (isLoopbackHost(url.hostname))
    add('https', 'warning', 'plain http on this machine: hosts running here connect; ChatGPT and claude.ai need a public https URL');
  else add('https', 'fails', `plain http on ${url.hostname}: the MCP specification asks for https, and mcp-remote refuses it`);

  const probe = await prober.request({ method: 'POST', url: mcpUrl, body: INITIALIZE_REQUEST });
  const header = probe.headers.get('www-authenticate');
  const resourceMetadata = header ? /resource_metadata="([^"]*)"/i.exec(header)?.[1] : undefined;
  if (probe.status !== 401) add('401 challenge', 'fails', `a request without a token: ${answered(probe)}`);
  else if (!resourceMetadata)
    add('401 challenge', 'fails', `401 without resource_metadata (WWW-Authenticate: ${header ?? 'absent'}); hosts fall back to the well-known URLs`);
  else {
    const sameOrigin = URL.canParse(resourceMetadata, mcpUrl) && new URL(resourceMetadata, mcpUrl).origin === url.origin;
    add(
      '401 challenge',
      sameOrigin ? 'ok' : 'warning',
      sameOrigin ? `resource_metadata ${resourceMetadata}` : `resource_metadata ${resourceMetadata} is on another origin: Codex and Goose ignore it`,
    );
  }

  const pathForm = resourceMetadataUrl('path', mcpUrl);
  const rootForm = resourceMetadataUrl('root', mcpUrl);
  const atPath = await get(pathForm);
  add(
    'protected resource metadata (path form)',
    atPath.status === 200 && atPath.json ? 'ok' : 'fails',
    `${pathForm}: ${answered(atPath)}${atPath.status === 200 && atPath.json ? '' : ' (ChatGPT reads only this one)'}`,
  );
  let prm = atPath.json;
  if (pathForm !== rootForm) {
    const atRoot = await get(rootForm);
    add('protected resource metadata (root form)', atRoot.status === 200 && atRoot.json ? 'ok' : 'info', `${rootForm}: ${answered(atRoot)}`);
    prm ??= atRoot.json;
  }
  if (!prm && resourceMetadata && URL.canParse(resourceMetadata, mcpUrl)) prm = (await get(new URL(resourceMetadata, mcpUrl).href)).json;
  if (!prm) return checks;

  if (typeof prm.resource !== 'string') add('resource', 'fails', 'the protected resource metadata has no resource');
  else if (resourceMatches('same-url', prm.resource, mcpUrl)) add('resource', 'ok', prm.resource);
  else add('resource', 'fails', `${prm.resource} is not the URL as typed, ${mcpUrl}: VS Code, Gemini CLI and Codex refuse it`);

  const issuer = strings(prm.authorization_servers)?.[0];
  if (!issuer || !URL.canParse(issuer)) {
    add('authorization servers', 'fails', 'the protected resource metadata lists no authorization_servers');
    return checks;
  }
  const oauthUrl = authorizationServerMetadataUrl('oauth-path', issuer);
  const oauth = await get(oauthUrl);
  add('authorization server metadata (RFC 8414)', oauth.status === 200 && oauth.json ? 'ok' : 'warning', `${oauthUrl}: ${answered(oauth)}`);
  let oidc: Record<string, unknown> | undefined;
  let oidcUrl = authorizationServerMetadataUrl('oidc-path', issuer);
  for (const source of ['oidc-path', 'oidc-appended'] as const) {
    oidcUrl = authorizationServerMetadataUrl(source, issuer);
    const answer = await get(oidcUrl);
    oidc = answer.status === 200 ? answer.json : undefined;
    if (oidc) break;
  }
  add('OpenID discovery', oidc ? 'ok' : 'info', oidc ? oidcUrl : `not served (the hosts here read RFC 8414 metadata first)`);
  const server = oauth.json ?? oidc;
  if (!server) {
    add('authorization server', 'fails', `no metadata for ${issuer}`);
    return checks;
  }
  for (const [name, document, at] of [
    ['RFC 8414', oauth.json, oauthUrl],
    ['OpenID', oidc, oidcUrl],
  ] as const) {
    if (!document) continue;
    const ok = typeof document.issuer === 'string' && sameIssuer(document.issuer, issuer);
    add(
      `issuer (${name})`,
      ok ? 'ok' : 'fails',
      ok ? issuer : `${at} names ${String(document.issuer)}, not ${issuer}, the URL it was found under: Codex and Goose refuse it`,
    );
  }

  const pkce = strings(server.code_challenge_methods_supported);
  add(
    'PKCE S256',
    pkce?.includes('S256') ? 'ok' : 'fails',
    pkce
      ? `code_challenge_methods_supported ${JSON.stringify(pkce)}`
      : 'code_challenge_methods_supported is absent: the MCP specification tells clients to refuse',
  );
  const methods = strings(server.token_endpoint_auth_methods_supported) ?? [];
  add(
    'none (public clients)',
    methods.includes('none') ? 'ok' : 'warning',
    methods.includes('none')
      ? 'listed'
      : `token_endpoint_auth_methods_supported ${JSON.stringify(methods)}: Claude, Claude Code and Codex use their documents only where none is listed`,
  );
  const documents = server.client_id_metadata_document_supported === true;
  add(
    'client ID metadata documents',
    documents ? 'ok' : 'warning',
    documents ? 'advertised' : 'not advertised: ChatGPT and Copilot CLI connect only by document',
  );
  const registration = typeof server.registration_endpoint === 'string';
  add(
    'dynamic registration',
    registration ? 'ok' : 'warning',
    registration ? String(server.registration_endpoint) : 'no registration_endpoint: Cursor, Gemini CLI, mcp-remote and the Inspector register',
  );
  const iss = server.authorization_response_iss_parameter_supported === true;
  add(
    'RFC 9207 iss',
    iss ? 'ok' : 'warning',
    iss
      ? 'advertised; that it comes back on the redirect is not checked without a sign-in'
      : 'not advertised: ChatGPT and Codex then use a redirect URI per server',
  );
  const scopes = strings(server.scopes_supported);
  if (scopes) {
    add(
      'offline_access',
      scopes.includes('offline_access') ? 'ok' : 'warning',
      scopes.includes('offline_access') ? 'listed' : 'not in scopes_supported: ChatGPT asks for it anyway',
    );
    const resourceScopes = strings(prm.scopes_supported) ?? [];
    const unlisted = resourceScopes.filter((scope) => !scopes.includes(scope));
    add(
      'scopes',
      unlisted.length === 0 ? 'ok' : 'fails',
      unlisted.length === 0
        ? `${JSON.stringify(scopes)}`
        : `the protected resource advertises ${unlisted.join(' ')}, which the authorization server does not list`,
    );
  }
  return checks;
}
