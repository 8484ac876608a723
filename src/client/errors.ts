/** Stable codes for what can go wrong on the client side, so callers can branch without parsing text. */
export type ClientErrorCode =
  | 'discovery_failed'
  /** The URL given is not a context server's: nothing there, an authorization server's, or a server that does not answer as one. */
  | 'not_a_context_server'
  | 'metadata_mismatch'
  | 'no_authorization_server'
  | 'registration_unavailable'
  | 'registration_failed'
  | 'authorization_failed'
  | 'state_mismatch'
  | 'issuer_mismatch'
  | 'authorization_timeout'
  /** The caller stopped a sign-in that was waiting for the person (an AbortSignal). */
  | 'authorization_aborted'
  | 'token_request_failed'
  | 'login_required'
  | 'insecure_url'
  | 'storage_failed'
  /** The jwt-bearer grant's assertion could not be had: its file, its callback, or the identity provider's token exchange. */
  | 'assertion_unavailable'
  /** DPoP was asked for (or the resource requires it) and cannot be had: the authorization server offers no algorithm we sign with, or the MCP SDK would present the token. */
  | 'dpop_unsupported';

export class ClientError extends Error {
  constructor(
    readonly code: ClientErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ClientError';
  }
}

/** A sign-in the caller stopped (its AbortSignal) while it waited for the person. */
export const signInStopped = (): ClientError => new ClientError('authorization_aborted', 'the sign-in was stopped before it finished');
