/**
 * What every answer must be, whatever was asked: never a 5xx; always an answer, in time; no stack
 * trace; and an error a program or a person can read — OAuth JSON with an `error` string at the
 * API endpoints, an HTML page on the browser pages (405 is JSON there too, http/routes.ts), and
 * at /mcp the guard's OAuth JSON or a JSON-RPC error. Node's own HTTP parser may refuse a broken
 * message before the app sees it, and so may the Hono adapter when the request cannot be made a
 * URL: a bare 4xx status with no body.
 */
import type { FuzzResponse } from './http.js';

const JSON_PATHS = new Set(['/token', '/register', '/revoke', '/introspect', '/revocations', '/jwks', '/.well-known/oauth-authorization-server']);
const HTML_PATH = /^\/(authorize|interaction\/[^/]+|upstream\/callback)$/;
const PARSER_STATUSES = new Set([400, 413, 414, 417, 431, 501, 505]);
const STACK_TRACE = /\n\s+at [^\n]+:\d+:\d+|node:internal|\bat async\b/;

function pathOf(target: string): string | null {
  try {
    return new URL(target, 'http://host').pathname;
  } catch {
    return null;
  }
}

function jsonError(body: string, mcp: boolean): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return 'an error answered as application/json that is not JSON';
  }
  const error = (parsed as { error?: unknown } | null)?.error;
  if (typeof error === 'string' && error.length > 0) return null;
  // JSON-RPC errors (the MCP transport), one or a batch of them.
  const rpc = (value: unknown) => typeof (value as { error?: { code?: unknown } } | null)?.error?.code === 'number';
  if (mcp && (rpc(parsed) || (Array.isArray(parsed) && parsed.length > 0 && parsed.every(rpc)))) return null;
  return 'an error body without an `error` string';
}

/** Null when the answer is acceptable; otherwise what is wrong with it. */
export function problemWith(method: string, target: string, response: FuzzResponse | null, timedOut: boolean): string | null {
  // Node answers CONNECT only when the server listens for it (a proxy); otherwise it closes.
  if (!response && !timedOut && method === 'CONNECT') return null;
  if (!response) return timedOut ? 'no answer in time' : 'the connection closed without an answer';
  const { status, headers } = response;
  if (status >= 500) return `HTTP ${status}`;
  const body = response.body.toString('utf8');
  if (STACK_TRACE.test(body)) return 'a stack trace in the body';
  if (status < 400 || method.toUpperCase() === 'HEAD') return null;
  const type = (headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  // Refused before any route: by Node's parser, or by the Hono adapter when the request cannot be a URL (a bad Host, a backslash).
  if ((!type || type === 'text/plain') && body.length === 0 && PARSER_STATUSES.has(status)) return null;
  const path = pathOf(target);
  const mcp = path === '/mcp';
  if (path !== null && HTML_PATH.test(path) && status !== 405 && type !== 'text/html')
    return `HTTP ${status} as ${type || 'untyped'} on a browser page, not HTML`;
  if (path !== null && JSON_PATHS.has(path) && type !== 'application/json') return `HTTP ${status} as ${type || 'untyped'} at an OAuth endpoint, not JSON`;
  if (type === 'application/json') return jsonError(body, mcp);
  if (type === 'text/html') return /^\s*<!doctype html>/i.test(body) && /<\/html>\s*$/i.test(body) ? null : 'an HTML error that is not a whole page';
  return `HTTP ${status} as ${type || 'untyped'}, neither JSON nor HTML`;
}
