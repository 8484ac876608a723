import type { IncomingMessage, ServerResponse } from 'node:http';
import { DEFAULT_MAX_BODY_BYTES, declaresTooMuch } from '../body-limit.js';
import { toMcpAuthInfo, type ProtectedResource } from '../guard.js';
import type { VerifiedToken } from '../types.js';

type Next = (error?: unknown) => void;

/** What the middleware adds to the request: `auth` is the MCP SDK's AuthInfo, `verifiedToken` ours. */
export type AuthenticatedRequest = IncomingMessage & { auth?: ReturnType<typeof toMcpAuthInfo>; verifiedToken?: VerifiedToken };

/**
 * `(req, res, next)` middleware for Express, Connect and plain node:http. It sets `req.auth` in
 * the shape the MCP SDK's StreamableHTTPServerTransport reads, so SDK tools see `extra.authInfo`.
 */
export function nodeBearerAuth(protection: ProtectedResource, options: { requiredScopes?: string[]; maxBodyBytes?: number } = {}) {
  const maxBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  return (req: AuthenticatedRequest, res: ServerResponse, next: Next): void => {
    // Node keeps the first of two Authorization headers but joins two DPoP headers with a comma (refused).
    // Express strips a router's mount path from req.url; the proof names the path the client sent.
    const target = (req as { originalUrl?: string }).originalUrl ?? req.url ?? '/';
    const request = {
      authorization: req.headers.authorization,
      dpop: req.headers.dpop as string | undefined,
      method: req.method ?? 'GET',
      target,
      request: req,
    };
    protection.check(request, options.requiredScopes).then(
      (result) => {
        if (!result.ok) {
          res.writeHead(result.status, result.headers).end(JSON.stringify(result.body));
          return;
        }
        if (!capBody(req, res, maxBytes)) return;
        if (result.headers) for (const [name, value] of Object.entries(result.headers)) res.setHeader(name, value);
        req.verifiedToken = result.auth;
        req.auth = toMcpAuthInfo(result.auth, protection.resource);
        next();
      },
      (error: unknown) => next(error),
    );
  };
}

/**
 * Caps the request body (default 1 MiB): a larger declared length is answered 413 at once; a body
 * that streams past the cap is answered 413 and its connection closed, whoever is reading it (a
 * body parser downstream sees the stream end in an error). False when the request was refused.
 */
function capBody(req: IncomingMessage, res: ServerResponse, maxBytes: number): boolean {
  const refuse = (): void => {
    if (!res.headersSent) {
      res.writeHead(413, { 'Content-Type': 'application/json', Connection: 'close' });
      res.end(JSON.stringify({ error: 'invalid_request', error_description: `the request body is larger than ${maxBytes} bytes` }));
    }
    req.destroy();
  };
  if (declaresTooMuch(req.headers['content-length'], maxBytes)) {
    refuse();
    return false;
  }
  let seen = 0;
  req.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > maxBytes) refuse();
  });
  return true;
}

/** `(req, res, next)` handler that answers GET on the metadata paths and passes everything else on. */
export function nodeProtectedResourceMetadata(protection: ProtectedResource) {
  const body = JSON.stringify(protection.metadata);
  return (req: IncomingMessage, res: ServerResponse, next: Next): void => {
    const path = (req.url ?? '/').split('?')[0]!;
    if ((req.method === 'GET' || req.method === 'HEAD') && protection.metadataPaths.includes(path)) {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'public, max-age=300', 'Access-Control-Allow-Origin': '*' }).end(body);
      return;
    }
    next();
  };
}
