/**
 * The upstream session behind our grants: its lifetime, and its tokens checked (renewed when they
 * expire) before we honour a grant that rests on it: at every refresh, and when a tool asks for
 * the upstream access token. When the upstream refuses, or the session outlived its maximum, the
 * grant is revoked and the client must send the person through sign-in again.
 */
import { OAuthError, temporarilyUnavailable } from '../../core/errors.js';
import { unreachable } from '../../core/result.js';
import type { GrantRecord, SessionRecord, UpstreamSessionRecord } from '../../store/store.js';
import type { Revocations } from '../revocations.js';
import type { BaseServices } from '../services.js';
import { failureLog, type UpstreamDefect, type UpstreamFailure } from './defects.js';
import { checkUpstream, type UpstreamTokens } from './flow.js';
import type { UpstreamServices } from './upstream-sign-in.js';

/** What ending a grant whose upstream sign-in is over needs, beside upstream sign-in itself. */
export type UpstreamGrantServices = Pick<BaseServices, 'store' | 'now' | 'log'> & UpstreamServices & { revocations: Revocations };

/**
 * The grant's upstream tokens, current; revokes the grant and throws invalid_grant when the
 * upstream session is over. `probe: false` renews an expiring token but skips asking user-info
 * whether a live one still stands: for a caller about to use it, whose own call will tell.
 */
export async function upstreamTokensOfGrant(
  ctx: UpstreamGrantServices,
  grant: GrantRecord,
  options: { probe?: boolean; session?: UpstreamSessionRecord } = {},
): Promise<UpstreamTokens> {
  const { store, now, log } = ctx;
  const end = async (reason: string, failure: UpstreamFailure | null = null): Promise<never> => {
    await ctx.revocations.revokeGrant(grant.id, now());
    log({ event: 'upstream_session_ended', grant_id: grant.id, client_id: grant.clientId, reason, ...failureLog(failure) });
    throw new OAuthError('invalid_grant', `${reason}; sign in again`);
  };
  const upstream = ctx.upstream;
  if (!upstream || grant.upstreamSessionId === null) return end('the grant rests on an upstream sign-in this server no longer offers');
  const session = options.session ?? (await store.getUpstreamSession(grant.upstreamSessionId));
  if (!session) return end('the upstream sign-in behind this grant is gone');
  if (session.expiresAt <= now()) return end('the upstream sign-in behind this grant reached its maximum lifetime');
  if (!upstream.providers.has(session.provider)) return end(`the upstream provider ${session.provider} is no longer configured`);

  const opened = upstream.secretBox.open(session.sealedTokens, session.id);
  // Our own record that our keys do not open (a key dropped too soon): the deployment's fault, not the request's.
  if (!opened.ok) throw new Error(`the sealed tokens of an upstream session cannot be opened: ${opened.defect.description}`);
  const tokens = JSON.parse(opened.value) as UpstreamTokens;
  const up = await upstream.providers.get(session.provider);
  const check = up.ok ? await checkUpstream(up.value, session.subject, tokens, now(), { probe: options.probe ?? true }) : up;
  if (!check.ok) {
    if (check.defect.code === 'refused') return end(check.defect.description, check.defect.failure);
    // The provider could not be asked, or answered what we cannot take: the grant is kept, and the operator is told why.
    const error = sessionCheckError(check.defect);
    log({
      event: 'upstream_failed',
      provider: session.provider,
      grant_id: grant.id,
      client_id: grant.clientId,
      error: error.code,
      ...failureLog(check.defect.failure),
    });
    throw error;
  }
  if (check.value.status === 'renewed') {
    const renewed = check.value.tokens;
    await store.updateUpstreamSessionTokens(session.id, upstream.secretBox.seal(JSON.stringify(renewed), session.id));
    return renewed;
  }
  // Re-seal under the newest key when the operator rotated it, so the old key can be dropped.
  if (upstream.secretBox.isStale(session.sealedTokens)) {
    await store.updateUpstreamSessionTokens(session.id, upstream.secretBox.seal(JSON.stringify(tokens), session.id));
  }
  return tokens;
}

/**
 * What a refresh is answered when the upstream session could not be checked: a refusal ends the
 * grant (above), a provider down is temporarily_unavailable, one that answered what fails our
 * checks is access_denied, one misconfigured is server_error.
 */
function sessionCheckError(defect: UpstreamDefect): OAuthError {
  switch (defect.code) {
    case 'refused':
    case 'declined':
    case 'failed_checks':
      return new OAuthError('access_denied', defect.description);
    case 'unavailable':
      return temporarilyUnavailable(defect.description);
    case 'misconfigured':
      return new OAuthError('server_error', defect.description);
    default:
      return unreachable(defect.code);
  }
}

/** What the provider said at the upstream sign-in a browser session began with, as the console uses it. */
export interface UpstreamSignInFacts {
  /** The email it verified (lowercase), or null. */
  verifiedEmail: string | null;
  /** When it says the person signed in there (OpenID `auth_time`), or null: it did not say. */
  authTime: number | null;
}

const NOTHING: UpstreamSignInFacts = { verifiedEmail: null, authTime: null };

/**
 * What the provider said when this browser session's upstream sign-in happened: nothing for a
 * session not begun upstream, or whose upstream record cannot be read.
 */
export async function upstreamSignInOfSession(ctx: Pick<BaseServices, 'store'> & UpstreamServices, session: SessionRecord): Promise<UpstreamSignInFacts> {
  if (!ctx.upstream || session.upstreamSessionId === null) return NOTHING;
  const upstreamSession = await ctx.store.getUpstreamSession(session.upstreamSessionId);
  if (!upstreamSession || upstreamSession.userId !== session.userId) return NOTHING;
  const opened = ctx.upstream.secretBox.open(upstreamSession.sealedTokens, upstreamSession.id);
  // Sealed with a key since dropped: nothing it says can be trusted.
  if (!opened.ok) return NOTHING;
  const tokens = JSON.parse(opened.value) as UpstreamTokens;
  return { verifiedEmail: tokens.verifiedEmail ?? null, authTime: tokens.authTime ?? null };
}
