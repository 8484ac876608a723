import { OAuthError } from '../../core/errors.js';
import { StoreUnavailableError } from '../../store/store.js';

/** Token-family responses must never be cached (RFC 6749 §5.1, OAuth 2.1 §3.2.3). */
export const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' } as const;

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json', ...NO_STORE, ...headers },
  });
}

/**
 * Turns anything thrown into an OAuthError: our own pass through; the store being down is 503
 * temporarily_unavailable; anything else is a 500 whose details stay in the log, never the body.
 */
export function toOAuthError(error: unknown, log: (event: Record<string, unknown>) => void): OAuthError {
  if (error instanceof OAuthError) return error;
  if (error instanceof StoreUnavailableError) {
    log({ event: 'store_unavailable', message: error.message });
    return new OAuthError('temporarily_unavailable', 'the service is temporarily unavailable; try again shortly', 503, { 'Retry-After': '5' });
  }
  log({ event: 'internal_error', message: error instanceof Error ? error.message : String(error) });
  return new OAuthError('server_error', 'the server could not complete the request');
}

export function errorJson(error: OAuthError): Response {
  return json(error.toJSON(), error.status, error.headers);
}

/** The answer for a path nobody serves: JSON like every other error, not a framework's text. */
export function notFound(): Response {
  return errorJson(new OAuthError('not_found', 'no such endpoint'));
}
