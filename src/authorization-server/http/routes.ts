import type { Hono } from 'hono';
import { OAuthError } from '../../core/errors.js';
import { errorPage } from '../pages/error.js';
import { toResponse } from '../pages/layout.js';
import { errorJson, toOAuthError } from './responses.js';

export type Handler = (request: Request, params: Record<string, string>) => Promise<Response> | Response;

const CORS_HEADERS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Headers': 'Authorization, Content-Type, Context-Protocol-Version, MCP-Protocol-Version',
  'Access-Control-Expose-Headers': 'WWW-Authenticate',
  'Access-Control-Max-Age': '600',
};

function withHeaders(response: Response, headers: Record<string, string>): Response {
  const result = new Response(response.body, response);
  for (const [key, value] of Object.entries(headers)) result.headers.set(key, value);
  return result;
}

/**
 * Registers one path with its methods. Every other method gets 405 with `Allow`; API routes
 * answer errors as OAuth JSON, `html` routes (the browser pages) as an error page; `cors` routes (metadata, token, registration, revocation) are
 * readable from browsers, and the HTML pages never are.
 */
export function route(
  app: Hono,
  path: string,
  methods: Partial<Record<'GET' | 'POST', Handler>>,
  options: { cors: boolean; html?: boolean; log: (event: Record<string, unknown>) => void },
): void {
  const allowed = Object.keys(methods).join(', ');
  const cors = options.cors ? { ...CORS_HEADERS, 'Access-Control-Allow-Methods': `${allowed}, OPTIONS` } : {};
  app.all(path, async (c) => {
    const method = c.req.method === 'HEAD' ? 'GET' : c.req.method;
    if (method === 'OPTIONS' && options.cors) return new Response(null, { status: 204, headers: cors });
    const handler = methods[method as 'GET' | 'POST'];
    let response: Response;
    if (!handler) {
      response = errorJson(new OAuthError('method_not_allowed', `use ${allowed}`, 405, { Allow: allowed }));
    } else {
      try {
        response = await handler(c.req.raw, c.req.param() as Record<string, string>);
      } catch (error) {
        const oauth = toOAuthError(error, options.log);
        response = options.html ? toResponse(errorPage(oauth.status, oauth.code, oauth.message)) : errorJson(oauth);
      }
    }
    return options.cors ? withHeaders(response, cors) : response;
  });
}
