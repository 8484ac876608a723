/**
 * The audit events: every line the authorization server logs is one of these names, so a new
 * event is added here (the type checker refuses any other name), and a reader (the log file, the
 * store, metrics counted by name) can rely on the list and on the fields every line shares.
 * No event carries a token, a code, a secret or a password: only identifiers.
 */

export type AuditOutcome = 'success' | 'failure';

/** Each event: whether it records something done or something refused or broken, and when it is logged (docs/audit.md). */
export const AUDIT_EVENTS = {
  client_registered: { outcome: 'success', when: 'a client registered itself (dynamic client registration)' },
  client_created: { outcome: 'success', when: 'a workload rule created its client' },
  client_metadata_trimmed: { outcome: 'success', when: 'a registration or a client ID metadata document made a client without some of what it asked for' },
  client_document_failed: { outcome: 'failure', when: 'a client ID metadata document could not be fetched or was refused' },
  client_jwks_failed: { outcome: 'failure', when: "a private_key_jwt client's jwks_uri could not be fetched" },
  client_assertion_refused: { outcome: 'failure', when: 'a client assertion (private_key_jwt) was refused' },
  code_issued: { outcome: 'success', when: 'an authorization code was sent to the client' },
  code_replayed: { outcome: 'failure', when: 'an authorization code was presented a second time (its grant is revoked)' },
  device_authorization: { outcome: 'success', when: 'a device flow began' },
  device_code_replayed: { outcome: 'failure', when: 'a device code was redeemed a second time (its grant is revoked)' },
  device_decision_late: { outcome: 'failure', when: "a person's decision on a device came after the device code expired" },
  user_code_accepted: { outcome: 'success', when: 'a person entered a valid user code' },
  user_code_wrong: { outcome: 'failure', when: 'a person entered a user code that is not pending' },
  user_code_throttled: { outcome: 'failure', when: 'too many wrong user codes: entry refused for a while' },
  login: { outcome: 'success', when: 'a person signed in (password or upstream provider)' },
  login_failed: { outcome: 'failure', when: 'a password sign-in failed' },
  login_throttled: { outcome: 'failure', when: 'a sign-in was refused after too many failures' },
  logout: { outcome: 'success', when: 'a person signed out of the browser session at /account' },
  user_created: { outcome: 'success', when: 'an upstream or trusted-IdP identity became a new local user' },
  consent_granted: { outcome: 'success', when: 'a person approved a client' },
  consent_revoked: { outcome: 'success', when: 'a person revoked a client they had approved, at /account' },
  consent_denied: { outcome: 'failure', when: 'a person denied a client' },
  token_issued: {
    outcome: 'success',
    when: "the token endpoint issued tokens for a new grant, a delegated token, or an ID-JAG (token exchange); or a gateway's upstream got a delegated token",
  },
  token_refreshed: { outcome: 'success', when: 'a refresh token was exchanged for new tokens' },
  refresh_token_reused: { outcome: 'failure', when: 'a rotated refresh token was used again (its grant is revoked)' },
  token_refused: { outcome: 'failure', when: "the token endpoint refused a request (any grant, any client error), or token exchange refused a gateway's" },
  token_revoked: { outcome: 'success', when: 'a client revoked a token' },
  assertion_keys_unavailable: { outcome: 'failure', when: "a trusted issuer's keys could not be fetched (jwt-bearer grant)" },
  upstream_redirect: { outcome: 'success', when: 'a person was sent to an upstream provider to sign in' },
  upstream_warning: { outcome: 'success', when: 'an upstream sign-in went on despite something to note' },
  upstream_refused: { outcome: 'failure', when: 'the sign-in policy refused an upstream identity' },
  upstream_failed: { outcome: 'failure', when: 'an upstream provider could not be asked or answered with an error' },
  upstream_session_ended: { outcome: 'failure', when: 'the upstream sign-in behind a grant ended, so the grant was revoked' },
  cookie_duplicated: { outcome: 'failure', when: 'a request sent one of our cookies twice (one planted by another site or program): read as none' },
  page_form_refused: { outcome: 'failure', when: 'a form was posted to one of our pages from another site (its Origin or Sec-Fetch-Site)' },
  admin_action: { outcome: 'success', when: 'an administrator changed something in the admin console (`action`, and its `target`)' },
  rate_limited: { outcome: 'failure', when: 'a rate limit refused an address' },
  rate_limit_unavailable: { outcome: 'failure', when: 'the store behind a rate limit could not be reached' },
  revocations_poll_failed: { outcome: 'failure', when: 'the revocation list could not be read from the store' },
  store_unavailable: { outcome: 'failure', when: 'a request failed because the store was unreachable' },
  internal_error: { outcome: 'failure', when: 'a request failed on an unexpected error' },
  sweep_failed: { outcome: 'failure', when: 'the periodic sweep of expired records failed (serve)' },
  gateway_tool_called: { outcome: 'success', when: "a tools/call went through a gateway path and its upstream answered (the upstream's HTTP `status`)" },
  gateway_tool_failed: {
    outcome: 'failure',
    when: 'a tools/call went through a gateway path and its upstream could not be reached, did not answer in time, or refused the gateway',
  },
  gateway_tool_refused: { outcome: 'failure', when: 'a gateway path refused a tools/call itself: the token lacks the scopes the policy asks for the tool' },
  gateway_rate_limited: { outcome: 'failure', when: "a person's requests at a gateway path went past the gateway rate limit" },
} as const satisfies Record<string, { outcome: AuditOutcome; when: string }>;

export type AuditEventName = keyof typeof AUDIT_EVENTS;

/** A value an event may carry: plain data, never an object that could hide a secret. */
export type AuditValue = string | number | boolean | null | undefined;

/** The fields with one meaning in every event that has them. */
export interface AuditFields {
  /** Why: a refusal's or failure's reason, in words. */
  reason?: string;
  client_id?: string;
  user_id?: string;
  grant_id?: string;
  /** The client address's bucket (an IPv6 address's /64), as rate limits count it; never more of it. */
  address?: string;
  /** The upstream provider's ID. */
  provider?: string;
}

/** What the code logs: a listed name, the shared fields, and details of its own. */
export type AuditEvent = { event: AuditEventName } & AuditFields & { [detail: string]: AuditValue };

/** An event as written: stamped with its time and outcome. */
export type AuditRecord = { time: string; event: AuditEventName; outcome: AuditOutcome } & AuditFields & { [detail: string]: AuditValue };

export type AuditLog = (event: AuditEvent) => void;

/** Stamps an event with its time (ISO 8601) and the outcome its name stands for; fields left undefined are dropped. */
export function auditRecord(event: AuditEvent, nowMs: number): AuditRecord {
  const record: AuditRecord = { time: new Date(nowMs).toISOString(), event: event.event, outcome: AUDIT_EVENTS[event.event].outcome };
  for (const [key, value] of Object.entries(event)) if (value !== undefined && !(key in record)) record[key] = value;
  return record;
}
