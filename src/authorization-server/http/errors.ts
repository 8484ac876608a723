import { OAuthError, temporarilyUnavailable } from '../../core/errors.js';
import { isStoreUnavailable } from '../../store/store.js';
import { authorizationResponseUrl } from '../authorization-response.js';
import { errorPage } from '../pages/error.js';
import { pageAnswer } from '../pages/layout.js';
import { json, seeOther, toWebResponse, type Answer } from './responses.js';
import type { AuditLog } from '../audit.js';

export type Log = AuditLog;

/**
 * Turns anything thrown into an OAuthError, and logs what is not one, once: our own pass
 * through; the store being down is 503 temporarily_unavailable (the one place a store failure is
 * translated); anything else is a 500 whose details stay in the log, never the body.
 */
export function toOAuthError(error: unknown, log: Log): OAuthError {
  if (error instanceof OAuthError) return error;
  if (isStoreUnavailable(error)) {
    log({ event: 'store_unavailable', message: error.message });
    return temporarilyUnavailable('the service is temporarily unavailable; try again shortly');
  }
  log({ event: 'internal_error', message: error instanceof Error ? error.message : String(error) });
  return new OAuthError('server_error', 'the server could not complete the request');
}

/**
 * The one place an error becomes an answer (docs/architecture.md). In order:
 * - an error carrying a trusted redirect goes back to the client: 303 with `error`,
 *   `error_description`, `state` (when the request had one) and `iss` (OAuth 2.1 §4.1.2.1, RFC 9207);
 * - on the browser routes (`html`), a page with the message for the person; never a redirect,
 *   since without a trusted redirect URI there is nowhere safe to send the browser;
 * - everywhere else, OAuth JSON with the error's status and headers.
 */
export function errorAnswer(thrown: unknown, format: 'json' | 'html', log: Log): Answer {
  const error = toOAuthError(thrown, log);
  if (error.redirect) {
    const { uri, state, iss } = error.redirect;
    return seeOther(authorizationResponseUrl(uri, { error: error.code, error_description: error.description, state }, iss));
  }
  if (format === 'html') return pageAnswer(errorPage(error.status, error.code, error.userMessage), error.headers);
  return errorJson(error);
}

function errorJson(error: OAuthError): Answer {
  return json(error.toJSON(), error.status, error.headers);
}

/** The answer for a path nobody serves: JSON like every other error, not a framework's text. */
export function notFound(): Response {
  return toWebResponse(notFoundAnswer());
}

export function notFoundAnswer(): Answer {
  return errorJson(new OAuthError('not_found', 'no such endpoint'));
}
