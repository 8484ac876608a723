/**
 * The one error type of the project. Thrown anywhere, turned into a response in one place
 * (authorization-server/http/errors.ts): JSON for API endpoints, a redirect for a trusted
 * authorization request, an HTML page before the redirect URI is trusted.
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

export class OAuthError extends Error {
  readonly code: OAuthErrorCode;
  readonly status: number;
  /** Extra response headers, e.g. WWW-Authenticate for invalid_client with Basic. */
  readonly headers: Record<string, string>;

  constructor(code: OAuthErrorCode, description: string, status?: number, headers: Record<string, string> = {}) {
    super(description);
    this.name = 'OAuthError';
    this.code = code;
    this.status = status ?? defaultStatus[code] ?? 400;
    this.headers = headers;
  }

  get description(): string {
    return this.message;
  }

  toJSON(): { error: OAuthErrorCode; error_description: string } {
    return { error: this.code, error_description: this.message };
  }
}

export function isOAuthError(value: unknown): value is OAuthError {
  return value instanceof OAuthError;
}
