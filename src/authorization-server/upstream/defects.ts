/**
 * What can go wrong upstream, as the upstream steps (flow.ts, registry.ts) return it: a defect
 * with a stable code, a description safe to show the person or send to our client, and the
 * failure behind it for the operator's log. Each caller maps the codes to its own answer once:
 * the sign-in (sign-in.ts), a refresh that checks the session (session.ts), a tool's call
 * (tool-access.ts).
 */
import type { Defect } from '../../core/result.js';

export type UpstreamStep =
  'discovery' | 'authorization response' | 'token exchange' | 'id token validation' | 'userinfo' | 'emails' | 'session check' | 'session renewal';

/** Where a sign-in or a session check failed upstream: for the operator's log, never a token or a response body. */
export interface UpstreamFailure {
  step: UpstreamStep;
  /** The provider's HTTP status, when it answered. */
  status: number | null;
  /** The provider's OAuth error code, or the name of the check that failed. */
  error: string | null;
  reason: string;
}

export function upstreamFailure(step: UpstreamStep, status: number | null, error: string | null, reason: string): UpstreamFailure {
  return { step, status, error, reason };
}

/** The fields of a log line; none when there was no failure upstream. */
export function failureLog(failure: UpstreamFailure | null): { step?: string; status?: number | null; upstream_error?: string | null; reason?: string } {
  return failure ? { step: failure.step, status: failure.status, upstream_error: failure.error, reason: failure.reason } : {};
}

/**
 * - `declined`: the person declined at the provider;
 * - `failed_checks`: the answer does not belong to this sign-in or fails its checks (state, iss,
 *   the ID token, a login that is not the fresh one asked for);
 * - `refused`: the provider no longer honours the grant or the token (invalid_grant, a 401…);
 * - `unavailable`: the provider could not be reached, or failed (5xx): try again shortly;
 * - `misconfigured`: the provider refused our request as malformed, or answered what we cannot
 *   read: the operator's configuration needs attention.
 */
export type UpstreamDefectCode = 'declined' | 'failed_checks' | 'refused' | 'unavailable' | 'misconfigured';

export interface UpstreamDefect extends Defect<UpstreamDefectCode> {
  /** Where upstream it happened, for the log; null when nothing was asked of the provider. */
  failure: UpstreamFailure | null;
}
