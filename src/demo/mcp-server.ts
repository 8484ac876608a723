import type { Hono } from 'hono';
import { cors } from 'hono/cors';
// The SDK v2 server: it speaks 2026-07-28 (no initialize; server/discover; the version and the
// client in every request's _meta and headers) as well as the 2025 revisions (initialize).
import { McpServer, WebStandardStreamableHTTPServerTransport, createMcpHandler, isLegacyRequest } from '@modelcontextprotocol/server';
import {
  BodyTooLargeError,
  DEFAULT_MAX_BODY_BYTES,
  bodyTooLargeResponse,
  readLimitedText,
  toMcpAuthInfo,
  type ProtectedResource,
  type VerifiedToken,
} from '../resource-server/index.js';

/** The scope every request to the demo needs, and the extra one its admin tool needs (for 403 and step-up). */
export const BASE_SCOPE = 'mcp:tools';
export const ADMIN_SCOPE = 'mcp:admin';
// A Map, not an object: a tool named `__proto__` or `constructor` must find nothing.
const TOOL_SCOPES = new Map<string, string[]>([['admin_report', [BASE_SCOPE, ADMIN_SCOPE]]]);

const startedAt = Date.now();

/**
 * What a tool may do at the upstream identity provider for the person behind a request (see
 * AuthorizationServer.upstreamAccess): the provider's own token, never the one we received.
 */
export interface DemoUpstreamAccess {
  provider: string;
  identity: { subject: string; email: string | null; name: string | null };
  userinfo(): Promise<Record<string, unknown>>;
}

export interface DemoOptions {
  /** Largest request body read, in bytes; a larger one is 413 before it is read. Default 1 MiB. */
  maxBodyBytes?: number;
  /** The upstream access behind a verified token, when the person signed in through a provider. */
  upstream?: ((auth: VerifiedToken) => Promise<DemoUpstreamAccess | null>) | undefined;
  /** The person a token's subject is (username, and a display name where one is known), for whoami. */
  user?: ((subject: string) => Promise<DemoUser | null>) | undefined;
}

/** Who a subject is to a person: the username they sign in with, and their name if known. */
export interface DemoUser {
  username: string;
  name: string | null;
}

const text = (value: Record<string, unknown>) => ({ content: [{ type: 'text' as const, text: JSON.stringify(value) }], structuredContent: value });

/**
 * The demo MCP server: `whoami` shows who the token says you are (and, after an upstream
 * sign-in, who you are there); `admin_report` needs mcp:admin; `upstream_userinfo` calls the
 * identity provider's user-info for you with its own token.
 */
export function createDemoMcpServer(upstreamOf?: () => Promise<DemoUpstreamAccess | null>, userOf?: (subject: string) => Promise<DemoUser | null>): McpServer {
  // Asked for only by the tools that use it (store reads, maybe the provider). An upstream
  // session that ended shows in those tools, not as a failed request.
  const upstream = async (): Promise<DemoUpstreamAccess | Error | null> =>
    upstreamOf ? upstreamOf().catch((error: unknown) => (error instanceof Error ? error : new Error(String(error)))) : null;
  const server = new McpServer({ name: 'context-auth-demo', version: '0.1.0' });
  server.registerTool(
    'whoami',
    { description: 'Who the access token says is calling: username, subject, client, the servers acting for the subject (a delegated token), and scopes.' },
    async (ctx) => {
      const auth = ctx.http?.authInfo;
      const via = await upstream();
      const subject = typeof auth?.extra?.subject === 'string' ? auth.extra.subject : null;
      // A person knows their username, not the id the token carries: both are shown.
      const user = userOf && subject ? await userOf(subject) : null;
      const identity = {
        ...(user ? { username: user.username, name: user.name } : {}),
        subject: auth?.extra?.subject ?? null,
        client_id: auth?.clientId ?? null,
        // A delegated token's: the servers acting for the subject, the one calling first.
        ...(Array.isArray(auth?.extra?.actors) ? { actors: auth.extra.actors } : {}),
        scopes: auth?.scopes ?? [],
        resource: auth?.resource?.href ?? null,
        ...(via instanceof Error ? { upstream_error: via.message } : via ? { upstream: { provider: via.provider, ...via.identity } } : {}),
      };
      return text(identity);
    },
  );
  // Offered only where people sign in through an identity provider.
  if (upstreamOf)
    server.registerTool(
      'upstream_userinfo',
      { description: 'Your profile at the identity provider you signed in with, fetched for you with its own token.' },
      async () => {
        const via = await upstream();
        if (!via) return { isError: true, content: [{ type: 'text', text: 'you did not sign in through an identity provider' }] };
        if (via instanceof Error) return { isError: true, content: [{ type: 'text', text: via.message }] };
        try {
          return text({ provider: via.provider, userinfo: await via.userinfo() });
        } catch (error) {
          return { isError: true, content: [{ type: 'text', text: `the identity provider refused: ${(error as Error).message}` }] };
        }
      },
    );
  server.registerTool('admin_report', { description: `Server facts for operators; needs the ${ADMIN_SCOPE} scope.` }, (ctx) => {
    // The route already refused tokens without the scope; checking again keeps the tool safe if mounted elsewhere.
    if (!ctx.http?.authInfo?.scopes.includes(ADMIN_SCOPE)) {
      return { isError: true, content: [{ type: 'text', text: `needs the ${ADMIN_SCOPE} scope` }] };
    }
    const report = { uptime_seconds: Math.round((Date.now() - startedAt) / 1000), node: process.version };
    return { content: [{ type: 'text', text: JSON.stringify(report) }], structuredContent: report };
  });
  return server;
}

/** The scopes a JSON-RPC body needs beyond the base one: those of the tools it calls. */
function scopesForBody(body: unknown): string[] {
  const messages = Array.isArray(body) ? body : [body];
  const needed = new Set<string>();
  for (const message of messages) {
    if (typeof message !== 'object' || message === null) continue;
    const { method, params } = message as { method?: unknown; params?: { name?: unknown } };
    if (method === 'tools/call' && typeof params?.name === 'string') for (const scope of TOOL_SCOPES.get(params.name) ?? []) needed.add(scope);
  }
  return [...needed];
}

/**
 * Mounts the demo at `path`, behind the bearer guard: the token is checked before anything of the
 * request is read; then the tools it calls decide whether a wider scope is needed (403 with the
 * scopes to step up to). The received token is never passed on to anything upstream.
 */
export function mountDemoMcpServer(app: Hono, path: string, protection: ProtectedResource, options: DemoOptions = {}): void {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const upstreamOf = options.upstream;
  const serverFor = (auth: VerifiedToken) => createDemoMcpServer(upstreamOf ? () => upstreamOf(auth) : undefined, options.user);
  // The verified token behind each modern request, for the factory (which is handed the request back).
  const tokens = new WeakMap<Request, VerifiedToken>();
  // 2026-07-28 requests (the version claimed in _meta): served per request, no initialize before.
  const modern = createMcpHandler(
    ({ requestInfo }) => {
      const auth = requestInfo ? tokens.get(requestInfo) : undefined;
      if (!auth) throw new Error('the demo MCP server was reached without a verified token');
      return serverFor(auth);
    },
    { legacy: 'reject', maxRequestBodySize: maxBodyBytes },
  );
  // 2025-era requests (initialize and what follows it) as before: a fresh server and transport per
  // request, JSON answers. Stateless either way, so any replica can answer any request.
  const legacy = async (request: Request, auth: VerifiedToken, body: unknown): Promise<Response> => {
    const server = serverFor(auth);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    try {
      return await transport.handleRequest(request, { authInfo: toMcpAuthInfo(auth, protection.resource), parsedBody: body });
    } finally {
      void server.close();
    }
  };
  app.use(
    path,
    cors({
      origin: '*',
      // Mcp-Method and Mcp-Name: the request headers 2026-07-28 requires on every POST. DPoP: the
      // proof a DPoP-bound token comes with; DPoP-Nonce: the nonce a browser client must read.
      allowHeaders: ['Authorization', 'DPoP', 'Content-Type', 'Mcp-Protocol-Version', 'Mcp-Method', 'Mcp-Name', 'Mcp-Session-Id', 'Last-Event-ID'],
      exposeHeaders: ['WWW-Authenticate', 'DPoP-Nonce', 'Mcp-Session-Id'],
      allowMethods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
    }),
  );
  app.all(path, async (c) => {
    const request = c.req.raw;
    const base = await protection.authenticate(request, [BASE_SCOPE]);
    if (!base.ok) return base.response;
    // Stateless: no standalone SSE stream (GET) and no session to end (DELETE). A 405 tells an
    // SDK client so; an empty stream would make it reconnect every second forever.
    if (request.method !== 'POST') {
      return Response.json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Method not allowed' } }, { status: 405, headers: { Allow: 'POST' } });
    }
    // Read only up to the cap: a token holder may send anything, and it is not all kept in memory.
    let text: string;
    try {
      text = await readLimitedText(request, maxBodyBytes, (c.env as { incoming?: unknown } | undefined)?.incoming);
    } catch (error) {
      if (error instanceof BodyTooLargeError) return bodyTooLargeResponse(error.maxBytes);
      // The client's connection broke mid-body, or its framing did: a 400, like the cap's 413.
      return Response.json(
        { error: 'invalid_request', error_description: 'the request body could not be read to its end' },
        { status: 400, headers: { Connection: 'close' } },
      );
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (body === undefined) {
      return Response.json({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }, { status: 400 });
    }
    const extra = scopesForBody(body);
    if (extra.length > 0) {
      const stepUp = await protection.authenticate(request, extra);
      if (!stepUp.ok) return stepUp.response;
    }
    if (await isLegacyRequest(request, body, { maxRequestBodySize: maxBodyBytes })) return legacy(request, base.auth, body);
    tokens.set(request, base.auth);
    return modern.fetch(request, { authInfo: toMcpAuthInfo(base.auth, protection.resource), parsedBody: body });
  });
}
