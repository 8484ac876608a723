/**
 * What the package's own stores share and the public entry point leaves out: how spent records
 * are keyed, one explanation of a failed consume or refresh for every store, and the constants of
 * upkeep. A store for another database needs none of it to pass the suite.
 */
import type {
  DeviceAuthorizationRecord,
  DevicePollResult,
  GrantRecord,
  RefreshRequest,
  RefreshResult,
  RefreshTokenRecord,
  SpentRefreshTokenRecord,
} from './store.js';

/** How many characters of a refresh token's hash (base64url SHA-256) its spent record is found by. */
export const SPENT_KEY_CHARS = 22;

/** The key of a spent record: a prefix of the token's hash. */
export const spentKey = (tokenHash: string): string => tokenHash.slice(0, SPENT_KEY_CHARS);

/**
 * Why a refresh spent nothing, from what stands now: a live token (another client's, expired,
 * its grant revoked, or resting on an unchecked upstream sign-in), else a spent one, else none.
 * One explanation for every store.
 */
export function explainRefreshFailure(
  request: Pick<RefreshRequest, 'clientId' | 'now' | 'upstreamChecked'>,
  live: RefreshTokenRecord | undefined,
  grant: GrantRecord | undefined,
  spent: SpentRefreshTokenRecord | undefined,
): Exclude<RefreshResult, { status: 'ok' }> {
  // A live token comes first: a spent record never stands for a token that is still usable.
  if (live) {
    if (live.clientId !== request.clientId) return { status: 'foreign', record: live };
    if (live.expiresAt <= request.now) return { status: 'expired', record: live };
    if (grant && grant.revokedAt === null && grant.upstreamSessionId !== null && !request.upstreamChecked) return { status: 'upstream', grant, record: live };
    return { status: 'revoked', record: live };
  }
  if (spent) return { status: 'replayed', record: spent };
  return { status: 'missing' };
}

/**
 * Why a consume found nothing to consume, from the record as it stands: missing, already used
 * (a replay), expired, or else its grant was revoked. One explanation for every store.
 */
export function explainConsumeFailure<T extends { consumedAt: number | null; expiresAt: number }>(
  record: T | undefined,
  now: number,
): { status: 'missing' } | { status: 'replayed' | 'expired' | 'revoked'; record: T } {
  if (!record) return { status: 'missing' };
  if (record.consumedAt !== null) return { status: 'replayed', record };
  if (record.expiresAt <= now) return { status: 'expired', record };
  return { status: 'revoked', record };
}

/** Seconds a poll that came too soon adds to a device authorization's interval (RFC 8628 §3.5). */
export const SLOW_DOWN_SECONDS = 5;

/**
 * What a poll of a device authorization finds and changes, for every store (each runs it on the
 * row it holds locked): when the poll came, and the interval grown by SLOW_DOWN_SECONDS after a
 * poll of a pending authorization sooner than the interval allows. Nothing for an expired one.
 */
export function devicePoll(
  record: DeviceAuthorizationRecord,
  now: number,
): { result: DevicePollResult; changed?: Pick<DeviceAuthorizationRecord, 'interval' | 'lastPolledAt'> } {
  if (record.expiresAt <= now) return { result: { status: 'expired', record } };
  const tooSoon = record.status === 'pending' && record.lastPolledAt !== null && now < record.lastPolledAt + record.interval;
  const changed = { interval: record.interval + (tooSoon ? SLOW_DOWN_SECONDS : 0), lastPolledAt: now };
  return { result: { status: tooSoon ? 'slow_down' : record.status, record: { ...record, ...changed } }, changed };
}

/** Seconds a revocation is kept after its last token expired: resource servers' clock tolerance, and a late poll. */
export const REVOCATION_MARGIN = 60;

/** The clock of the methods whose `now` is optional (operators' deletions). */
export const systemNow = (): number => Math.floor(Date.now() / 1000);

/** Clients record their use at most this often (a write per client per day, not per request). */
export const CLIENT_USE_GRANULARITY = 24 * 3600;
