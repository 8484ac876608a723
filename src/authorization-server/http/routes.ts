import type { Hono } from 'hono';
import { OAuthError } from '../../core/errors.js';
import { nodeRequestOf, type NodeRequest } from '../../node/request.js';
import { errorAnswer, toOAuthError } from './errors.js';
import { readNodeBody, requestFromNode } from './from-node.js';
import { readWebBody, requestFromWeb, type PeerAddressOf } from './from-web.js';
import type { EdgeSettings, EndpointRequest } from './request.js';
import { toWebResponse, withHeaders, type Answer } from './responses.js';
import type { AuditLog } from '../audit.js';

export type Handler = (request: EndpointRequest, params: Record<string, string>) => Promise<Answer> | Answer;

/** A handler with a check that runs before the body is read (a rate limit: before any work). */
export interface Gated {
  before: (request: EndpointRequest) => Promise<void>;
  handle: Handler;
}

/** How the edge reads requests: the body cap, the trusted proxies, and the `clientAddress` option for Web Requests. */
export type Edge = EdgeSettings & { peerOf?: PeerAddressOf | undefined };

const CORS_HEADERS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Headers': 'Authorization, Content-Type, DPoP, Context-Protocol-Version, MCP-Protocol-Version',
  'Access-Control-Expose-Headers': 'WWW-Authenticate, DPoP-Nonce',
  'Access-Control-Max-Age': '600',
};

const NO_PARAMS: Record<string, string> = Object.freeze({});

/**
 * Registers one path with its methods: the one place a request is read (the edge) and an answer,
 * or what a handler throws, becomes a Response. The request is read from the Node request the server's own
 * listener noted beside it (http/from-node.ts), else from the Web Request (http/from-web.ts); a
 * gated handler's check runs before the body is read. Every other method gets 405 with `Allow`
 * (as JSON even on the browser routes: no person follows a link with PUT). What a handler throws
 * is translated in http/errors.ts once (`failed` is told its OAuth error code): OAuth JSON on API
 * routes, on `html` routes (the browser pages) an error page or, once the redirect URI is trusted,
 * a redirect to the client. `cors` routes (metadata, token, registration, revocation) are readable
 * from browsers, and the HTML pages never are.
 */
export function route(
  app: Hono,
  path: string,
  methods: Partial<Record<'GET' | 'POST', Handler | Gated>>,
  options: { cors: boolean; html?: boolean; log: AuditLog; edge: Edge; failed?: (path: string, code: string) => void },
): void {
  const allowed = Object.keys(methods).join(', ');
  const cors = options.cors ? { ...CORS_HEADERS, 'Access-Control-Allow-Methods': `${allowed}, OPTIONS` } : {};
  const { edge } = options;
  // Decoding path parameters costs a little on every request; most paths have none.
  const hasParams = path.includes(':');
  app.all(path, async (c) => {
    const method = c.req.method === 'HEAD' ? 'GET' : c.req.method;
    if (method === 'OPTIONS' && options.cors) return new Response(null, { status: 204, headers: cors });
    const endpoint = methods[method as 'GET' | 'POST'];
    let answer: Answer;
    if (!endpoint) {
      answer = errorAnswer(new OAuthError('method_not_allowed', `use ${allowed}`, 405, { Allow: allowed }), 'json', options.log);
    } else {
      try {
        const web = c.req.raw;
        const node = readableNode(nodeRequestOf(web, (c.env as { incoming?: unknown } | undefined)?.incoming), method);
        const request = node ? requestFromNode(node, edge) : requestFromWeb(web, edge, edge.peerOf);
        if (typeof endpoint !== 'function') await endpoint.before(request);
        if (method === 'POST') request.body = node ? await readNodeBody(node, request, edge.maxBodyBytes) : await readWebBody(web, request, edge.maxBodyBytes);
        const handle = typeof endpoint === 'function' ? endpoint : endpoint.handle;
        answer = await handle(request, hasParams ? (c.req.param() as Record<string, string>) : NO_PARAMS);
      } catch (thrown) {
        const error = toOAuthError(thrown, options.log);
        options.failed?.(path, error.code);
        answer = errorAnswer(error, options.html ? 'html' : 'json', options.log);
      }
    }
    return toWebResponse(options.cors ? withHeaders(answer, cors) : answer);
  });
}

/** The Node request, unless a POST's body has been begun by someone else (a middleware reading the Web Request): then the Web Request is the one to read. */
function readableNode(node: NodeRequest | undefined, method: string): NodeRequest | undefined {
  if (node === undefined || method !== 'POST') return node;
  return node.readableFlowing === null && !node.readableEnded ? node : undefined;
}
