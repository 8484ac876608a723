/**
 * The one protocol error of the project. Checks return their defects (core/result.ts); the
 * endpoint or grant that ran them maps each defect to an OAuthError in one place and throws it,
 * and it is turned into a response in one place
 * (authorization-server/http/errors.ts, `errorAnswer`): a redirect back to the client when the
 * error carries a trusted redirect, else an HTML page on the browser routes, else JSON. So the
 * error carries all that converter needs: the code and description (for the client's developer),
 * a message for the person reading a page, and the redirect target once one is trusted.
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'unsupported_token_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'access_denied'
  | 'login_required'
  | 'consent_required'
  | 'interaction_required'
  | 'request_not_supported'
  | 'request_uri_not_supported'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'invalid_token'
  | 'insufficient_scope'
  | 'invalid_dpop_proof'
  | 'use_dpop_nonce'
  | 'authorization_pending'
  | 'slow_down'
  | 'expired_token'
  | 'server_error'
  | 'temporarily_unavailable'
  | 'method_not_allowed'
  | 'not_found';

const defaultStatus: Partial<Record<OAuthErrorCode, number>> = {
  invalid_client: 401,
  invalid_token: 401,
  insufficient_scope: 403,
  access_denied: 403,
  server_error: 500,
  temporarily_unavailable: 503,
  method_not_allowed: 405,
  not_found: 404,
};

/**
 * Where an authorization error is sent back to (OAuth 2.1 §4.1.2.1): a redirect URI already
 * matched against the client's registration, the request's `state` (null when it had none) and
 * our issuer for `iss` (RFC 9207).
 */
export interface TrustedRedirect {
  uri: string;
  state: string | null;
  iss: string;
}

export class OAuthError extends Error {
  readonly code: OAuthErrorCode;
  readonly status: number;
  /** Extra response headers, e.g. WWW-Authenticate for invalid_client with Basic. */
  readonly headers: Record<string, string>;
  #userMessage: string | undefined;
  #redirect: TrustedRedirect | undefined;

  constructor(code: OAuthErrorCode, description: string, status?: number, headers: Record<string, string> = {}) {
    super(description);
    this.name = 'OAuthError';
    this.code = code;
    this.status = status ?? defaultStatus[code] ?? 400;
    this.headers = headers;
  }

  /** For the client's developer: `error_description` in JSON and in redirects. */
  get description(): string {
    return this.message;
  }

  /** For the person in front of the browser, when the error is shown as a page; the description unless set. */
  get userMessage(): string {
    return this.#userMessage ?? this.message;
  }

  /** Set only once the redirect URI is trusted; until then an error must never redirect. */
  get redirect(): TrustedRedirect | undefined {
    return this.#redirect;
  }

  /** This error with a sentence for the person, where the description is written for developers. */
  withUserMessage(message: string): OAuthError {
    const copy = this.#copy();
    copy.#userMessage = message;
    return copy;
  }

  /**
   * This error, to be sent back to the client's redirect URI instead of shown. Only the code
   * that has matched that URI against the registration may call this.
   */
  redirectTo(target: TrustedRedirect): OAuthError {
    const copy = this.#copy();
    copy.#redirect = { ...target };
    return copy;
  }

  // Copies rather than changing this error: one that was thrown stays what it was.
  #copy(): OAuthError {
    const copy = new OAuthError(this.code, this.message, this.status, { ...this.headers });
    copy.#userMessage = this.#userMessage;
    copy.#redirect = this.#redirect;
    return copy;
  }

  toJSON(): { error: OAuthErrorCode; error_description: string } {
    return { error: this.code, error_description: this.message };
  }
}

/** 503 temporarily_unavailable, to be tried again in `retryAfterSeconds`: something we rely on is down, not the request at fault. */
export function temporarilyUnavailable(description: string, retryAfterSeconds = 5): OAuthError {
  return new OAuthError('temporarily_unavailable', description, 503, { 'Retry-After': String(retryAfterSeconds) });
}

export function isOAuthError(value: unknown): value is OAuthError {
  return value instanceof OAuthError;
}
