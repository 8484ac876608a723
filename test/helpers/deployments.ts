/**
 * Context server deployments for `doctor` to diagnose: one written here on purpose, which serves
 * the discovery documents the way a real deployment can get them wrong (a wrong issuer, a
 * trailing slash on the resource, the metadata at one well-known form only...), on a loopback
 * port, and a fetch that reaches loopback servers under public https names
 * (https://mcp.example.com → http://127.0.0.1:<port>), so that hosts which connect from their
 * vendors' clouds can be diagnosed too.
 */
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';

/** A fetch that sends requests for these origins to the loopback ports given; the origin asked for goes along as x-test-origin. */
export function publicNames(origins: Record<string, number>): typeof fetch {
  return (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const port = origins[url.origin];
    if (port === undefined) return fetch(request);
    const headers = new Headers(request.headers);
    headers.set('x-test-origin', url.origin);
    const target = `http://127.0.0.1:${port}${url.pathname}${url.search}`;
    return fetch(target, {
      method: request.method,
      headers,
      body: request.body,
      redirect: init?.redirect ?? 'follow',
      duplex: 'half',
      ...(init?.signal ? { signal: init.signal } : {}),
    } as RequestInit);
  };
}

export interface DeploymentFlaws {
  /** The issuer the metadata names (default: the one it is found under). */
  issuer?: string;
  authMethods?: string[];
  /** The protected resource metadata's resource (default: the MCP URL). */
  resource?: string;
  /** Where the protected resource metadata is served (default both well-known forms). */
  metadataAt?: Array<'path' | 'root' | 'other-origin'>;
  /** What the 401's resource_metadata names (default: the path form). */
  challengeNames?: 'path' | 'root' | 'other-origin' | 'nothing';
  /** Leave out authorization_response_iss_parameter_supported. */
  noIss?: true;
  /** code_challenge_methods_supported. */
  pkce?: string[];
  scopes?: string[];
  resourceScopes?: string[];
  documents?: boolean;
  /** No CORS headers: a host in a browser page cannot read the answers. */
  noCors?: true;
  /** Registration refuses redirect URIs that are neither https nor http. */
  httpRedirectsOnly?: true;
  /** The protected resource metadata never finishes its answer, or is far too long. */
  resourceMetadataAnswer?: 'never' | 'huge';
  /** Registration answers RFC 7592 management (registration_client_uri, registration_access_token) and deletes on DELETE. */
  manageable?: true;
}

export const DEPLOYMENT_ORIGIN = 'https://mcp.example.com';
export const OTHER_ORIGIN = 'https://metadata.example.net';
export const MCP_URL = `${DEPLOYMENT_ORIGIN}/mcp`;

/** A deployment at DEPLOYMENT_ORIGIN (its own authorization server), with the flaws asked for; `fetch` reaches it by its names. */
export async function startDeployment(
  flaws: DeploymentFlaws = {},
  origin = DEPLOYMENT_ORIGIN,
): Promise<{
  fetch: typeof fetch;
  registrations: unknown[];
  deleted: Array<{ clientId: string; authorization: string | undefined }>;
  close: () => Promise<void>;
}> {
  const mcpUrl = `${origin}/mcp`;
  const pathForm = `${origin}/.well-known/oauth-protected-resource/mcp`;
  const rootForm = `${origin}/.well-known/oauth-protected-resource`;
  const otherForm = `${OTHER_ORIGIN}/mcp-metadata`;
  const at = flaws.metadataAt ?? ['path', 'root'];
  const named = { path: pathForm, root: rootForm, 'other-origin': otherForm, nothing: undefined }[flaws.challengeNames ?? 'path'];
  const registrations: unknown[] = [];
  const deleted: Array<{ clientId: string; authorization: string | undefined }> = [];
  const resourceMetadata = {
    resource: flaws.resource ?? mcpUrl,
    authorization_servers: [origin],
    scopes_supported: flaws.resourceScopes ?? ['mcp:tools'],
  };
  const scopes = flaws.scopes ?? ['mcp:tools', 'offline_access'];
  const serverMetadata = {
    issuer: flaws.issuer ?? origin,
    authorization_endpoint: `${origin}/authorize`,
    token_endpoint: `${origin}/token`,
    registration_endpoint: `${origin}/register`,
    scopes_supported: scopes,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: flaws.authMethods ?? ['none', 'client_secret_post', 'client_secret_basic', 'private_key_jwt'],
    token_endpoint_auth_signing_alg_values_supported: ['RS256', 'ES256'],
    code_challenge_methods_supported: flaws.pkce ?? ['S256'],
    client_id_metadata_document_supported: flaws.documents ?? true,
    ...(flaws.noIss ? {} : { authorization_response_iss_parameter_supported: true }),
  };

  const app = new Hono();
  if (!flaws.noCors) {
    app.use(async (c, next) => {
      await next();
      c.res.headers.set('Access-Control-Allow-Origin', '*');
      c.res.headers.set('Access-Control-Expose-Headers', 'WWW-Authenticate');
    });
  }
  const from = (c: { req: { header(name: string): string | undefined } }) => c.req.header('x-test-origin') ?? origin;
  app.all('/mcp', (c) => {
    const challenge = named ? `Bearer resource_metadata="${named}", scope="mcp:tools"` : 'Bearer realm="mcp"';
    return c.json({ error: 'unauthorized' }, 401, { 'WWW-Authenticate': challenge });
  });
  const metadata = (form: 'path' | 'root' | 'other-origin') => (c: Parameters<typeof from>[0] & { json: (body: unknown, status?: number) => Response }) => {
    const onOther = from(c) === OTHER_ORIGIN;
    if (!at.includes(form) || (form === 'other-origin') !== onOther) return c.json({ error: 'not_found' }, 404);
    if (flaws.resourceMetadataAnswer === 'never')
      return new Response(new ReadableStream({ start: () => {} }), { headers: { 'content-type': 'application/json' } });
    if (flaws.resourceMetadataAnswer === 'huge') return c.json({ ...resourceMetadata, padding: 'x'.repeat(1024 * 1024) });
    return c.json(resourceMetadata);
  };
  app.get('/.well-known/oauth-protected-resource/mcp', metadata('path'));
  app.get('/.well-known/oauth-protected-resource', metadata('root'));
  app.get('/mcp-metadata', metadata('other-origin'));
  app.get('/.well-known/oauth-authorization-server', (c) => c.json(serverMetadata));
  app.post('/register', async (c) => {
    const body = (await c.req.json()) as Record<string, unknown>;
    const uris = (body.redirect_uris ?? []) as string[];
    const odd = uris.find((uri) => !/^https?:/.test(uri));
    if (flaws.httpRedirectsOnly && odd) return c.json({ error: 'invalid_redirect_uri', error_description: `scheme not allowed: ${odd}` }, 400);
    registrations.push(body);
    const clientId = `client-${registrations.length}`;
    const management = flaws.manageable
      ? { registration_client_uri: `${origin}/register/${clientId}`, registration_access_token: `management-${clientId}` }
      : {};
    return c.json({ ...body, client_id: clientId, ...management }, 201);
  });
  app.delete('/register/:id', (c) => {
    deleted.push({ clientId: c.req.param('id'), authorization: c.req.header('authorization') });
    return c.body(null, 204);
  });
  app.notFound((c) => c.json({ error: 'not_found' }, 404));

  const { server, port } = await new Promise<{ server: ServerType; port: number }>((resolve) => {
    const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => resolve({ server, port: info.port }));
  });
  return {
    fetch: publicNames({ [origin]: port, [OTHER_ORIGIN]: port, [origin.replace('https:', 'http:')]: port }),
    registrations,
    deleted,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // An answer that never finishes holds its connection: cut it.
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}
