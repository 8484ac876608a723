import type { Hono } from 'hono';
import { OAuthError } from '../../core/errors.js';
import { attachNodeRequest } from './body.js';
import { errorResponse, toOAuthError } from './errors.js';
import { withHeaders } from './responses.js';
import type { AuditLog } from '../audit.js';

export type Handler = (request: Request, params: Record<string, string>) => Promise<Response> | Response;

const CORS_HEADERS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Headers': 'Authorization, Content-Type, DPoP, Context-Protocol-Version, MCP-Protocol-Version',
  'Access-Control-Expose-Headers': 'WWW-Authenticate, DPoP-Nonce',
  'Access-Control-Max-Age': '600',
};

const NO_PARAMS: Record<string, string> = Object.freeze({});

/**
 * Registers one path with its methods. Every other method gets 405 with `Allow` (as JSON even on
 * the browser routes: no person follows a link with PUT). What a handler throws becomes a response
 * in http/errors.ts, translated there once (`failed` is told its OAuth error code): OAuth JSON on
 * API routes, on `html` routes (the browser pages) an error page or, once the redirect URI is
 * trusted, a redirect to the client. `cors` routes (metadata, token,
 * registration, revocation) are readable from browsers, and the HTML pages never are.
 */
export function route(
  app: Hono,
  path: string,
  methods: Partial<Record<'GET' | 'POST', Handler>>,
  options: { cors: boolean; html?: boolean; log: AuditLog; failed?: (path: string, code: string) => void },
): void {
  const allowed = Object.keys(methods).join(', ');
  const cors = options.cors ? { ...CORS_HEADERS, 'Access-Control-Allow-Methods': `${allowed}, OPTIONS` } : {};
  // Decoding path parameters costs a little on every request; most paths have none.
  const hasParams = path.includes(':');
  app.all(path, async (c) => {
    const method = c.req.method === 'HEAD' ? 'GET' : c.req.method;
    if (method === 'OPTIONS' && options.cors) return new Response(null, { status: 204, headers: cors });
    const handler = methods[method as 'GET' | 'POST'];
    let response: Response;
    if (!handler) {
      response = errorResponse(new OAuthError('method_not_allowed', `use ${allowed}`, 405, { Allow: allowed }), 'json', options.log);
    } else {
      // Under @hono/node-server, bodies are read from the Node request behind c.req.raw (http/body.ts).
      if (method === 'POST') attachNodeRequest(c.req.raw, (c.env as { incoming?: unknown } | undefined)?.incoming);
      try {
        response = await handler(c.req.raw, hasParams ? (c.req.param() as Record<string, string>) : NO_PARAMS);
      } catch (thrown) {
        const error = toOAuthError(thrown, options.log);
        options.failed?.(path, error.code);
        response = errorResponse(error, options.html ? 'html' : 'json', options.log);
      }
    }
    return options.cors ? withHeaders(response, cors) : response;
  });
}
