/**
 * For tools of a context server that runs beside this authorization server: the upstream session
 * of the grant behind a request, so a tool can call the provider's APIs for the person. The token
 * the tool is given is the provider's own, current (renewed when it expired); the token the
 * context server received is never passed on.
 */
import { OAuthError, temporarilyUnavailable } from '../../core/errors.js';
import { unreachable } from '../../core/result.js';
import { GRANT_ID_CLAIM } from '../../core/revocation-set.js';
import type { UpstreamGrantServices } from './session.js';
import { failureLog, type UpstreamDefect } from './defects.js';
import { upstreamUserinfo } from './flow.js';
import { upstreamTokensOfGrant } from './session.js';

export interface UpstreamAccess {
  /** The provider this person signed in with. */
  provider: string;
  /** Who they are there, as recorded at their sign-in. */
  identity: { subject: string; email: string | null; name: string | null };
  /** The provider's access token for this person, current. */
  accessToken(): Promise<string>;
  /** The provider's user-info for this person, fetched with that token. */
  userinfo(): Promise<Record<string, unknown>>;
}

/**
 * The upstream access behind one of our access tokens (its verified claims, whose `grant_id`
 * names the grant), or null when its grant did not come from an upstream sign-in. Throws invalid_grant when the upstream session is over (the
 * grant is then revoked) and temporarily_unavailable when the provider cannot be reached.
 */
export async function upstreamAccessFor(ctx: UpstreamGrantServices, claims: Record<string, unknown>): Promise<UpstreamAccess | null> {
  const { store } = ctx;
  const grantId = claims[GRANT_ID_CLAIM];
  const grant = typeof grantId === 'string' ? await store.getGrant(grantId) : undefined;
  if (!grant || grant.upstreamSessionId === null || !ctx.upstream) return null;
  if (grant.revokedAt !== null) throw new OAuthError('invalid_grant', 'the grant behind this token was revoked');
  const session = await store.getUpstreamSession(grant.upstreamSessionId);
  if (!session) return null;
  const providers = ctx.upstream.providers;
  const recorded = (await store.listUserIdentities({ userId: session.userId })).find((i) => i.provider === session.provider && i.subject === session.subject);
  // The session already read; and no user-info probe: the tool's own call to the provider tells.
  const accessToken = async (): Promise<string> => (await upstreamTokensOfGrant(ctx, grant, { probe: false, session })).accessToken;
  return {
    provider: session.provider,
    identity: { subject: session.subject, email: recorded?.email ?? null, name: recorded?.name ?? null },
    accessToken,
    userinfo: async () => {
      const token = await accessToken();
      const up = await providers.get(session.provider);
      const userinfo = up.ok ? await upstreamUserinfo(up.value, token) : up;
      if (userinfo.ok) return userinfo.value;
      const error = toolAccessError(userinfo.defect);
      ctx.log({
        event: 'upstream_failed',
        provider: session.provider,
        grant_id: grant.id,
        client_id: grant.clientId,
        error: error.code,
        ...failureLog(userinfo.defect.failure),
      });
      throw error;
    },
  };
}

/**
 * What a tool's call is answered when the provider did not give the person's user-info: a
 * provider that no longer accepts the session is the token's end (invalid_token, 401); one down
 * is temporarily_unavailable; one that answered what fails our checks is access_denied; one
 * misconfigured is server_error.
 */
function toolAccessError(defect: UpstreamDefect): OAuthError {
  switch (defect.code) {
    case 'refused':
      return new OAuthError('invalid_token', defect.description, 401);
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
